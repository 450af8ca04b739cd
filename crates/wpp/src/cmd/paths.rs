//! `wpp paths …`: Ball–Larus numbering of the functions in a JSON CFG file.

use anyhow::{bail, Context};
use serde::Serialize;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use wpp_paths::chords::{EdgeAction, SpanningTree};
use wpp_paths::dag::DagEdgeKind;
use wpp_paths::ppp::InterestingFile;
use wpp_paths::{number_with_cuts, BallLarus, Cfg, CfgFile, Dag, Instrumentation, PathId, PppPlan};

/// Subcommands of `wpp paths`.
#[derive(clap::Subcommand)]
pub enum Command {
    /// Number every function's acyclic paths: path counts, increments and chords.
    Number {
        /// JSON CFG file (format in the wpp-paths `cfg` module docs).
        cfg: PathBuf,
        /// Print every edge's increments as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Print the path with a given Ball–Larus id.
    Decode {
        /// JSON CFG file.
        cfg: PathBuf,
        /// Function name.
        #[arg(long)]
        function: String,
        /// Path id.
        #[arg(long)]
        id: u64,
    },
    /// Print the Ball–Larus id of a path given as node names.
    Encode {
        /// JSON CFG file.
        cfg: PathBuf,
        /// Function name.
        #[arg(long)]
        function: String,
        /// Node names, comma separated (e.g. `s,a,c,d,t`).
        #[arg(long, value_delimiter = ',', required = true)]
        path: Vec<String>,
    },
    /// Draw a function's DAG as Graphviz DOT with Ball–Larus (and PPP) weights.
    Dot {
        /// JSON CFG file.
        cfg: PathBuf,
        /// Function name.
        #[arg(long)]
        function: String,
        /// Interesting-path file: label edges `PPP (BL)` as in the paper's Figure 3(c).
        #[arg(long)]
        ppp: Option<PathBuf>,
    },
}

/// Runs a `wpp paths` subcommand.
pub fn run(command: Command) -> anyhow::Result<()> {
    match command {
        Command::Number { cfg, json } => number(&cfg, json),
        Command::Decode { cfg, function, id } => {
            let f = Numbered::load(&cfg, &function)?;
            let path = f.bl.decode(&f.dag, PathId(id))?;
            emit(&(f.names(&path.nodes(&f.dag)).join(",") + "\n"))
        }
        Command::Encode {
            cfg,
            function,
            path,
        } => {
            let f = Numbered::load(&cfg, &function)?;
            let nodes = path
                .iter()
                .map(|n| {
                    f.cfg
                        .node_by_name(n)
                        .with_context(|| format!("`{n}` is not a node of `{function}`"))
                })
                .collect::<anyhow::Result<Vec<_>>>()?;
            emit(&format!("{}\n", f.bl.encode_nodes(&f.dag, &nodes)?))
        }
        Command::Dot { cfg, function, ppp } => {
            let f = Numbered::load(&cfg, &function)?;
            let plan = match ppp {
                Some(p) => Some(f.plan(&p)?),
                None => None,
            };
            emit(&wpp_paths::dot::to_dot(
                &f.cfg,
                &f.dag,
                &f.bl,
                plan.as_ref(),
            ))
        }
    }
}

/// Reads and validates every function of a JSON CFG file.
pub fn load_cfgs(path: &Path) -> anyhow::Result<Vec<Cfg>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    CfgFile::parse(&text).with_context(|| format!("in {}", path.display()))
}

/// One function with its DAG and numbering (cut where the path count would overflow).
pub struct Numbered {
    /// The CFG, with any cut nodes added to keep the count below 2^64.
    pub cfg: Cfg,
    /// Its DAG.
    pub dag: Dag,
    /// Its numbering.
    pub bl: BallLarus,
}

impl Numbered {
    /// Loads `function` from the file at `path` and numbers it.
    pub fn load(path: &Path, function: &str) -> anyhow::Result<Numbered> {
        let cfgs = load_cfgs(path)?;
        let Some(cfg) = cfgs.into_iter().find(|c| c.name == function) else {
            bail!("{} has no function `{function}`", path.display())
        };
        Self::number(&cfg)
    }

    /// Numbers `cfg`.
    pub fn number(cfg: &Cfg) -> anyhow::Result<Numbered> {
        let (cfg, dag, bl) = number_with_cuts(cfg)?;
        Ok(Numbered { cfg, dag, bl })
    }

    /// Node names.
    pub fn names(&self, nodes: &[wpp_paths::NodeId]) -> Vec<String> {
        nodes
            .iter()
            .map(|&n| self.cfg.node_name(n).to_owned())
            .collect()
    }

