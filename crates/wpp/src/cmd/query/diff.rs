//! `wpp diff`: what changed most between two recordings of a program — per function its calls
//! and events, and per (function, block or path id) its runs — with counts taken from each
//! grammar's function-qualified terminal frequencies ([`super::functions::qualified_counts`]),
//! never from an expansion. Functions are matched by name; a function's block and path ids are
//! compared only where its CFG is the same in both recordings (the same build of it), and two
//! recordings of different kinds (blocks and paths) or with no function in common are refused.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::PathBuf;

use serde::Serialize;
use wpp_trace::Event;

use super::functions::qualified_counts;

/// Arguments of `wpp diff`.
#[derive(clap::Args)]
pub struct Args {
    /// The first recording (`.wpp`).
    pub a: PathBuf,
    /// The second recording (`.wpp`).
    pub b: PathBuf,
    /// List at most this many functions and this many blocks or paths.
    #[arg(long, default_value_t = 20)]
    pub top: usize,
    /// Print JSON (every change).
    #[arg(long)]
    pub json: bool,
}

/// What is counted, per recording.
#[derive(Default)]
struct Counts {
    db: wpp_trace::ProgramDb,
    /// Function name → (calls, events).
    functions: BTreeMap<String, (u64, u64)>,
    /// (function name, `B 3` or `P 7`) → runs.
    items: BTreeMap<(String, String), u64>,
}

fn counts(path: &std::path::Path) -> anyhow::Result<Counts> {
    let (db, events) = qualified_counts(path, "diff")?;
    let mut c = Counts::default();
    for (e, f, n) in events {
        let Some(f) = f else { continue };
        let name = db.name(wpp_trace::FunctionId(f)).clone();
        let entry = c.functions.entry(name.clone()).or_default();
        entry.1 += n;
        match e {
            Event::Enter(_) => entry.0 += n,
            Event::Block(b) => *c.items.entry((name, format!("B {b}"))).or_default() += n,
            Event::Path(p) => *c.items.entry((name, format!("P {p}"))).or_default() += n,
            _ => {}
        }
    }
    c.db = db;
    Ok(c)
}

/// Whether the recording has block events, and path events.
fn kinds(c: &Counts) -> (bool, bool) {
    let has = |k: &str| c.items.keys().any(|(_, i)| i.starts_with(k));
    (has("B "), has("P "))
}

/// The functions of both recordings whose CFGs differ (another build of them): their block and
/// path ids name different blocks and paths.
fn reshaped(a: &wpp_trace::ProgramDb, b: &wpp_trace::ProgramDb) -> BTreeSet<String> {
    let in_b: BTreeMap<&str, &wpp_trace::Function> =
        b.functions.iter().map(|f| (f.name.as_str(), f)).collect();
    let differ = |f: &wpp_trace::Function, g: &wpp_trace::Function| {
        f.cfg != g.cfg || f.block_lines.len() != g.block_lines.len()
    };
    a.functions
        .iter()
        .filter(|f| in_b.get(f.name.as_str()).is_some_and(|g| differ(f, g)))
        .map(|f| f.name.clone())
        .collect()
}

/// Refuses two recordings that cannot be compared event by event.
fn comparable(args: &Args, a: &Counts, b: &Counts) -> anyhow::Result<()> {
    let (shown_a, shown_b) = (args.a.display(), args.b.display());
    match (kinds(a), kinds(b)) {
        ((true, false), (false, true)) | ((false, true), (true, false)) => anyhow::bail!(
            "{shown_a} and {shown_b} record different kinds of events (blocks, paths); \
             compare two recordings of one mode (`wpp trace blocks` decodes paths)"
        ),
        _ => {}
    }
    let common = a
        .functions
        .keys()
        .filter(|f| b.functions.contains_key(*f))
        .count();
    if !a.functions.is_empty() && common == 0 {
        anyhow::bail!("{shown_a} and {shown_b} record different programs (no function in common)");
    }
    // Unrelated programs still share `main` and library functions.
    let fewer = a.functions.len().min(b.functions.len());
    if common * 2 < fewer {
        eprintln!(
            "wpp: warning: {shown_a} and {shown_b} have only {common} of {fewer} functions in \
             common: they look like recordings of different programs"
        );
    }
    Ok(())
}

