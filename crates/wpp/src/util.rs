//! Small helpers shared by the command modules: JSON output, progress bars, counts, and the
//! errors for names and ids a file does not have.

use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;
use std::io::Write;
use std::path::Path;

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

/// A function name or id the file does not have: exit status 2, a usage error like clap's.
#[derive(Debug)]
pub struct NotInFile(pub String);

impl std::fmt::Display for NotInFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NotInFile {}

/// The names of `names` nearest to `name` (Jaro–Winkler similarity ≥ 0.8, or `name` inside
/// them), best first, at most 5.
pub fn nearest<'a>(name: &str, names: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let mut scored: Vec<(f64, &str)> = names
        .into_iter()
        .map(|n| (strsim::jaro_winkler(name, n), n))
        .filter(|&(s, n)| s >= 0.8 || (name.len() >= 3 && n.contains(name)))
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
    scored.dedup_by(|a, b| a.1 == b.1);
    scored.into_iter().take(5).map(|(_, n)| n).collect()
}

/// The position in `names` of the function a user means by `name`: that name, the C++ function
/// it is the linkage name of, or else the one name a module qualifies with it (`libq.so!name`:
/// a merged recording qualifies a name several modules define); otherwise an error naming
/// `file` that lists the qualified names when there are several, else the nearest names.
pub fn function_position<'a>(
    file: &Path,
    name: &str,
    names: impl Iterator<Item = &'a str> + Clone,
) -> anyhow::Result<usize> {
    if let Some(i) = names.clone().position(|n| n == name) {
        return Ok(i);
    }
    // A C++ function is named by its demangled name (`ns::f`, or `ns::f(int)` among overloads);
    // its linkage name (`_ZN2ns1fEi`), the name recordings used to show, finds it too.
    if let Some((short, full)) = wpp_trace::program::cpp_names(name) {
        if let Some(i) = [full, short]
            .iter()
            .find_map(|n| function_position(file, n, names.clone()).ok())
        {
            return Ok(i);
        }
    }
    let qualified: Vec<(usize, &str)> = names
        .clone()
        .enumerate()
        .filter(|(_, n)| n.rsplit_once('!').is_some_and(|(_, f)| f == name))
        .collect();
    match &qualified[..] {
        [(i, _)] => Ok(*i),
        [] => Err(unknown_function(file, name, names)),
        several => {
            let listed: Vec<&str> = several.iter().map(|&(_, n)| n).collect();
            let message = format!(
                "{}: several modules define `{name}`: `{}`; give one of these names",
                file.display(),
                listed.join("`, `")
            );
            Err(NotInFile(message).into())
        }
    }
}

/// "FILE has no function `name`", with the nearest names of `names` suggested.
pub fn unknown_function<'a>(
    file: &Path,
    name: &str,
    names: impl IntoIterator<Item = &'a str>,
) -> anyhow::Error {
    let near = nearest(name, names);
    let hint = match &near[..] {
        [] => "; `wpp functions FILE` lists them".to_owned(),
        n => format!("; did you mean `{}`?", n.join("`, `")),
    };
    NotInFile(format!("{} has no function `{name}`{hint}", file.display())).into()
}
