//! The `wpp` command: a thin layer over the library crates. `main` parses the command line,
//! dispatches to one module per command family under `cmd/`, and turns errors into a message
//! and a non-zero exit code.

mod cmd;
mod heap;
mod util;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// Record, compress, query and show whole program paths.
#[derive(Parser)]
#[command(name = "wpp", version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Generate a seeded synthetic control-flow trace.
    Synth(cmd::synth::Args),
    /// Convert, print or chunk trace files.
    #[command(subcommand)]
    Trace(cmd::trace::Command),
    /// Compress a trace into a `.wpp` grammar.
    Compress(cmd::compress::Args),
    /// Expand a `.wpp` grammar back into its trace.
    Decompress(cmd::decompress::Args),
    /// Check that a `.wpp` grammar expands to exactly a trace.
    Verify(cmd::verify::Args),
    /// Print a `.wpp` grammar's statistics (Larus Table 1).
    Stats(cmd::stats::Args),
    /// Ball–Larus path numbering on CFGs.
    #[command(subcommand)]
    Paths(cmd::paths::Command),
    /// Preferential path profiling plans.
    #[command(subcommand)]
    Ppp(cmd::ppp::Command),
    /// Minimal hot subpaths of a `.wpp` grammar (Larus §4).
    Hot(cmd::hot::Args),
    /// Frequency of a subpath, counted on the grammar.
    Subpath(cmd::subpath::Args),
    /// Match an intraprocedural path in a compressed trace (Zhang–Gupta schemes 1–4).
    Match(cmd::matching::Args),
    /// Compile and link C/C++ through clang-22 with wpp instrumentation.
    Cc(cmd::cc::Args),
    /// Instrument an LLVM bitcode file.
    Instrument(cmd::instrument::Args),
    /// Show Ball–Larus and preferential path profiles.
    #[command(subcommand)]
    Profile(cmd::profile::Command),
    /// Source lines with their execution counts (text or lcov), from any recording or profile.
    Annotate(cmd::show::annotate::Args),
    /// The whole run as folded stacks, SVG flame graph, pprof, speedscope, callgrind or a
    /// Chrome trace window.
    Export(cmd::show::export::Args),
    /// A self-contained HTML report of a recording or profile.
    Report(cmd::show::report::Args),
}

fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Synth(a) => cmd::synth::run(a),
        Command::Trace(c) => cmd::trace::run(c),
        Command::Compress(a) => cmd::compress::run(a),
        Command::Decompress(a) => cmd::decompress::run(a),
        Command::Verify(a) => cmd::verify::run(a),
        Command::Stats(a) => cmd::stats::run(a),
        Command::Paths(c) => cmd::paths::run(c),
        Command::Ppp(c) => cmd::ppp::run(c),
        Command::Hot(a) => cmd::hot::run(a),
        Command::Subpath(a) => cmd::subpath::run(a),
        Command::Match(a) => cmd::matching::run(a),
        Command::Cc(a) => cmd::cc::run(a),
        Command::Instrument(a) => cmd::instrument::run(a),
        Command::Profile(c) => cmd::profile::run(c),
        Command::Annotate(a) => cmd::show::annotate::run(a),
        Command::Export(a) => cmd::show::export::run(a),
        Command::Report(a) => cmd::show::report::run(a),
    }
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
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("wpp: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
