//! `wpp synth`: write a seeded synthetic control-flow trace (see `wpp_trace::synth`).

use anyhow::Context;
use std::path::PathBuf;
use wpp_trace::file::Format;
use wpp_trace::synth::{SynthProgram, TraceKind};

/// The trace vocabulary, as named on the command line.
#[derive(Clone, Copy, clap::ValueEnum)]
pub enum Kind {
    /// `F`, `B`, `E`: basic blocks (Zhang–Gupta).
    Blocks,
    /// `F`, `P`, `E`: acyclic paths (Larus).
    Paths,
}

/// Arguments of `wpp synth`.
#[derive(clap::Args)]
pub struct Args {
    /// Seed of the random program and its run.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Number of events to write.
    #[arg(long, default_value_t = 1_000_000)]
    events: u64,
    /// Block trace or acyclic-path trace.
    #[arg(long, value_enum, default_value = "blocks")]
    kind: Kind,
    /// Output trace file.
    #[arg(short, long)]
    output: PathBuf,
    /// Write the text format instead of the binary one.
    #[arg(long)]
    text: bool,
    /// Interleave this many threads of the program (`T` events mark the switches).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1024))]
    threads: u32,
}

/// Runs `wpp synth`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let program = SynthProgram::generate(args.seed);
    let format = if args.text {
        Format::Text
    } else {
        Format::Binary
    };
    let kind = match args.kind {
        Kind::Blocks => TraceKind::Blocks,
        Kind::Paths => TraceKind::Paths,
    };
    let out = &args.output;
    let mut writer = crate::output::create_trace(out, format, program.program())?;
    let bar = crate::util::progress(args.events, "synthesizing");
    let mut n = 0u64;
    program
        .run_threads(kind, args.events, args.threads, |e| {
            n += 1;
            if n.is_multiple_of(1 << 20) {
                bar.set_position(n);
            }
            writer.push(e)
        })
        .with_context(|| format!("cannot write {}", out.display()))?;
    crate::output::finish_trace(writer, out)?;
    bar.finish_and_clear();
    Ok(())
}
