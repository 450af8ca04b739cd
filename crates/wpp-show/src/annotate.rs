//! Source lines with their execution counts: an `llvm-cov show`-like text view and an lcov
//! tracefile (the `geninfo` format `genhtml` and IDE coverage plugins read).
//!
//! A line's count is, per function, the largest count of the function's blocks that run code
//! of the line — the blocks that start on it, and the blocks it is an inner line of (a line
//! after a call, which does not end a block: [`wpp_trace::Function::block_inner_lines`]) —
//! summed over the functions that have such blocks (a `static inline` function inlined into
//! two callers). So a line with a loop header runs as often as its condition, and a line in
//! the middle of a block as often as the block. Blocks come from the walk, so path recordings
//! and bl/ppp profiles count the blocks their paths decode to; for those, each line also lists
//! the hottest paths through it (the paths with a block that runs code of it). Costs (samples,
//! the exports) stay charged to the line a block starts on; only these counts use inner lines.
//!
//! A line that only the code after a block's first call runs
//! ([`wpp_trace::Function::block_tail_lines`]) runs when that call returns, which path
//! recordings and profiles count: a path starts after the call ([`resumed_counts`]). There it
//! counts the returns, so frames a `longjmp` abandoned inside the call do not count it. A block
//! recording cannot tell such frames from returning ones and counts the block's runs.

use std::collections::BTreeMap;
use std::io::Write;

use rustc_hash::FxHashMap;
use wpp_paths::trace::PathDecoder;
use wpp_trace::{FunctionId, PathId, ProgramDb};

use crate::source::{Loc, SourceMap, NO_FILE};
use crate::walk::{block_count, Run};
use crate::ShowError;

/// How many paths a line lists.
pub const PATHS_PER_LINE: usize = 3;

/// What one source line did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LineInfo {
    /// Executions (module docs).
    pub count: u64,
    /// The hottest paths through it, `(function, path id, count)`, hottest first.
    pub paths: Vec<(u32, u64, u64)>,
}

/// Line counts by location, for every function or only `only`.
pub fn line_counts(
    db: &ProgramDb,
    map: &SourceMap,
    run: &Run,
    only: Option<u32>,
) -> Result<BTreeMap<Loc, LineInfo>, ShowError> {
    let mut lines: BTreeMap<Loc, LineInfo> = BTreeMap::new();
    // Path recordings and profiles: one decoder (and its cache) for the returns and the paths.
    let mut decoder = if run.path_counts.is_empty() || !db.has_cfgs() {
        None
    } else {
        Some(PathDecoder::new(db)?)
    };
    let resumed = match decoder.as_mut() {
        Some(d) => resumed_counts(db, run, d)?,
        None => None,
    };
    for (f, counts) in run.block_counts.iter().enumerate() {
        let f = f as u32;
        if only.is_some_and(|o| o != f) {
            continue;
        }
        let mut most: FxHashMap<Loc, u64> = FxHashMap::default();
        for (b, &n) in counts.iter().enumerate() {
            let b = b as u32;
            let tail = map.tail_locs(f, b);
            for loc in map.block_locs(f, b) {
                let n = match &resumed {
                    Some(r) if tail.contains(&loc) => r.get(&(f, b)).copied().unwrap_or(0),
                    _ => n,
                };
                let m = most.entry(loc).or_default();
                *m = (*m).max(n);
            }
        }
        for (loc, n) in most {
            lines.entry(loc).or_default().count += n;
        }
    }
    if let Some(d) = decoder.as_mut() {
        add_paths(db, map, run, only, d, &mut lines)?;
    }
    Ok(lines)
}

/// `(function, block)` → how often the block's first call returned.
type Resumed = FxHashMap<(u32, u32), u64>;

/// How often each block's first call returned, `(function, block)` → count, where the run
/// tells: in path recordings and profiles, each path that starts after a call (at its cut
/// node's tail) is one return. A frame that a `longjmp` abandoned inside the call has none, so
/// its lines after the call do not count it. `None` when no block has lines after its call.
fn resumed_counts(
    db: &ProgramDb,
    run: &Run,
    decoder: &mut PathDecoder,
) -> Result<Option<Resumed>, ShowError> {
    let has_tails = |f: &wpp_trace::Function| f.block_tail_lines.iter().any(|l| !l.is_empty());
    if !db.functions.iter().any(has_tails) {
        return Ok(None);
    }
    let mut resumed = Resumed::default();
    for (&(f, p), &n) in &run.path_counts {
        if (f as usize) < db.functions.len() {
            if let Some(b) = decoder.resumes(FunctionId(f), PathId(p))? {
                *resumed.entry((f, b.0)).or_default() += n;
            }
        }
    }
    Ok(Some(resumed))
}

/// Lists each line's hottest paths (path recordings and profiles).
fn add_paths(
    db: &ProgramDb,
    map: &SourceMap,
    run: &Run,
    only: Option<u32>,
    decoder: &mut PathDecoder,
    lines: &mut BTreeMap<Loc, LineInfo>,
) -> Result<(), ShowError> {
    let mut paths: Vec<_> = run
        .path_counts
        .iter()
        .filter(|((f, _), _)| only.is_none_or(|o| o == *f) && (*f as usize) < db.functions.len())
        .map(|(&(f, p), &n)| (n, f, p))
        .collect();
    paths.sort_unstable_by(|a, b| b.cmp(a));
    for (n, f, p) in paths {
        let mut locs: Vec<Loc> = decoder
            .blocks(FunctionId(f), PathId(p), 0)?
            .iter()
            .flat_map(|b| map.block_locs(f, b.0))
            .collect();
        locs.sort_unstable();
        locs.dedup();
        for loc in locs {
            let info = lines.entry(loc).or_default();
            if info.paths.len() < PATHS_PER_LINE {
                info.paths.push((f, p, n));
            }
        }
    }
    Ok(())
}

