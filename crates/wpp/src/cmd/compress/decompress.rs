//! `wpp decompress`: a `.wpp` grammar back into its trace, expanding each thread's start rule
//! as a stream ([`Expander`]) straight into the trace writer, never materializing the trace.
//!
//! Threads are written one after another in ascending thread id, each preceded by `T t` —
//! except thread 0 when it comes first, since events before any `T` belong to thread 0. The
//! original interleaving of threads is not stored in a `.wpp` (a trace's meaning is its
//! per-thread projections, see `wpp_trace::file::threads`), so the output equals the original
//! trace per thread, which is what `wpp verify` checks.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use wpp_grammar::expand::{Expander, Flattened};
use wpp_grammar::file::WppFile;
use wpp_trace::file::{FileWriter, Format};
use wpp_trace::{Event, TraceError};

use crate::input::{needs_switch, starts_by_thread};

/// Arguments of `wpp decompress`.
#[derive(clap::Args)]
pub struct Args {
    /// Input `.wpp` file.
    input: PathBuf,
    /// Output trace (`-`: standard output).
    #[arg(short, long)]
    output: PathBuf,
    /// Write the text format instead of the binary one.
    #[arg(long)]
    text: bool,
}

/// Runs `wpp decompress`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let (input, output) = (&args.input, &args.output);
    let wpp = crate::input::read_wpp(input, "decompress")?;
    let format = if args.text {
        Format::Text
    } else {
        Format::Binary
    };
    let mut writer = crate::output::create_trace(output, format, &wpp.program)?;
    write_threads(&wpp, &mut writer)
        .with_context(|| format!("cannot write {}", output.display()))?;
    crate::output::finish_trace(writer, output)
}

/// Writes every thread's expansion to `writer`.
fn write_threads(wpp: &WppFile, writer: &mut FileWriter<impl Write>) -> Result<(), TraceError> {
    let g = &wpp.grammar;
    let total = g
        .starts()
        .iter()
        .fold(0u64, |n, s| n.saturating_add(g.expanded_len(s.rule)));
    let bar = crate::util::progress(total, "expanding");
    // Reading validated every terminal against the alphabet, so indexing cannot fail.
    let events = wpp.alphabet.events();
    let mut done = 0u64;
    let flat = Flattened::new(g);
    for (i, s) in starts_by_thread(wpp).iter().enumerate() {
        if needs_switch(i, s) {
            writer.push(Event::Thread(s.thread))?;
        }
        for t in Expander::flattened(&flat, s.rule) {
            writer.push(events[t.index()])?;
            done += 1;
            if done & 0xf_ffff == 0 {
                bar.set_position(done);
            }
        }
    }
    bar.finish_and_clear();
    Ok(())
}
