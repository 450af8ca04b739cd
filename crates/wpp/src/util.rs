//! Small helpers shared by the command modules: JSON output and progress bars.

use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;
use std::io::Write;

/// Prints `value` as pretty JSON on standard output. A closed pipe (`wpp … --json | head`) is
/// returned as an I/O error, which `main` treats as a quiet success.
pub fn print_json<T: Serialize>(value: &T) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, value)?;
    writeln!(out)?;
    out.flush()?;
    Ok(())
}

/// A progress bar over `len` units on standard error, hidden when stderr is not a terminal.
pub fn progress(len: u64, what: &str) -> ProgressBar {
    let bar = ProgressBar::new(len);
    bar.set_style(
        ProgressStyle::with_template("{msg} [{bar:40}] {human_pos}/{human_len} ({per_sec}, {eta})")
            .expect("static template")
            .progress_chars("=> "),
    );
    bar.set_message(what.to_owned());
    bar
}

/// What a file given to `wpp` holds, by its magic.
pub enum InputKind {
    /// A chunked grammar container (`wpp chunk`).
    Chunked,
    /// A `.wpp` grammar.
    Wpp,
    /// Anything else: a trace, binary or text (its reader says if it is neither).
    Trace,
}

/// Reads the magic of the file at `path`.
pub fn input_kind(path: &std::path::Path) -> anyhow::Result<InputKind> {
    use anyhow::Context as _;
    use std::io::Read as _;
    let mut magic = [0u8; 4];
    let mut f =
        std::fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let n = f
        .read(&mut magic)
        .with_context(|| format!("cannot read {}", path.display()))?;
    Ok(match &magic[..n] {
        b"WPPC" => InputKind::Chunked,
        b"WPPG" => InputKind::Wpp,
        _ => InputKind::Trace,
    })
}
