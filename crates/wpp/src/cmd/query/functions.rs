//! `wpp functions`: the recording's program, one line per function — calls, events run in it,
//! source location, blocks and acyclic paths (where the file carries CFGs).
//!
//! Counts come from the calling-context walk of a `.wpp`'s rules, without expanding it
//! ([`wpp_show::walk`]), from one streaming pass over a trace, and from the path counts of a
//! bl/ppp profile (each acyclic path run counts as one event; calls are the runs of the paths
//! that start at the function's entry block).

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::Serialize;
use wpp_query::hot::qualified::qualified_frequencies;
use wpp_trace::{Event, FunctionId, ProgramDb};

use crate::input::{self, Kind};

/// Arguments of `wpp functions`.
#[derive(clap::Args)]
pub struct Args {
    /// A `.wpp`, a trace or a bl/ppp profile.
    pub file: PathBuf,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// One function's line.
#[derive(Serialize, Default, Clone)]
struct Row {
    id: u32,
    name: String,
    /// Times it was entered (`F` events); `None` for profiles.
    calls: Option<u64>,
    /// Events that ran in it (its blocks or paths, its `F` and `E`); for profiles, path runs.
    events: u64,
    file: Option<String>,
    line: Option<u32>,
    /// Blocks, where the file knows them (CFG or per-block source lines).
    blocks: Option<usize>,
    /// Ball–Larus acyclic paths, where the file carries the function's CFG.
    paths: Option<u64>,
}

/// Rows for every function of `db`, counts zero.
fn rows(db: &ProgramDb) -> Vec<Row> {
    db.functions
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let blocks = match &f.cfg {
                Some(c) => Some(c.successors.len()),
                None => (!f.block_lines.is_empty()).then_some(f.block_lines.len()),
            };
            let paths = f.cfg.as_ref().and_then(|c| {
                let mut cfg = wpp_paths::Cfg::from_record(&f.name, c);
                wpp_paths::number_with_limit(&mut cfg, wpp_abi::PATH_LIMIT)
                    .ok()
                    .map(|(_, bl)| bl.path_count())
            });
            Row {
                id: i as u32,
                name: f.name.clone(),
                calls: Some(0),
                file: f.file.clone(),
                line: f.line,
                blocks,
                paths,
                ..Row::default()
            }
        })
        .collect()
}

/// Adds `n` runs of event `e`, run in function `f` (an id), to `rows` (grown for raw ids).
fn add(rows: &mut Vec<Row>, e: Event, f: Option<u32>, n: u64) {
    let Some(f) = f else { return };
    while rows.len() <= f as usize {
        let id = rows.len() as u32;
        rows.push(Row {
            id,
            name: format!("#{id}"),
            calls: Some(0),
            ..Row::default()
        });
    }
    let row = &mut rows[f as usize];
    row.events += n;
    if matches!(e, Event::Enter(_)) {
        row.calls = Some(row.calls.unwrap_or(0) + n);
    }
}

/// An event, the function (id) it runs in, and how many times it runs so.
pub type QualifiedCount = (Event, Option<u32>, u64);

/// Every distinct (event, function it runs in) of a `.wpp` with its number of runs, from the
/// frequencies of the function-qualified terminals (no expansion), and the program database.
pub fn qualified_counts(
    path: &Path,
    command: &str,
) -> anyhow::Result<(ProgramDb, Vec<QualifiedCount>)> {
    let wpp = input::read_wpp(path, command)?;
    let (events, freq) = qualified_frequencies(&wpp.grammar, &wpp.alphabet);
    let counts = events
        .iter()
        .zip(&freq)
        .filter_map(|(&(t, f), &n)| Some((wpp.alphabet.event(t)?, f.map(|f| f.0), n)))
        .collect();
    Ok((wpp.program, counts))
}

/// Counts of a `.wpp`, from the calling contexts of its run: a context's events are its
/// samples, its entries (`F`) and its returns (`E`).
fn from_wpp(path: &Path) -> anyhow::Result<Vec<Row>> {
    let wpp = input::read_wpp(path, "functions")?;
    let (db, _, run) = wpp_show::Recording::Wpp(Box::new(wpp))
        .walk()
        .with_context(|| format!("cannot walk {}", path.display()))?;
    let mut out = rows(&db);
    for c in &run.contexts[1..] {
        let samples: u64 = c.counts.iter().sum();
        let f = Some(c.function);
        add(&mut out, Event::Enter(FunctionId(c.function)), f, c.calls);
        add(&mut out, Event::Leave, f, c.returns + samples);
    }
    Ok(out)
}