    /// The PPP plan for this function's entry in an interesting-path file.
    pub fn plan(&self, paths_file: &Path) -> anyhow::Result<PppPlan> {
        let text = std::fs::read_to_string(paths_file)
            .with_context(|| format!("reading {}", paths_file.display()))?;
        let file: InterestingFile =
            serde_json::from_str(&text).with_context(|| format!("in {}", paths_file.display()))?;
        let Some(entry) = file.functions.iter().find(|f| f.name == self.cfg.name) else {
            bail!(
                "{} lists no paths for `{}`",
                paths_file.display(),
                self.cfg.name
            )
        };
        let paths = entry.resolve(&self.cfg, &self.dag, &self.bl)?;
        Ok(PppPlan::compute(&self.dag, &self.bl, &paths)?)
    }

    /// "src→dst" with names, ENTRY and EXIT for the virtual nodes.
    pub fn edge_label(&self, e: wpp_paths::DagEdgeId) -> String {
        let d = self.dag.edge(e);
        let name = |n| match self.dag.cfg_node(n) {
            Some(v) => self.cfg.node_name(v).to_owned(),
            None if n == wpp_paths::dag::ENTRY => "ENTRY".to_owned(),
            None => "EXIT".to_owned(),
        };
        format!("{}->{}", name(d.src), name(d.dst))
    }
}

#[derive(Serialize)]
struct FunctionReport {
    name: String,
    blocks: usize,
    edges: usize,
    paths: u64,
    backedges: usize,
    added_cut_nodes: Vec<String>,
    instrumented_edges_full: usize,
    instrumented_edges_chords: usize,
    dag_edges: Vec<EdgeReport>,
}

#[derive(Serialize)]
struct EdgeReport {
    edge: String,
    kind: &'static str,
    increment: u64,
    chord: bool,
    chord_increment: i64,
}

fn number(path: &Path, json: bool) -> anyhow::Result<()> {
    let mut reports = Vec::new();
    for cfg in load_cfgs(path)? {
        let f = Numbered::number(&cfg)?;
        let tree = SpanningTree::build(&f.dag, &f.cfg, f.bl.increments());
        let chords = tree.increments(&f.dag, f.bl.increments());
        let full = Instrumentation::plan(&f.dag, &f.cfg, f.bl.increments());
        let placed = Instrumentation::plan(&f.dag, &f.cfg, &chords);
        let dag_edges = (0..f.dag.edge_count())
            .map(|i| {
                let e = wpp_paths::DagEdgeId(i as u32);
                EdgeReport {
                    edge: f.edge_label(e),
                    kind: match f.dag.edge(e).kind {
                        DagEdgeKind::Cfg(_) => "cfg",
                        DagEdgeKind::Start => "start",
                        DagEdgeKind::End => "end",
                    },
                    increment: f.bl.increment(e),
                    chord: tree.is_chord(e),
                    chord_increment: chords[i] as i64,
                }
            })
            .collect();
        reports.push(FunctionReport {
            name: f.cfg.name.clone(),
            blocks: f.cfg.nodes.len(),
            edges: f.cfg.edges.len(),
            paths: f.bl.path_count(),
            backedges: full
                .edges
                .iter()
                .filter(|a| matches!(a, EdgeAction::Restart(_)))
                .count(),
            added_cut_nodes: f.names(&f.cfg.cut_nodes[cfg.cut_nodes.len()..]),
            instrumented_edges_full: full.instrumented_edges(),
            instrumented_edges_chords: placed.instrumented_edges(),
            dag_edges,
        });
    }
    if json {
        return emit(&(serde_json::to_string_pretty(&reports)? + "\n"));
    }
    let mut out = String::new();
    for r in &reports {
        writeln!(
            out,
            "{}: {} blocks, {} edges, {} paths, {} backedge/cut edges, instrumented edges {} (all) -> {} (chords)",
            r.name, r.blocks, r.edges, r.paths, r.backedges, r.instrumented_edges_full, r.instrumented_edges_chords
        )?;
        if !r.added_cut_nodes.is_empty() {
            writeln!(
                out,
                "  cut to stay below 2^64 paths at: {}",
                r.added_cut_nodes.join(",")
            )?;
        }
        for e in &r.dag_edges {
            let chord = if e.chord {
                format!("  chord {:+}", e.chord_increment)
            } else {
                String::new()
            };
            writeln!(
                out,
                "  {:<24} {:<5} inc {}{chord}",
                e.edge, e.kind, e.increment
            )?;
        }
    }
    emit(&out)
}

/// Writes `text` to standard output; a closed pipe (`| head`) is not an error.
pub fn emit(text: &str) -> anyhow::Result<()> {
    use std::io::Write;
    match std::io::stdout().lock().write_all(text.as_bytes()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => Ok(r?),
    }
}