/// A function's calls: entries in a recording; for a profile (no stacks), executions of its
/// entry block.
pub fn function_calls(db: &ProgramDb, run: &Run) -> Vec<u64> {
    if run.has_stacks {
        return run.calls();
    }
    db.functions
        .iter()
        .zip(&run.block_counts)
        .map(|(f, counts)| {
            let entry = f.cfg.as_ref().map_or(0, |c| c.entry as usize);
            counts.get(entry).copied().unwrap_or(0)
        })
        .collect()
}

/// Where a function starts: its own line, else its first block's location.
pub fn function_start(db: &ProgramDb, map: &SourceMap, f: u32) -> Loc {
    let home = map.loc(f, 0);
    let func = &db.functions[f as usize];
    let first = (0..block_count(func) as u32)
        .map(|b| map.block_loc(f, b))
        .filter(|l| l.line > 0)
        .min_by_key(|l| (l.file != home.file, l.line));
    match (func.line, first) {
        (Some(line), _) if home.file != NO_FILE => Loc {
            file: home.file,
            line,
        },
        (_, Some(l)) => l,
        _ => home,
    }
}

/// One lcov record: functions `(start line, name, calls)` and lines `(line, count)`.
type FileRecord = (Vec<(u32, String, u64)>, Vec<(u32, u64)>);

/// Writes an lcov tracefile: per source file its functions (`FN`/`FNDA`: start line and calls)
/// and lines (`DA`: line and count).
pub fn write_lcov(
    db: &ProgramDb,
    map: &SourceMap,
    run: &Run,
    out: &mut impl Write,
) -> Result<(), ShowError> {
    let lines = line_counts(db, map, run, None)?;
    let calls = function_calls(db, run);
    let mut by_file: BTreeMap<u32, FileRecord> = BTreeMap::new();
    for (f, func) in db.functions.iter().enumerate() {
        let start = function_start(db, map, f as u32);
        if start.file != NO_FILE && start.line > 0 {
            let entry = by_file.entry(start.file).or_default();
            entry.0.push((start.line, func.name.clone(), calls[f]));
        }
    }
    for (loc, info) in &lines {
        if loc.file != NO_FILE {
            by_file
                .entry(loc.file)
                .or_default()
                .1
                .push((loc.line, info.count));
        }
    }
    writeln!(out, "TN:")?;
    for (file, (functions, das)) in by_file {
        writeln!(out, "SF:{}", map.file_name(file))?;
        for (line, name, _) in &functions {
            writeln!(out, "FN:{line},{name}")?;
        }
        for (_, name, n) in &functions {
            writeln!(out, "FNDA:{n},{name}")?;
        }
        writeln!(out, "FNF:{}", functions.len())?;
        writeln!(out, "FNH:{}", functions.iter().filter(|f| f.2 > 0).count())?;
        for (line, n) in &das {
            writeln!(out, "DA:{line},{n}")?;
        }
        writeln!(out, "LF:{}", das.len())?;
        writeln!(out, "LH:{}", das.iter().filter(|d| d.1 > 0).count())?;
        writeln!(out, "end_of_record")?;
    }
    Ok(())
}

/// Writes every source line with its count, file by file (`LINE|COUNT|TEXT`, the count blank
/// for lines without code), and under a line its hottest paths; with `only`, the lines between
/// that function's first and last. Files that cannot be read show their counted lines only.
pub fn write_annotated(
    db: &ProgramDb,
    map: &SourceMap,
    run: &Run,
    only: Option<u32>,
    out: &mut impl Write,
) -> Result<(), ShowError> {
    let lines = line_counts(db, map, run, only)?;
    let mut files: BTreeMap<u32, Vec<(u32, &LineInfo)>> = BTreeMap::new();
    for (loc, info) in &lines {
        files.entry(loc.file).or_default().push((loc.line, info));
    }
    for (file, counted) in files {
        let name = match file {
            NO_FILE => "(unknown file)",
            f => map.file_name(f),
        };
        writeln!(out, "{name}:")?;
        let text = std::fs::read_to_string(name).ok();
        let counted: BTreeMap<u32, &LineInfo> = counted.into_iter().collect();
        let shown: Vec<u32> = match (&text, only) {
            (Some(t), None) => (1..=t.lines().count() as u32).collect(),
            (Some(_), Some(_)) => {
                let (lo, hi) = (counted.keys().next(), counted.keys().next_back());
                lo.zip(hi)
                    .map_or(Vec::new(), |(&lo, &hi)| (lo..=hi).collect())
            }
            (None, _) => counted.keys().copied().collect(),
        };
        let source: Vec<&str> = text.as_deref().map_or(Vec::new(), |t| t.lines().collect());
        for line in shown {
            let code = source.get(line as usize - 1).copied().unwrap_or("");
            match counted.get(&line) {
                Some(info) => {
                    writeln!(out, "{line:>6}|{:>12}|{code}", info.count)?;
                    for &(f, p, n) in &info.paths {
                        writeln!(
                            out,
                            "{:>6}|{:>12}|  ^ path {p} of {} ×{n}",
                            "",
                            "",
                            db.name(FunctionId(f))
                        )?;
                    }
                }
                None => writeln!(out, "{line:>6}|{:>12}|{code}", "")?,
            }
        }
        writeln!(out)?;
    }
    Ok(())
}
