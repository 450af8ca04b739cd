//! `wpp instrument`: bitcode in, instrumented bitcode out (for build systems that make bitcode
//! themselves; `wpp cc` does this step internally). Needs the `llvm` cargo feature.

use std::path::PathBuf;

/// What an instrumented program records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// `F`/`B`/`E` block events (Zhang–Gupta §3).
    TraceBlocks,
    /// `Enter`/`Path`/`Leave` acyclic-path events (Larus §2).
    TracePaths,
    /// A Ball–Larus path profile.
    Bl,
    /// A preferential path profile (PPP §5).
    Ppp,
    /// Block events plus an address trace of every load and store (`PROGRAM.PID.at`), for
    /// `wpp deps` (Tallam–Gupta's CF + AT). Every thread is recorded; a load whose last
    /// writer ran on another thread is reported as a cross-thread dependence.
    TraceAddr,
    /// The extended control-flow trace (Tallam–Gupta §3): block events with every memory
    /// dependence's check as control flow, for `wpp deps` on the trace or `.wpp` itself.
    /// Give the filtering run's report (`wpp deps filter -o`) with `--exercised`.
    /// Single-threaded programs only.
    Ewpp,
    /// The filtering run of `ewpp` (Tallam–Gupta §3.1): the program writes
    /// `PROGRAM.PID.depf`, the exercised (store, load) pairs and their classes, for
    /// `--mode ewpp --exercised`. Single-threaded programs only.
    EwppFilter,
}

/// How `bl`/`ppp` counters are incremented.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Counters {
    /// Atomic if the program refers to a thread-starting function (`pthread_create`,
    /// `thrd_create`, `std::thread`, OpenMP) or is a shared library (whose host may run
    /// threads), plain otherwise.
    Auto,
    /// Always atomic: exact counts even for threads started out of the module's sight.
    Atomic,
    /// Always a plain load/add/store: cheapest, loses counts if threads race.
    Plain,
}

#[cfg(feature = "llvm")]
impl Counters {
    /// `Options::atomic_counters`.
    pub fn atomic(self) -> Option<bool> {
        match self {
            Counters::Auto => None,
            Counters::Atomic => Some(true),
            Counters::Plain => Some(false),
        }
    }
}

/// Arguments of `wpp instrument`.
#[derive(clap::Args)]
pub struct Args {
    /// Input LLVM bitcode (the whole program, linked with llvm-link, so function ids are
    /// global).
    pub input: PathBuf,
    /// Output bitcode.
    #[arg(short, long)]
    pub output: PathBuf,
    /// What to record.
    #[arg(long, value_enum, default_value = "trace-blocks")]
    pub mode: Mode,
    /// `--mode ppp`: a `--mode bl` profile whose executed paths are the interesting set.
    #[arg(long)]
    pub interesting: Option<PathBuf>,
    /// `--mode ewpp`: the filtering run's report (`wpp deps filter -o` on a `trace-addr`
    /// recording of this program).
    #[arg(long)]
    pub exercised: Option<PathBuf>,
    /// `--mode bl|ppp`: how path counters are incremented.
    #[arg(long, value_enum, default_value = "auto")]
    pub counters: Counters,
    /// Print the instrumentation report as JSON.
    #[arg(long)]
    pub json: bool,
    /// `trace-blocks`: a probe per block, each block's event recorded as it runs, instead of
    /// one event per path that every reader decodes to blocks.
    #[arg(long)]
    pub no_elide: bool,
}

/// The message for builds without LLVM.
#[cfg_attr(feature = "llvm", allow(dead_code))]
pub const NO_LLVM: &str = "this wpp was built without LLVM support; rebuild with \
     `LLVM_SYS_221_PREFIX=/usr/lib/llvm-22 cargo build --release -p wpp --features llvm` \
     (needs the Debian packages clang-22 llvm-22-dev lld-22 libpolly-22-dev libzstd-dev zlib1g-dev)";

#[cfg(feature = "llvm")]
impl Mode {
    /// The instrumenter's mode.
    pub fn to_rt(self) -> wpp_instrument::InstrumentMode {
        use wpp_instrument::InstrumentMode as M;
        match self {
            Mode::TraceBlocks => M::TraceBlocks,
            Mode::TracePaths => M::TracePaths,
            Mode::Bl => M::Bl,
            Mode::Ppp => M::Ppp,
            Mode::TraceAddr => M::TraceAddr,
            Mode::Ewpp => M::Ewpp,
            Mode::EwppFilter => M::EwppFilter,
        }
    }
}

