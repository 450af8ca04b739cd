//! `wpp cc`: compile and link C/C++ through clang-22 with wpp instrumentation (see
//! `wpp_instrument::driver` for what each kind of invocation does). Needs the `llvm` feature.

use super::instrument::{Counters, Mode};

/// Arguments of `wpp cc`.
#[derive(clap::Args)]
pub struct Args {
    /// What the program records.
    #[arg(long, value_enum, default_value = "trace-blocks")]
    pub mode: Mode,
    /// Interesting paths for `--mode ppp` (a BL profile; default: every path in it).
    #[arg(long)]
    pub interesting: Option<std::path::PathBuf>,
    /// `--mode bl|ppp`: how path counters are incremented.
    #[arg(long, value_enum, default_value = "auto")]
    pub counters: Counters,
    /// Link with clang++ (otherwise decided from sources and the module).
    #[arg(long)]
    pub cxx: bool,
    /// Keep intermediate files (linked, instrumented bitcode) in this directory.
    #[arg(long)]
    pub keep: Option<std::path::PathBuf>,
    /// Print each tool invocation.
    #[arg(long)]
    pub verbose: bool,
    /// The clang command line (after `--`).
    #[arg(last = true, required = true)]
    pub clang_args: Vec<String>,
}

/// Runs `wpp cc`.
#[cfg(feature = "llvm")]
pub fn run(args: Args) -> anyhow::Result<()> {
    if args.clang_args.is_empty() {
        anyhow::bail!("no clang arguments: use `wpp cc --mode MODE -- CLANG ARGS…`");
    }
    let mut opts = wpp_instrument::Options::new(args.mode.to_rt());
    opts.atomic_counters = args.counters.atomic();
    match (&args.interesting, args.mode) {
        (Some(p), Mode::Ppp) => opts.interesting = super::instrument::read_interesting(p)?,
        (None, Mode::Ppp) => anyhow::bail!(
            "--mode ppp needs --interesting PROFILE (a `--mode bl` profile: every path that ran \
             in it is interesting, as in PPP §5)"
        ),
        (Some(_), _) => anyhow::bail!("--interesting is only used by --mode ppp"),
        (None, _) => {}
    }
    let mut d = wpp_instrument::driver::Driver::from_env(opts);
    d.cxx = args.cxx;
    d.keep = args.keep;
    d.verbose |= args.verbose;
    d.run(&args.clang_args)?;
    Ok(())
}

/// Runs `wpp cc` (without LLVM support: explains how to get it).
#[cfg(not(feature = "llvm"))]
pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("{}", super::instrument::NO_LLVM)
}