/// One changed count.
#[derive(Serialize)]
struct Change {
    function: String,
    /// The block or path (`B 3`, `P 7`); absent for a function's own line.
    item: Option<String>,
    /// Calls in each recording (function lines only).
    calls: Option<[u64; 2]>,
    /// Events (function lines) or runs (blocks and paths) in each recording.
    counts: [u64; 2],
    delta: i128,
}

/// Changes between two maps, largest |Δ| first.
fn changes<K: Ord + Clone>(
    a: &BTreeMap<K, u64>,
    b: &BTreeMap<K, u64>,
    make: impl Fn(&K, [u64; 2]) -> Change,
) -> Vec<Change> {
    let keys: BTreeSet<&K> = a.keys().chain(b.keys()).collect();
    let mut out: Vec<Change> = keys
        .into_iter()
        .map(|k| {
            let counts = [a.get(k), b.get(k)].map(|c| c.copied().unwrap_or(0));
            make(k, counts)
        })
        .filter(|c| c.delta != 0)
        .collect();
    out.sort_by_key(|c| std::cmp::Reverse(c.delta.unsigned_abs()));
    out
}

/// Runs `wpp diff`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let (mut ca, mut cb) = (counts(&args.a)?, counts(&args.b)?);
    comparable(&args, &ca, &cb)?;
    let reshaped = reshaped(&ca.db, &cb.db);
    for c in [&mut ca, &mut cb] {
        c.items.retain(|(f, _), _| !reshaped.contains(f));
    }
    let events = |c: &Counts| -> BTreeMap<String, u64> {
        c.functions.iter().map(|(k, v)| (k.clone(), v.1)).collect()
    };
    let calls = |c: &Counts, f: &str| c.functions.get(f).map_or(0, |v| v.0);
    let delta = |c: [u64; 2]| i128::from(c[1]) - i128::from(c[0]);
    let functions = changes(&events(&ca), &events(&cb), |f, counts| Change {
        function: f.clone(),
        item: None,
        calls: Some([calls(&ca, f), calls(&cb, f)]),
        counts,
        delta: delta(counts),
    });
    let items = changes(&ca.items, &cb.items, |(f, i), counts| Change {
        function: f.clone(),
        item: Some(i.clone()),
        calls: None,
        counts,
        delta: delta(counts),
    });
    if args.json {
        return crate::util::print_json(&serde_json::json!({
            "functions": functions,
            "items": items,
            "reshaped": reshaped,
        }));
    }
    let mut out = std::io::stdout().lock();
    if !reshaped.is_empty() {
        let names: Vec<&str> = reshaped.iter().map(String::as_str).collect();
        writeln!(
            out,
            "{} functions have another CFG in each recording (another build); their blocks \
             and paths are not compared: {}",
            names.len(),
            names.join(", ")
        )?;
    }
    for (title, list) in [
        ("functions (events)", &functions),
        ("blocks and paths (runs)", &items),
    ] {
        writeln!(out, "{} changed {title}:", list.len())?;
        for c in list.iter().take(args.top) {
            let what = match (&c.item, c.calls) {
                (Some(i), _) => format!("{}:{i}", c.function),
                (None, Some([a, b])) => format!("{} (calls {a} → {b})", c.function),
                (None, None) => c.function.clone(),
            };
            writeln!(
                out,
                "  {:>14} → {:<14} {:>+15}  {what}",
                c.counts[0], c.counts[1], c.delta
            )?;
        }
        if list.len() > args.top {
            writeln!(out, "  … {} more (--top)", list.len() - args.top)?;
        }
    }
    Ok(())
}
