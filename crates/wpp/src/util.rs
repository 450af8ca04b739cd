//! Small helpers shared by the command modules: JSON output, progress bars and counts.

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

/// A counter of events processed, on standard error; hidden when it is not a terminal.
pub fn event_counter(what: String) -> ProgressBar {
    let bar = ProgressBar::new_spinner();
    bar.set_style(
        ProgressStyle::with_template("{spinner} {msg}: {human_pos} events ({per_sec})")
            .expect("static template"),
    );
    bar.set_message(what);
    bar
}

/// "1 thread", "3 threads".
pub fn threads(n: usize) -> String {
    format!("{n} thread{}", if n == 1 { "" } else { "s" })
}
