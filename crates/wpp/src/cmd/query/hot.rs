//! `wpp hot`: minimal hot subpaths of a `.wpp` grammar (Larus §4.2, Figure 7), as text, JSON,
//! folded stacks or an SVG flame graph. Paths of a path recording are shown with the blocks
//! and source lines they decode to through the file's CFGs.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;

use anyhow::Context;
use wpp_query::hot::{hot_subpaths, HotConfig};
use wpp_query::report::{decode_hot, folded_line};

/// Arguments of `wpp hot`.
#[derive(clap::Args)]
pub struct Args {
    /// The `.wpp` file.
    pub file: PathBuf,
    /// Longest subpath considered (L).
    #[arg(long)]
    pub max_length: usize,
    /// Minimum cost (C): frequency × the sum of the terminals' costs.
    #[arg(long)]
    pub min_cost: u64,
    /// Shortest subpath reported.
    #[arg(long, default_value_t = 1)]
    pub min_length: usize,
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
}

/// Reads `TERMINAL COST` lines into a cost table over `n` terminals (default cost 1).
fn read_costs(path: &PathBuf, n: usize) -> anyhow::Result<Vec<u64>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut costs = vec![1u64; n];
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let parsed = line
            .split_once(char::is_whitespace)
            .and_then(|(t, c)| Some((t.parse::<usize>().ok()?, c.trim().parse::<u64>().ok()?)));
        match parsed {
            Some((t, c)) if t < n => costs[t] = c,
            _ => anyhow::bail!(
                "{}:{}: expected `TERMINAL COST` with a terminal below {n}",
                path.display(),
                i + 1
            ),
        }
    }
    Ok(costs)
}

/// Runs `wpp hot`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let wpp = crate::input::read_wpp(&args.file, "hot")?;
    let cfg = HotConfig {
        min_length: args.min_length,
        max_length: args.max_length,
        min_cost: args.min_cost,
    };
    let costs = match &args.costs {
        Some(p) => Some(read_costs(p, wpp.alphabet.len())?),
        None => None,
    };
    let hot = hot_subpaths(&wpp.grammar, costs.as_deref(), cfg)?;
    let reports = decode_hot(&wpp.grammar, &wpp.alphabet, &wpp.program, &hot);
    let folded: Vec<String> = reports.iter().map(folded_line).collect();
    if let Some(svg) = &args.svg {
        let out = File::create(svg).with_context(|| format!("cannot create {}", svg.display()))?;
        let mut opt = inferno::flamegraph::Options::default();
        opt.title = format!("hot subpaths of {}", args.file.display());
        opt.count_name = "cost".into();
        inferno::flamegraph::from_lines(
            &mut opt,
            folded.iter().map(|s| s.as_str()),
            BufWriter::new(out),
        )
        .with_context(|| format!("cannot write {}", svg.display()))?;
    }
    if args.json {
        return crate::util::print_json(&reports);
    }
    let mut out = std::io::stdout().lock();
    if args.folded {
        for l in &folded {
            writeln!(out, "{l}")?;
        }
        return Ok(());
    }
    writeln!(
        out,
        "{} minimal hot subpaths (length {}..={}, cost ≥ {})",
        reports.len(),
        cfg.min_length,
        cfg.max_length,
        cfg.min_cost
    )?;
    for r in &reports {
        let at = match &r.function {
            Some(f) if r.paths.is_empty() => format!(" in {f} blocks {:?}", r.blocks),
            Some(f) => format!(
                " in {f} paths {:?} = blocks {:?} (lines {:?})",
                r.paths, r.blocks, r.lines
            ),
            None => String::new(),
        };
        writeln!(
            out,
            "cost {} = {} × {}  thread {} @{}{}: {}",
            r.hot.cost,
            r.hot.frequency,
            r.hot.cost / r.hot.frequency.max(1),
            r.thread,
            r.position,
            at,
            r.events.join(", ")
        )?;
    }
    Ok(())
}
