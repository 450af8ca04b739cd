//! `wpp subpath`: the frequency of a sequence of terminals, counted on the grammar (Larus §3.3)
//! without expanding it.

use std::path::PathBuf;

use std::io::Write;

use wpp_query::dag::Subpaths;
use wpp_trace::Terminal;

/// Arguments of `wpp subpath`.
#[derive(clap::Args)]
pub struct Args {
    /// The `.wpp` file.
    pub file: PathBuf,
    /// The subpath as terminal numbers, e.g. `3,4,7`: the `terminals` of `wpp hot --json`
    /// (`wpp decompress --text` shows the events; the alphabet numbers them in order of first
    /// occurrence). A block event is a terminal whatever function runs it, so this counts the
    /// sequence in every function, where `wpp hot` qualifies each event by its function.
    #[arg(long, value_delimiter = ',', required = true)]
    pub terminals: Vec<u32>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// Runs `wpp subpath`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let wpp = crate::input::read_wpp(&args.file, "subpath")?;
    let q: Vec<Terminal> = args.terminals.iter().map(|&t| Terminal(t)).collect();
    if let Some(t) = q.iter().find(|t| !wpp.grammar.has_terminal(**t)) {
        anyhow::bail!(
            "terminal {} is not in the alphabet of {}",
            t.0,
            args.file.display()
        );
    }
    let counts = Subpaths::new(&wpp.grammar).count(&q)?;
    if args.json {
        return crate::util::print_json(&counts);
    }
    let mut out = std::io::stdout().lock();
    let total: u64 = counts.iter().map(|c| c.count).sum();
    let events: Vec<String> = q
        .iter()
        .filter_map(|&t| wpp.alphabet.event(t))
        .map(|e| wpp_query::report::event_text(e, &wpp.program))
        .collect();
    writeln!(out, "subpath: {}", events.join(", "))?;
    writeln!(out, "frequency: {total}")?;
    for c in counts.iter().filter(|c| c.count > 0) {
        writeln!(
            out,
            "  thread {}: {} (first at {}, last at {})",
            c.thread,
            c.count,
            c.first.unwrap_or(0),
            c.last.unwrap_or(0)
        )?;
    }
    Ok(())
}
