//! The one output layer: a command writes its file, or standard output for `-`, and an error
//! leaves no partial file behind (`wpp annotate`, `wpp export`, `wpp decompress`, `wpp trace
//! convert`/`blocks`, `wpp synth`).

use std::io::Write;
use std::path::Path;

use anyhow::Context;
use wpp_trace::file::{FileWriter, Format};
use wpp_trace::ProgramDb;

/// Where a command writes its output: `path`, or standard output for `None` / `-`. A file
/// the command fails to finish is removed (an error leaves no empty or partial output); only
/// [`Output::finish`] keeps it.
pub struct Output {
    writer: Box<dyn std::io::Write>,
    /// The file written, until finished.
    unfinished: Option<std::path::PathBuf>,
}

impl Output {
    /// Creates `path` for writing, or standard output for `None` / `-`.
    pub fn create(path: Option<&Path>) -> anyhow::Result<Output> {
        Ok(match path {
            Some(p) if p != Path::new("-") => Output {
                writer: Box::new(std::io::BufWriter::new(
                    std::fs::File::create(p)
                        .with_context(|| format!("cannot create {}", p.display()))?,
                )),
                unfinished: Some(p.to_path_buf()),
            },
            _ => Output {
                writer: Box::new(std::io::BufWriter::new(std::io::stdout().lock())),
                unfinished: None,
            },
        })
    }

    /// Flushes the output and keeps its file.
    pub fn finish(mut self) -> std::io::Result<()> {
        self.writer.flush()?;
        self.unfinished = None;
        Ok(())
    }
}

impl std::io::Write for Output {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.writer.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.writer.flush()
    }
}

impl Drop for Output {
    /// Removes an unfinished output file (a regular file only: never `/dev/null` or a pipe).
    fn drop(&mut self) {
        if let Some(p) = &self.unfinished {
            if p.metadata().is_ok_and(|m| m.is_file()) {
                let _ = std::fs::remove_file(p);
            }
        }
    }
}

/// A trace in `format` for `db`, written to `path` or standard output for `-`.
pub fn create_trace(
    path: &Path,
    format: Format,
    db: &ProgramDb,
) -> anyhow::Result<FileWriter<Output>> {
    let out = Output::create(Some(path))?;
    wpp_trace::file::create_on(out, format, db)
        .with_context(|| format!("cannot write {}", path.display()))
}

/// Completes a trace from [`create_trace`] and keeps its file.
pub fn finish_trace(writer: FileWriter<Output>, path: &Path) -> anyhow::Result<()> {
    writer
        .finish()
        .map_err(anyhow::Error::from)
        .and_then(|out| Ok(out.finish()?))
        .with_context(|| format!("cannot write {}", path.display()))
}
