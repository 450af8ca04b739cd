//! `wpp export`: the whole run as folded stacks, an SVG flame graph, pprof, speedscope,
//! callgrind, or a window of it as a Chrome/Perfetto trace.

use std::path::PathBuf;

use anyhow::Context;

/// Export formats.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Folded stacks `frame;frame count`, frames `function:line` (`function:file:line` for a
    /// line of code inlined from another file, such as a header; flamegraph.pl, inferno).
    Folded,
    /// An SVG flame graph of the whole run (inferno).
    Svg,
    /// pprof's gzip'd `profile.proto` (`go tool pprof`).
    Pprof,
    /// speedscope's JSON file format.
    Speedscope,
    /// callgrind's profile format (KCachegrind, `callgrind_annotate`).
    Callgrind,
    /// Chrome/Perfetto trace-event JSON of events `--from`..`--to`.
    Chrome,
}

/// Arguments of `wpp export`.
#[derive(clap::Args)]
pub struct Args {
    /// A recording: `.wpp` or trace.
    pub file: PathBuf,
    /// Output format. The cost of every format is one block or path event (`wpp_show` docs).
    #[arg(long, value_enum)]
    pub format: Format,
    /// Write here instead of standard output.
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Chrome: first event of the window: its index in replay order (a trace's file order, a
    /// `.wpp`'s threads one after another; `Thread` events are not counted), or with
    /// `--thread` its position in that thread. Either way, the position `wpp hot`, `wpp match`
    /// and `wpp subpath` print for a thread (`thread T @P`) is `--thread T --from P`, and in a
    /// one-thread recording plain `--from P` (except `wpp match` on a path recording, which
    /// counts the blocks its paths decode to).
    #[arg(long, default_value_t = 0)]
    pub from: u64,
    /// Chrome: end of the window (exclusive); default `--from` + 100000.
    #[arg(long)]
    pub to: Option<u64>,
    /// Chrome: only this thread's events, `--from` and `--to` counted in it.
    #[arg(long)]
    pub thread: Option<u32>,
    /// Chrome: the largest window accepted.
    #[arg(long, default_value_t = wpp_show::chrome::MAX_WINDOW)]
    pub max_events: u64,
}

/// Runs `wpp export`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let mut rec = super::open_recording(&args.file, "export")?;
    let mut out = crate::output::Output::create(args.output.as_deref())?;
    let name = args.file.display().to_string();
    if args.format == Format::Chrome {
        let to = args.to.unwrap_or(args.from.saturating_add(100_000));
        let window = (args.from, to, args.thread.map(wpp_trace::ThreadId));
        wpp_show::chrome::write_chrome(&mut rec, window, args.max_events, &mut out)
            .with_context(|| format!("cannot export {name}"))?;
        return Ok(out.finish()?);
    }
    let (db, map, run) = rec.walk().with_context(|| format!("cannot walk {name}"))?;
    match args.format {
        Format::Folded => wpp_show::stacks::write_folded(&db, &map, &run, &mut out)?,
        Format::Svg => {
            let title = format!("{name}: every block/path event by call stack");
            wpp_show::stacks::write_svg(&db, &map, &run, &title, &mut out)?
        }
        Format::Pprof => wpp_show::stacks::write_pprof(&db, &map, &run, &mut out)?,
        Format::Speedscope => wpp_show::stacks::write_speedscope(&db, &map, &run, &name, &mut out)?,
        Format::Callgrind => {
            wpp_show::callgrind::write_callgrind(&db, &map, &run, &name, &mut out)?
        }
        Format::Chrome => unreachable!("handled above"),
    }
    Ok(out.finish()?)
}
