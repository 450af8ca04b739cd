//! `wpp trace …`: convert, print and chunk trace files.

use super::compress::{open_trace as open, warn_truncated};
use anyhow::Context;
use std::io::Write;
use std::path::{Path, PathBuf};
use wpp_trace::file::{self, Format, TextWriter, TraceError, TraceReader};

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
    #[arg(short, long)]
    output: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value = "binary")]
    to: To,
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
    let (input, output) = (&args.input, &args.output);
    let mut reader = open(input)?;
    let db = reader.program().clone();
    let mut stream = wpp_paths::BlockStream::new(&db)
        .with_context(|| format!("cannot decode {}", input.display()))?;
    let mut writer = file::create(output, format(args.to), &db)
        .with_context(|| format!("cannot create {}", output.display()))?;
    let mut decoded = Vec::new();
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
        decoded
            .iter()
            .try_for_each(|&b| writer.push(b))
            .with_context(|| format!("cannot write {}", output.display()))?;
    }
    writer
        .finish()
        .with_context(|| format!("cannot write {}", output.display()))?;
    warn_truncated(input, reader.truncation());
    Ok(())
}

fn convert(args: ConvertArgs) -> anyhow::Result<()> {
    let (input, output) = (&args.input, &args.output);
    let mut reader = open(input)?;
    let format = format(args.to);
    let mut writer = file::create(output, format, reader.program())
        .with_context(|| format!("cannot create {}", output.display()))?;
    let copied = copy(&mut reader, |e| writer.push(e));
    copy_context(copied, input, &output.display().to_string())?;
    writer
        .finish()
        .with_context(|| format!("cannot write {}", output.display()))?;
    warn_truncated(input, reader.truncation());
    Ok(())
}

fn cat(args: CatArgs) -> anyhow::Result<()> {
    let input = &args.input;
    let mut reader = open(input)?;
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
