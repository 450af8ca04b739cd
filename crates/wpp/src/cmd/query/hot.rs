//! `wpp hot`: the hot paths of a `.wpp` grammar — every minimal hot subpath (Larus §4.2's
//! question) over events qualified by their function, each listed once with its exact count and
//! cost, costliest first ([`wpp_query::hot::exact`] says what "minimal" means) — as text, JSON,
//! folded stacks or an SVG flame graph. Paths of a path recording are shown with the blocks and
//! source lines they decode to through the file's CFGs.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use wpp_grammar::file::WppFile;

use anyhow::Context;
use wpp_query::hot::exact::{hot_paths_on, min_cost_for_share, trace_cost, HotPath};
use wpp_query::hot::{HotConfig, HotSubpath};
use wpp_query::report::{decode_hot, event_text, folded_line, HotReport};

/// Arguments of `wpp hot`.
#[derive(clap::Args)]
pub struct Args {
    /// The `.wpp` file.
    pub file: PathBuf,
    /// Longest subpath considered (L).
    #[arg(long, default_value_t = 8)]
    pub max_length: usize,
    /// Minimum cost (C) as a fraction of the whole trace's cost (every event's cost, summed).
    /// A path's cost counts overlapping occurrences (`B2,B2` occurs 9 times in 10 `B2`s), so
    /// it can exceed the trace's: a share above 100%.
    #[arg(long, default_value_t = 0.01, conflicts_with = "min_cost")]
    pub min_share: f64,
    /// Minimum cost (C) as a number: count × the sum of the events' costs.
    #[arg(long)]
    pub min_cost: Option<u64>,
    /// Shortest subpath reported.
    #[arg(long, default_value_t = 2)]
    pub min_length: usize,
    /// Print the N costliest.
    #[arg(long, default_value_t = 20)]
    pub top: usize,
    /// Print JSON.
    #[arg(long, conflicts_with = "folded")]
    pub json: bool,
    /// Print folded stacks (`main;f;leaf cost`) for flame-graph tools.
    #[arg(long)]
    pub folded: bool,
    /// Also write an SVG flame graph of the hot subpaths.
    #[arg(long)]
    pub svg: Option<PathBuf>,
    /// Per-terminal costs (e.g. instructions on a path): lines `TERMINAL COST`; terminals not
    /// listed cost 1. Without it every terminal costs 1.
    #[arg(long)]
    pub costs: Option<PathBuf>,
    /// Search threads: each pass over the grammar is cut into as many parts. Default: the
    /// available cores. The answer is the same on any number.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub threads: Option<u64>,
}

/// Reads `TERMINAL COST` lines into a cost table over `n` terminals (default cost 1).
fn read_costs(path: &std::path::Path, n: usize) -> anyhow::Result<Vec<u64>> {
    let text = crate::input::read_text(path)?;
    let mut costs = vec![1u64; n];
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let parsed = line
            .split_once(char::is_whitespace)
            .and_then(|(t, c)| Some((t.parse::<usize>().ok()?, c.trim().parse::<u64>().ok()?)));
        let at = format!("{}:{}", path.display(), i + 1);
        match parsed {
            Some((t, c)) if t < n => costs[t] = c,
            Some((t, _)) => {
                anyhow::bail!("{at}: terminal {t} is not below {n}, the alphabet's size")
            }
            None => anyhow::bail!(
                "{at}: expected `TERMINAL COST`, two whole numbers (the cost at most {})",
                u64::MAX
            ),
        }
    }
    Ok(costs)
}

