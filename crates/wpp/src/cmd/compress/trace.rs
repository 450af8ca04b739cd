//! `wpp trace …`: convert, print and chunk trace files.

use crate::input::{open_trace, warn_truncated};
use anyhow::Context;
use std::collections::VecDeque;
use std::io::Write;
use std::path::{Path, PathBuf};
use wpp_trace::file::{Format, TextWriter, TraceError, TraceReader};
use wpp_trace::Event;

/// Subcommands of `wpp trace`.
#[derive(clap::Subcommand)]
pub enum Command {
    /// Write the scheme 3 chunked container (Zhang–Gupta §4.3).
    Chunk(super::chunk::Args),
    /// Convert a trace between the binary and text formats.
    Convert(ConvertArgs),
    /// Print a trace in the text format on standard output.
    Cat(CatArgs),
    /// Decode a path trace into the equivalent block trace through the CFGs it carries.
    Blocks(BlocksArgs),
}

/// A trace format, as named on the command line.
#[derive(Clone, Copy, clap::ValueEnum)]
pub enum To {
    /// One event per line.
    Text,
    /// The chunked binary format.
    Binary,
}

/// Arguments of `wpp trace convert`.
#[derive(clap::Args)]
pub struct ConvertArgs {
    /// Input trace (either format; detected).
    input: PathBuf,
    /// Output trace.
    #[arg(short, long)]
    output: PathBuf,
    /// Output format.
    #[arg(long, value_enum)]
    to: To,
}

/// Arguments of `wpp trace cat`.
#[derive(clap::Args)]
pub struct CatArgs {
    /// Input trace (either format; detected).
    input: PathBuf,
}

/// Arguments of `wpp trace blocks`.
#[derive(clap::Args)]
pub struct BlocksArgs {
    /// A `trace-paths` recording (binary; text traces carry no CFGs).
    input: PathBuf,
    /// Output: the block trace, with the same program database.
    #[arg(short, long, required_unless_present = "compare")]
    output: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value = "binary")]
    to: To,
    /// Compare the decoded trace with this block trace (e.g. the `trace-blocks` recording of
    /// the same deterministic run), per thread; fail at the first difference.
    #[arg(long)]
    compare: Option<PathBuf>,
}

/// Runs a `wpp trace` subcommand.
pub fn run(command: Command) -> anyhow::Result<()> {
    match command {
        Command::Chunk(a) => super::chunk::run(a),
        Command::Convert(a) => convert(a),
        Command::Cat(a) => cat(a),
        Command::Blocks(a) => blocks(a),
    }
}

/// A failure while copying events: reading the input or writing the output.
enum CopyError {
    Read(TraceError),
    Write(TraceError),
}

/// Streams every event of `reader` to `push`.
fn copy(
    reader: &mut TraceReader,
    mut push: impl FnMut(wpp_trace::Event) -> Result<(), TraceError>,
) -> Result<(), CopyError> {
    while let Some(run) = reader.next_batch().map_err(CopyError::Read)? {
        run.iter()
            .try_for_each(|&e| push(e))
            .map_err(CopyError::Write)?;
    }
    Ok(())
}

/// Names the file a copy failed on.
fn copy_context(r: Result<(), CopyError>, input: &Path, output: &str) -> anyhow::Result<()> {
    match r {
        Ok(()) => Ok(()),
        Err(CopyError::Read(e)) => {
            Err(e).with_context(|| format!("cannot read {}", input.display()))
        }
        Err(CopyError::Write(e)) => Err(e).with_context(|| format!("cannot write {output}")),
    }
}

fn format(to: To) -> Format {
    match to {
        To::Text => Format::Text,
        To::Binary => Format::Binary,
    }
}

/// `wpp trace blocks`: every `Path` becomes its blocks (`wpp_paths::trace`), so on a
/// deterministic run the output equals the `trace-blocks` recording.
fn blocks(args: BlocksArgs) -> anyhow::Result<()> {
    let input = &args.input;
    let mut reader = open_trace(input, "trace blocks")?;
    let db = reader.program().clone();
    let mut stream = wpp_paths::BlockStream::new(&db)
        .with_context(|| format!("cannot decode {}", input.display()))?;
    let mut writer = match &args.output {
        Some(o) => Some(crate::output::create_trace(o, format(args.to), &db)?),
        None => None,
    };
    let mut compare = match &args.compare {
        Some(c) => Some((open_trace(c, "trace blocks")?, Compare::default())),
        None => None,
    };
    let mut decoded = Vec::new();
    let mut events = 0u64;
    while let Some(batch) = reader
        .next_batch()
        .with_context(|| format!("cannot read {}", input.display()))?
    {
        decoded.clear();
        for &e in batch {
            stream
                .push(e, |b| decoded.push(b))
                .with_context(|| format!("cannot decode {}", input.display()))?;
        }
        events += decoded.len() as u64;
        if let (Some(w), Some(o)) = (writer.as_mut(), &args.output) {
            decoded
                .iter()
                .try_for_each(|&b| w.push(b))
                .with_context(|| format!("cannot write {}", o.display()))?;
        }
        if let (Some((r, c)), Some(path)) = (compare.as_mut(), &args.compare) {
            c.decoded(&decoded)?;
            c.catch_up(r, path, events)?;
        }
    }
    if let (Some(w), Some(o)) = (writer, &args.output) {
        crate::output::finish_trace(w, o)?;
    }
    warn_truncated(input, reader.truncation());
    if let (Some((mut r, mut c)), Some(path)) = (compare, &args.compare) {
        c.catch_up(&mut r, path, u64::MAX)?;
        warn_truncated(path, r.truncation());
        let threads = c.finish()?;
        writeln!(
            std::io::stdout(),
            "identical: {events} block-trace events in {threads} thread(s) (decoded {} = {})",
            input.display(),
            path.display()
        )?;
    }
    Ok(())
}

