//! `wpp ppp …`: preferential path profiling plans.

use super::paths::{emit, Numbered};
use crate::input::read_cfgs;
use anyhow::Context;
use serde::Serialize;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use wpp_paths::chords::SpanningTree;
use wpp_paths::coding::{entropy, PppModel};
use wpp_paths::ppp::InterestingFile;
use wpp_paths::{Instrumentation, PppPlan};

/// Subcommands of `wpp ppp`.
#[derive(clap::Subcommand)]
pub enum Command {
    /// Compute PPP weights for interesting paths: weights, ids, interval and Γ.
    Plan {
        /// CFGs: a JSON CFG file, or a recording or profile (its embedded CFGs).
        cfg: PathBuf,
        /// Interesting paths: `{"functions":[{"name":..,"paths":[[node,..],..],"ids":[..]}]}`.
        #[arg(long)]
        interesting: PathBuf,
        /// Print the plan as JSON.
        #[arg(long)]
        json: bool,
    },
}

/// Runs a `wpp ppp` subcommand.
pub fn run(command: Command) -> anyhow::Result<()> {
    match command {
        Command::Plan {
            cfg,
            interesting,
            json,
        } => plan(&cfg, &interesting, json),
    }
}

#[derive(Serialize)]
struct PlanReport {
    name: String,
    interesting: usize,
    interval: u64,
    gamma: f64,
    entropy_bits: f64,
    instrumented_edges: usize,
    paths: Vec<PathReport>,
    weights: Vec<WeightReport>,
}

#[derive(Serialize)]
struct PathReport {
    nodes: String,
    bl_id: u64,
    ppp_id: u64,
}

#[derive(Serialize)]
struct WeightReport {
    edge: String,
    ppp: Option<i64>,
    bl: u64,
}

fn plan(cfg_path: &Path, paths_path: &Path, json: bool) -> anyhow::Result<()> {
    let text = crate::input::read_text(paths_path)?;
    let file: InterestingFile =
        serde_json::from_str(&text).with_context(|| format!("in {}", paths_path.display()))?;
    let mut reports = Vec::new();
    for cfg in read_cfgs(cfg_path, "ppp plan")? {
        let Some(entry) = file.functions.iter().find(|f| f.name == cfg.name) else {
            continue;
        };
        let f = Numbered::number(cfg)?;
        let paths = entry.resolve(&f.cfg, &f.dag, &f.bl)?;
        let plan = PppPlan::compute(&f.dag, &f.bl, &paths)?;
        reports.push(report(&f, &plan, &paths));
    }
    if reports.is_empty() {
        anyhow::bail!(
            "{} names no function of {}",
            paths_path.display(),
            cfg_path.display()
        );
    }
    if json {
        return emit(&(serde_json::to_string_pretty(&reports)? + "\n"));
    }
    let mut out = String::new();
    for r in &reports {
        writeln!(
            out,
            "{}: {} interesting paths, interval {}, Γ = {:.3}, H(D) = {:.3} bits, {} instrumented edges",
            r.name, r.interesting, r.interval, r.gamma, r.entropy_bits, r.instrumented_edges
        )?;
        for p in &r.paths {
            writeln!(out, "  ppp {:>6}  bl {:>6}  {}", p.ppp_id, p.bl_id, p.nodes)?;
        }
        for w in &r.weights {
            let ppp = w.ppp.map_or("⊥".to_owned(), |x| x.to_string());
            writeln!(out, "  {:<24} {ppp} ({})", w.edge, w.bl)?;
        }
    }
    emit(&out)
}

fn report(f: &Numbered, plan: &PppPlan, paths: &[wpp_paths::DagPath]) -> PlanReport {
    let tree = SpanningTree::build(&f.dag, &f.cfg, f.bl.increments());
    let inst = Instrumentation::plan(&f.dag, &f.cfg, &tree.increments(&f.dag, &plan.values()));
    let model = PppModel::new(&f.dag, &f.bl, plan, paths);
    // `resolve` may list a path twice; the plan keeps the first of each.
    let mut seen = std::collections::HashSet::new();
    let unique: Vec<_> = paths
        .iter()
        .filter(|p| seen.insert(p.edges.clone()))
        .collect();
    PlanReport {
        name: f.cfg.name.clone(),
        interesting: plan.ids.len(),
        interval: plan.interval,
        gamma: plan.gamma(),
        entropy_bits: entropy(
            plan.interval,
            unique.iter().map(|p| model.probability(&f.dag, p)),
        ),
        instrumented_edges: inst.instrumented_edges(),
        paths: unique
            .iter()
            .zip(plan.bl_ids.iter().zip(&plan.ids))
            .map(|(p, (&bl_id, &ppp_id))| PathReport {
                nodes: f.names(&p.nodes(&f.dag)).join(","),
                bl_id,
                ppp_id,
            })
            .collect(),
        weights: (0..f.dag.edge_count())
            .map(|i| {
                let e = wpp_paths::DagEdgeId(i as u32);
                WeightReport {
                    edge: f.edge_label(e),
                    ppp: plan.weights[i],
                    bl: f.bl.increment(e),
                }
            })
            .collect(),
    }
}