/// Counts of a trace, streaming it with one call stack per thread.
fn from_trace(path: &Path) -> anyhow::Result<Vec<Row>> {
    // Decoding (paths into blocks, in the default recording) on the other core.
    let mut reader = input::open_trace(path, "functions")?.read_ahead();
    let mut out = rows(reader.program());
    // The running thread's stack; the others' are parked until their thread runs again.
    let mut parked: std::collections::HashMap<u32, Vec<u32>> = Default::default();
    let (mut thread, mut stack) = (0u32, Vec::new());
    while let Some(batch) = reader
        .next_batch()
        .with_context(|| format!("cannot read {}", path.display()))?
    {
        for &e in batch {
            let f = match e {
                Event::Thread(t) => {
                    if t.0 != thread {
                        let next = parked.remove(&t.0).unwrap_or_default();
                        parked.insert(thread, std::mem::replace(&mut stack, next));
                        thread = t.0;
                    }
                    continue;
                }
                Event::Enter(f) => {
                    stack.push(f.0);
                    Some(f.0)
                }
                Event::Leave => {
                    let top = stack.last().copied();
                    stack.pop();
                    top
                }
                _ => stack.last().copied(),
            };
            add(&mut out, e, f, 1);
        }
    }
    input::warn_truncated(path, reader.truncation());
    Ok(out)
}

/// Path runs of a bl/ppp profile, and calls: the runs of paths that start at the entry
/// (trial 35 H11: they were left out).
fn from_profile(path: &Path) -> anyhow::Result<Vec<Row>> {
    let mut p = input::read_profile(path, "functions")?;
    p.program.attach_cfgs();
    let nums = input::numberings(&p);
    let cfgs: std::collections::BTreeMap<&str, &wpp_paths::Cfg> = p
        .program
        .cfgs
        .iter()
        .map(|c| (c.name.as_str(), c))
        .collect();
    // A ppp profile's by Ball–Larus id, its uninteresting paths included (PPP §5).
    let all = p.path_counts();
    let mut out = rows(&p.program.program);
    for row in &mut out {
        let counts = all.functions.get(&row.name);
        row.events = counts.map_or(0, |c| c.values().sum());
        row.calls = match (counts, nums.get(&row.name), cfgs.get(row.name.as_str())) {
            (Some(counts), Some(n), Some(cfg)) => input::calls_from_paths(n, cfg, counts),
            (None, ..) => Some(0),
            _ => None,
        };
    }
    Ok(out)
}

/// Runs `wpp functions`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let kinds = [Kind::Wpp, Kind::Trace, Kind::TextTrace, Kind::Profile];
    let mut rows = match input::expect(&args.file, &kinds, "functions")? {
        Kind::Wpp => from_wpp(&args.file)?,
        Kind::Profile => from_profile(&args.file)?,
        _ => from_trace(&args.file)?,
    };
    rows.sort_by(|a, b| b.events.cmp(&a.events).then(a.id.cmp(&b.id)));
    if args.json {
        return crate::util::print_json(&rows);
    }
    let mut out = std::io::stdout().lock();
    let opt = |v: Option<u64>| v.map_or("-".to_owned(), |v| v.to_string());
    writeln!(
        out,
        "{:>12} {:>14} {:>7} {:>10}  function (source)",
        "calls", "events", "blocks", "paths"
    )?;
    for r in &rows {
        let at = match (&r.file, r.line) {
            (Some(f), Some(l)) => format!(" ({f}:{l})"),
            (None, Some(l)) => format!(" (line {l})"),
            (Some(f), None) => format!(" ({f})"),
            (None, None) => String::new(),
        };
        writeln!(
            out,
            "{:>12} {:>14} {:>7} {:>10}  {}{at}",
            opt(r.calls),
            r.events,
            opt(r.blocks.map(|b| b as u64)),
            opt(r.paths),
            r.name
        )?;
    }
    Ok(())
}