/// Per-thread equality of two interleaved traces, streamed: an event waits in its thread's
/// queue until the other side's event at the same position arrives (`wpp_trace::file::threads`
/// defines equality per thread, so interleavings may differ).
#[derive(Default)]
struct Compare {
    demux: [wpp_trace::ThreadDemux; 2],
    /// Per thread: events one side is ahead by (which side, the events), and events matched.
    queues: std::collections::BTreeMap<wpp_trace::ThreadId, (usize, VecDeque<Event>, u64)>,
    /// Events read from the recorded side.
    recorded: u64,
}

const SIDES: [&str; 2] = ["decoded", "recorded"];

impl Compare {
    fn push(&mut self, side: usize, e: Event) -> anyhow::Result<()> {
        let Some(t) = self.demux[side].route(e) else {
            return Ok(());
        };
        let (ahead, q, matched) = self.queues.entry(t).or_default();
        if q.is_empty() || *ahead == side {
            *ahead = side;
            q.push_back(e);
            return Ok(());
        }
        let other = q.pop_front().expect("not empty");
        if other != e {
            let (d, r) = if side == 0 { (e, other) } else { (other, e) };
            anyhow::bail!("thread {t}, event {matched}: decoded {d:?}, recorded {r:?}");
        }
        *matched += 1;
        Ok(())
    }

    fn decoded(&mut self, events: &[Event]) -> anyhow::Result<()> {
        events.iter().try_for_each(|&e| self.push(0, e))
    }

    /// Reads the recorded trace until it is `target` events in (or ends).
    fn catch_up(&mut self, r: &mut TraceReader, path: &Path, target: u64) -> anyhow::Result<()> {
        while self.recorded < target {
            let Some(batch) = r
                .next_batch()
                .with_context(|| format!("cannot read {}", path.display()))?
            else {
                break;
            };
            self.recorded += batch.len() as u64;
            batch.iter().try_for_each(|&e| self.push(1, e))?;
        }
        Ok(())
    }

    /// Checks nothing is left over; returns the number of threads.
    fn finish(self) -> anyhow::Result<usize> {
        for (t, (side, q, matched)) in &self.queues {
            if let Some(e) = q.front() {
                anyhow::bail!(
                    "thread {t}, event {matched}: the {} trace goes on ({} more events, \
                     starting with {e:?}), the {} one ends",
                    SIDES[*side],
                    q.len(),
                    SIDES[1 - side]
                );
            }
        }
        Ok(self.queues.len())
    }
}

fn convert(args: ConvertArgs) -> anyhow::Result<()> {
    let (input, output) = (&args.input, &args.output);
    let mut reader = open_trace(input, "trace convert")?;
    let format = format(args.to);
    let mut writer = crate::output::create_trace(output, format, reader.program())?;
    let copied = copy(&mut reader, |e| writer.push(e));
    copy_context(copied, input, &output.display().to_string())?;
    crate::output::finish_trace(writer, output)?;
    warn_truncated(input, reader.truncation());
    Ok(())
}

fn cat(args: CatArgs) -> anyhow::Result<()> {
    let input = &args.input;
    let mut reader = open_trace(input, "trace cat")?;
    let stdout = std::io::BufWriter::new(std::io::stdout().lock());
    let mut writer = TextWriter::new(stdout, reader.program())?;
    let copied = copy(&mut reader, |e| writer.push(e)).and_then(|()| {
        let flushed = writer.finish().and_then(|mut out| Ok(out.flush()?));
        flushed.map_err(CopyError::Write)
    });
    // `wpp trace cat … | head` closes the pipe early; that is not an error.
    if let Err(CopyError::Write(TraceError::Io(e))) = &copied {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            return Ok(());
        }
    }
    copy_context(copied, input, "standard output")?;
    warn_truncated(input, reader.truncation());
    Ok(())
}
