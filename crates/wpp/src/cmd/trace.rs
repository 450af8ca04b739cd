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

/// Runs a `wpp trace` subcommand.
pub fn run(command: Command) -> anyhow::Result<()> {
    match command {
        Command::Chunk(a) => super::chunk::run(a),
        Command::Convert(a) => convert(a),
        Command::Cat(a) => cat(a),
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

fn convert(args: ConvertArgs) -> anyhow::Result<()> {
    let (input, output) = (&args.input, &args.output);
    let mut reader = open(input)?;
    let format = match args.to {
        To::Text => Format::Text,
        To::Binary => Format::Binary,
    };
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
