//! The `wpp` command: a thin layer over the library crates. `main` parses the command line,
//! dispatches to the command's module under `cmd/` (one folder per group of `wpp --help`), and
//! turns errors into a message and a non-zero exit code. Every file is opened through `input`.

mod cmd;
mod heap;
mod input;
mod output;
mod util;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use std::process::ExitCode;

/// Record, compress, query and show whole program paths.
#[derive(Parser)]
#[command(name = "wpp", version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// wpp's own options of `wpp cc`/`wpp cargo` (`wpp help cc`): clang's `--help` is what
/// `wpp cc --help` shows.
const CC_OPTIONS: &str = "\
wpp's options, anywhere on the line, or as WPP_* variables (the option wins):
  --wpp-mode=MODE         trace-blocks (default), trace-paths, trace-addr, bl, ppp,
                          ewpp-filter, ewpp (WPP_MODE)
  --wpp-interesting=FILE  ppp: the bl profile whose paths are interesting (WPP_INTERESTING)
  --wpp-exercised=FILE    ewpp: the report of an ewpp-filter run (WPP_EXERCISED)
  --wpp-counters=HOW      bl, ppp: auto (default), atomic or plain (WPP_COUNTERS)
  --wpp-keep=DIR          keep the intermediate files there (WPP_KEEP)
  --wpp-verbose           print each step (WPP_VERBOSE)
  --wpp-no-elide          trace-blocks: a probe per block (WPP_ELIDE=0)
  --wpp-cxx               link as C++ (what wpp c++ does)
The program records to PROGRAM.PID.wpp; at run time WPP_OUT names the file (%p: the process
id), WPP_RAW=1 writes the raw trace instead, WPP_QUIET=1 silences the runtime's lines.";

#[derive(Subcommand)]
enum Command {
    /// Compile and link C/C++ through clang-22 with wpp instrumentation: `wpp cc CLANG
    /// ARGS…` (`wpp c++` for C++; wpp's options as `--wpp-mode=M` or `WPP_MODE`; a symlink
    /// named `wpp-cc`/`wpp-c++` works as `CC`/`CXX`).
    #[command(disable_help_flag = true, after_long_help = CC_OPTIONS)]
    Cc {
        /// clang's arguments (handled before this parser; listed here for `wpp help`).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Build Rust programs with cargo, instrumented: `wpp cargo build|run|test ARGS…` (wpp's
    /// options as for `wpp cc`; binaries in `target/HOST-TRIPLE/…`).
    #[command(disable_help_flag = true, after_long_help = CC_OPTIONS)]
    Cargo {
        /// cargo's arguments.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Instrument an LLVM bitcode file.
    Instrument(cmd::record::instrument::Args),
    /// Generate a seeded synthetic control-flow trace.
    Synth(cmd::record::synth::Args),
    /// Compress a trace into a `.wpp` grammar.
    Compress(cmd::compress::grammar::Args),
    /// Expand a `.wpp` grammar back into its trace.
    Decompress(cmd::compress::decompress::Args),
    /// Check that a `.wpp` grammar expands to exactly a trace.
    Verify(cmd::compress::verify::Args),
    /// Convert, print, decode or chunk trace files.
    #[command(subcommand)]
    Trace(cmd::compress::trace::Command),
    /// Print a `.wpp` grammar's statistics (Larus Table 1).
    Stats(cmd::query::stats::Args),
    /// The recording's functions: calls, events, source line, blocks, paths.
    Functions(cmd::query::functions::Args),
    /// One function's CFG from a recording, profile or CFG JSON (`--dot` for Graphviz).
    Cfg(cmd::query::cfg::Args),
    /// Hot paths of a `.wpp` grammar: every minimal hot subpath of the run (Larus §4's
    /// question, answered exhaustively), counted exactly through the grammar's rules. The paths
    /// and their counts depend only on the run, not on the compressor or segments; the
    /// `thread T @P` shown is one occurrence's, which may differ between them.
    Hot(cmd::query::hot::Args),
    /// Frequency of a subpath, counted on the grammar.
    Subpath(cmd::query::subpath::Args),
    /// Match an intraprocedural path in a compressed trace (Zhang–Gupta schemes 1–4).
    Match(cmd::query::matching::Args),
    /// What changed most between two recordings: functions, blocks and paths by count.
    Diff(cmd::query::diff::Args),
    /// Ball–Larus path numbering on CFGs.
    #[command(subcommand)]
    Paths(cmd::query::paths::Command),
    /// Preferential path profiling plans.
    #[command(subcommand)]
    Ppp(cmd::query::ppp::Command),
    /// Show, merge and compare Ball–Larus and preferential path profiles.
    #[command(subcommand)]
    Profile(cmd::profile::Command),
    /// Memory dependences of a `--mode trace-addr` or `--mode ewpp` recording (Tallam–Gupta §5).
    #[command(subcommand)]
    Deps(cmd::query::deps::Command),
    /// Source lines with their execution counts (text or lcov), from any recording or profile.
    ///
    /// A line counts the runs of the blocks that run its code: per function, the largest
    /// count of the blocks starting on it or containing it (a condition after a call on the
    /// line before, at -O0, is inside the call's block and counts that block's runs), summed
    /// over the functions it was inlined into. A line after a call in the same block counts
    /// the call's returns in path recordings (`trace-paths`) and bl/ppp profiles, so frames a
    /// `longjmp` abandoned inside the call do not count it; block recordings cannot tell those
    /// frames apart and count the block's runs. `llvm-cov` counts regions instead.
    Annotate(cmd::show::annotate::Args),
    /// The whole run as folded stacks, SVG flame graph, pprof, speedscope, callgrind or a
    /// Chrome trace window.
    Export(cmd::show::export::Args),
    /// A self-contained HTML report of a recording or profile.
    Report(cmd::show::report::Args),
    /// Many runs in a Parquet store: `wpp db add FILES… --db DIR`, `wpp db compact --db DIR`
    /// (runs the `wpp-db` binary).
    Db(cmd::db::Args),
    /// SQL on a store of runs: `wpp sql --db DIR "SELECT …"` (runs `wpp-db sql`).
    Sql(cmd::db::Args),
}

fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Cc { args } => cmd::record::cc::run(&args, false),
        Command::Cargo { args } => cmd::record::cargo::run(&args),
        Command::Instrument(a) => cmd::record::instrument::run(a),
        Command::Synth(a) => cmd::record::synth::run(a),
        Command::Compress(a) => cmd::compress::grammar::run(a),
        Command::Decompress(a) => cmd::compress::decompress::run(a),
        Command::Verify(a) => cmd::compress::verify::run(a),
        Command::Trace(c) => cmd::compress::trace::run(c),
        Command::Stats(a) => cmd::query::stats::run(a),
        Command::Functions(a) => cmd::query::functions::run(a),
        Command::Cfg(a) => cmd::query::cfg::run(a),
        Command::Hot(a) => cmd::query::hot::run(a),
        Command::Subpath(a) => cmd::query::subpath::run(a),
        Command::Match(a) => cmd::query::matching::run(a),
        Command::Diff(a) => cmd::query::diff::run(a),
        Command::Paths(c) => cmd::query::paths::run(c),
        Command::Ppp(c) => cmd::query::ppp::run(c),
        Command::Profile(c) => cmd::profile::run(c),
        Command::Deps(c) => cmd::query::deps::run(c),
        Command::Annotate(a) => cmd::show::annotate::run(a),
        Command::Export(a) => cmd::show::export::run(a),
        Command::Report(a) => cmd::show::report::run(a),
        Command::Db(a) => cmd::db::run(None, a),
        Command::Sql(a) => cmd::db::run(Some("sql"), a),
    }
}