/// Checks that the file `option` names is of `kind` (`made`: what that is and how one is made);
/// otherwise an error naming what the file is.
#[cfg(feature = "llvm")]
fn expect_kind(
    path: &std::path::Path,
    kind: crate::input::Kind,
    option: &str,
    made: &str,
) -> anyhow::Result<()> {
    let found = crate::input::sniff(path)?;
    if found != kind {
        anyhow::bail!(
            "{} is {}, not {}: {option} takes {made}",
            path.display(),
            found.with_article(),
            kind.with_article()
        );
    }
    Ok(())
}

/// Reads the interesting set of `--mode ppp` from a `--mode bl` profile.
#[cfg(feature = "llvm")]
pub fn read_interesting(
    path: &std::path::Path,
    opts: &mut wpp_instrument::Options,
) -> anyhow::Result<()> {
    use anyhow::Context as _;
    let made = "the path profile of a `--mode bl` run (PROGRAM.PID.blprof, or several merged \
                by `wpp profile merge`)";
    expect_kind(path, crate::input::Kind::Profile, "--interesting", made)?;
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let file = wpp_abi::profile::ProfileFile::from_bytes(&bytes)
        .with_context(|| format!("cannot read {}", path.display()))?;
    opts.interesting = wpp_instrument::interesting_from_profile(&file);
    opts.interesting_cfgs = wpp_instrument::interesting_cfgs(&file);
    Ok(())
}

/// Reads the report of `--mode ewpp --exercised`.
#[cfg(feature = "llvm")]
pub fn read_exercised(path: &std::path::Path) -> anyhow::Result<wpp_deps::filter::FilterReport> {
    use anyhow::Context as _;
    let made = "the filtering run's report (PROGRAM.PID.depf of a `--mode ewpp-filter` run, or \
                `wpp deps filter PROGRAM.PID.at -o FILE`)";
    expect_kind(
        path,
        crate::input::Kind::DependenceReport,
        "--exercised",
        made,
    )?;
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    Ok(wpp_deps::filter::FilterReport::from_bytes(
        &bytes,
        &path.display().to_string(),
    )?)
}

/// Runs `wpp instrument`.
#[cfg(feature = "llvm")]
pub fn run(args: Args) -> anyhow::Result<()> {
    use anyhow::Context as _;
    let mut opts = wpp_instrument::Options::new(args.mode.to_rt());
    opts.atomic_counters = args.counters.atomic();
    opts.elide = !args.no_elide;
    if let Some(p) = &args.interesting {
        read_interesting(p, &mut opts)?;
    } else if args.mode == Mode::Ppp {
        anyhow::bail!("--mode ppp needs --interesting PROFILE (a `--mode bl` profile)");
    }
    match (&args.exercised, args.mode) {
        (Some(p), Mode::Ewpp) => opts.exercised = Some(read_exercised(p)?),
        (Some(_), _) => anyhow::bail!("--exercised is only used by --mode ewpp"),
        (None, _) => {}
    }
    let report = wpp_instrument::instrument_file(&args.input, &args.output, &opts)
        .with_context(|| format!("instrumenting {}", args.input.display()))?;
    if let Some(why) = &report.foreign_report {
        eprintln!("wpp: warning: {why}; no pair counts as exercised");
    }
    if let Some(why) = wpp_instrument::renumbered_warning(&report) {
        eprintln!("wpp instrument: warning: {why}");
    }
    if let Some(why) = &report.foreign_profile {
        eprintln!("wpp: warning: {why}");
    }
    if args.json {
        crate::util::print_json(&report)?;
    } else {
        eprintln!(
            "wpp: instrumented {} functions, {} blocks, {} probes{}; program database {} bytes",
            report.functions,
            report.blocks,
            report.probes,
            if report.atomic_counters {
                " (atomic counters)"
            } else {
                ""
            },
            report.program_db_bytes
        );
    }
    Ok(())
}

/// Runs `wpp instrument` (without LLVM support: explains how to get it).
#[cfg(not(feature = "llvm"))]
pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("{NO_LLVM}")
}
