//! `wpp cfg`: one function's control-flow graph as a recording, profile or CFG JSON file
//! carries it — blocks with their successors and source lines, entry, exits and cut points —
//! or as Graphviz DOT with Ball–Larus path weights (`--dot`, as `wpp paths dot`).

use std::fmt::Write as _;
use std::path::PathBuf;

use super::paths::{emit, Numbered};
use crate::input::{read_cfgs, read_program, sniff, Kind};

/// Arguments of `wpp cfg`.
#[derive(clap::Args)]
pub struct Args {
    /// A recording (`.wpp` or trace of a path mode), a bl/ppp profile, or a CFG JSON file.
    pub file: PathBuf,
    /// The function.
    #[arg(long)]
    pub function: String,
    /// Print Graphviz DOT with Ball–Larus edge increments.
    #[arg(long)]
    pub dot: bool,
}

/// Runs `wpp cfg`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let cfgs = read_cfgs(&args.file, "cfg")?;
    let names = cfgs.iter().map(|c| c.name.as_str());
    let cfg = &cfgs[crate::util::function_position(&args.file, &args.function, names)?];
    if args.dot {
        let f = Numbered::number(cfg.clone())?;
        return emit(&wpp_paths::dot::to_dot(&f.cfg, &f.dag, &f.bl, None));
    }
    // Source lines of blocks, where a recording's program database has them.
    let lines = match sniff(&args.file)? {
        Kind::CfgJson => Vec::new(),
        _ => read_program(&args.file, "cfg")?
            .functions
            .into_iter()
            .find(|f| f.name == cfg.name)
            .map(|f| f.block_lines)
            .unwrap_or_default(),
    };
    let paths = Numbered::number(cfg.clone())?.bl.path_count();
    let name = |n: wpp_paths::NodeId| cfg.node_name(n).to_owned();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}: {} blocks, {} edges, {paths} acyclic paths; entry {}; exits {}",
        cfg.name,
        cfg.nodes.len(),
        cfg.edges.len(),
        name(cfg.entry),
        cfg.exits
            .iter()
            .map(|&n| name(n))
            .collect::<Vec<_>>()
            .join(" ")
    );
    for (i, node) in cfg.nodes.iter().enumerate() {
        let succ: Vec<String> = cfg
            .edges
            .iter()
            .filter(|e| e.src.index() == i)
            .map(|e| name(e.dst))
            .collect();
        let line = lines
            .get(i)
            .filter(|&&l| l > 0)
            .map_or(String::new(), |l| format!(" (line {l})"));
        let cut = if cfg.cut_nodes.iter().any(|c| c.index() == i) {
            " [cut]"
        } else {
            ""
        };
        let _ = writeln!(out, "  {node}{line}{cut} -> {}", succ.join(" "));
    }
    for &e in &cfg.cut_edges {
        let edge = &cfg.edges[e.index()];
        let _ = writeln!(out, "  cut edge {} -> {}", name(edge.src), name(edge.dst));
    }
    emit(&out)
}