/// The groups of `wpp --help`, in order, with their commands (clap has no headings for
/// subcommands, so the top-level help is laid out here; a command missing from every group is
/// listed under "other" by [`help_template`], so none is ever hidden).
const GROUPS: [(&str, &[&str]); 5] = [
    ("Record", &["cc", "cargo", "instrument", "synth"]),
    ("Compress", &["compress", "decompress", "verify", "trace"]),
    (
        "Query",
        &[
            "stats",
            "functions",
            "cfg",
            "hot",
            "subpath",
            "match",
            "diff",
            "paths",
            "ppp",
            "deps",
        ],
    ),
    ("Profiles", &["profile", "db", "sql"]),
    ("Show", &["annotate", "export", "report"]),
];

/// The top-level help with the commands under their group headings.
fn help_template(cli: &clap::Command) -> String {
    let subs: Vec<&clap::Command> = cli.get_subcommands().collect();
    let width = subs.iter().map(|c| c.get_name().len()).max().unwrap_or(0);
    let line = |c: &clap::Command| {
        let about = c.get_about().map(|a| a.to_string()).unwrap_or_default();
        format!("  {:width$}  {}\n", c.get_name(), about.replace('{', "{{"))
    };
    let mut out = String::from("{about-with-newline}\n{usage-heading} {usage}\n");
    let grouped: Vec<&str> = GROUPS
        .iter()
        .flat_map(|(_, names)| names.iter().copied())
        .collect();
    let other: Vec<&str> = subs
        .iter()
        .map(|c| c.get_name())
        .filter(|n| !grouped.contains(n))
        .collect();
    for (heading, names) in GROUPS.iter().copied().chain([("Other", &other[..])]) {
        let cmds: Vec<_> = subs
            .iter()
            .filter(|c| names.contains(&c.get_name()))
            .collect();
        if cmds.is_empty() {
            continue;
        }
        out.push_str(&format!("\n{heading}:\n"));
        cmds.iter().for_each(|c| out.push_str(&line(c)));
    }
    out.push_str("\nOptions:\n{options}{after-help}");
    out
}

/// Parses the command line, with the grouped top-level help.
fn parse() -> Cli {
    let cli = Cli::command();
    let template = help_template(&cli);
    let matches = cli.help_template(template).get_matches();
    Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit())
}

/// Whether the error comes from writing to a pipe whose reader went away, which for a command
/// whose output is cut short by `head` is not a failure.
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        let kind = match (
            c.downcast_ref::<std::io::Error>(),
            c.downcast_ref::<serde_json::Error>(),
        ) {
            (Some(io), _) => Some(io.kind()),
            (None, Some(json)) => json.io_error_kind(),
            (None, None) => None,
        };
        kind == Some(std::io::ErrorKind::BrokenPipe)
    })
}

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    // The compiler driver takes clang's command line as it is, so it bypasses clap.
    let result = match cmd::record::cc::driver_call(&argv) {
        Some((cxx, first)) => cmd::record::cc::run(&argv[first..], cxx),
        None => run(parse()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("wpp: error: {e:#}");
            match e.downcast_ref::<util::NotInFile>() {
                Some(_) => ExitCode::from(2),
                None => ExitCode::FAILURE,
            }
        }
    }
}