/// Runs `wpp hot`.
pub fn run(args: Args) -> anyhow::Result<()> {
    if !(args.min_share > 0.0 && args.min_share <= 1.0) {
        anyhow::bail!("--min-share must be in (0, 1], got {}", args.min_share);
    }
    let wpp = crate::input::read_wpp(&args.file, "hot")?;
    let costs = match &args.costs {
        Some(p) => Some(read_costs(p, wpp.alphabet.len())?),
        None => None,
    };
    let min_cost = match args.min_cost {
        Some(c) => c,
        None => min_cost_for_share(trace_cost(&wpp.grammar, costs.as_deref()), args.min_share),
    };
    let cfg = HotConfig {
        min_length: args.min_length,
        max_length: args.max_length,
        min_cost,
    };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads = args.threads.map_or(cores, |t| t as usize);
    let found = hot_paths_on(&wpp.grammar, &wpp.alphabet, costs.as_deref(), cfg, threads)?;
    let shown = &found.paths[..found.paths.len().min(args.top)];
    let mut reports = decode(&wpp, shown);
    for (r, p) in reports.iter_mut().zip(shown) {
        r.events = qualified_text(&wpp, p);
    }
    let folded: Vec<String> = reports.iter().map(folded_line).collect();
    if let Some(svg) = &args.svg {
        write_svg(svg, &args.file, &folded)?;
    }
    if args.json {
        return crate::util::print_json(&serde_json::json!({
            "min_cost": min_cost,
            "total_cost": found.total_cost,
            "found": found.paths.len(),
            "paths": reports.iter().zip(shown).map(|(r, p)| Shown {
                count: p.count,
                cost: p.cost,
                events: r.events.clone(),
                terminals: &p.terminals,
                thread: r.thread,
                position: r.position,
                stack: &r.stack,
                function: &r.function,
                blocks: &r.blocks,
                paths: &r.paths,
                lines: &r.lines,
            }).collect::<Vec<_>>(),
            "best": found.best,
        }));
    }
    let mut out = std::io::stdout().lock();
    if args.folded {
        for l in &folded {
            writeln!(out, "{l}")?;
        }
        return Ok(());
    }
    let share = |c: u64| 100.0 * c as f64 / found.total_cost.max(1) as f64;
    writeln!(
        out,
        "{} hot paths of {}..={} events costing ≥ {min_cost} ({:.2}% of the trace's {}); \
         minimal: none contains another; costs count overlapping occurrences, so a share can \
         exceed 100%",
        found.paths.len(),
        cfg.min_length,
        cfg.max_length,
        share(min_cost),
        found.total_cost,
    )?;
    if let Some(b) = &found.best {
        let events = qualified_text(&wpp, b);
        writeln!(
            out,
            "the costliest path costs {} = {} × {} ({:.2}%): {}; lower --min-share or --min-cost",
            b.cost,
            b.count,
            b.cost / b.count.max(1),
            share(b.cost),
            events.join(", ")
        )?;
    }
    for r in &reports {
        writeln!(
            out,
            "{:>6.2}%  cost {} = {} × {}  thread {} @{}{}: {}",
            share(r.hot.cost),
            r.hot.cost,
            r.hot.frequency,
            r.hot.cost / r.hot.frequency.max(1),
            r.thread,
            r.position,
            location(r),
            r.events.join(", ")
        )?;
    }
    if found.paths.len() > shown.len() {
        writeln!(out, "… {} more (--top)", found.paths.len() - shown.len())?;
    }
    Ok(())
}

/// A hot path as `--json` prints it.
#[derive(serde::Serialize)]
struct Shown<'a> {
    count: u64,
    cost: u64,
    /// Events with their function (`f:B 3`; `F f` as is).
    events: Vec<String>,
    terminals: &'a [u32],
    thread: u32,
    position: u64,
    stack: &'a [String],
    function: &'a Option<String>,
    blocks: &'a [u64],
    paths: &'a [u64],
    lines: &'a [u32],
}

/// The events of `p`, each with the function it runs in: `f:B 3`, `f:E`; `F f` as is.
fn qualified_text(wpp: &WppFile, p: &HotPath) -> Vec<String> {
    p.terminals
        .iter()
        .zip(&p.functions)
        .map(|(&t, f)| {
            let e = wpp.alphabet.event(wpp_trace::Terminal(t));
            let text = e.map_or("?".into(), |e| event_text(e, &wpp.program));
            match (e, f) {
                (Some(wpp_trace::Event::Enter(_)), _) | (_, None) => text,
                (_, Some(f)) => format!("{}:{text}", wpp.program.name(wpp_trace::FunctionId(*f))),
            }
        })
        .collect()
}

/// Decodes hot paths for people: events named, with the stack and lines where they occur.
fn decode(wpp: &WppFile, paths: &[HotPath]) -> Vec<HotReport> {
    let hot: Vec<HotSubpath> = paths
        .iter()
        .map(|p| HotSubpath {
            rule: 0,
            offset: 0,
            terminals: p.terminals.clone(),
            frequency: p.count,
            cost: p.cost,
        })
        .collect();
    let places: Vec<(usize, u64)> = paths.iter().map(|p| (p.stream, p.position)).collect();
    decode_hot(&wpp.grammar, &wpp.alphabet, &wpp.program, &hot, &places)
}

/// " in f blocks [..]" or " in f paths [..] = blocks [..] (lines [..])".
fn location(r: &HotReport) -> String {
    match &r.function {
        Some(f) if r.paths.is_empty() => format!(" in {f} blocks {:?}", r.blocks),
        Some(f) => format!(
            " in {f} paths {:?} = blocks {:?} (lines {:?})",
            r.paths, r.blocks, r.lines
        ),
        None => String::new(),
    }
}

/// Writes the folded lines as an SVG flame graph.
fn write_svg(svg: &Path, file: &Path, folded: &[String]) -> anyhow::Result<()> {
    let out = File::create(svg).with_context(|| format!("cannot create {}", svg.display()))?;
    let mut opt = inferno::flamegraph::Options::default();
    opt.title = format!("hot paths of {}", file.display());
    opt.count_name = "cost".into();
    inferno::flamegraph::from_lines(
        &mut opt,
        folded.iter().map(|s| s.as_str()),
        BufWriter::new(out),
    )
    .with_context(|| format!("cannot write {}", svg.display()))
}
