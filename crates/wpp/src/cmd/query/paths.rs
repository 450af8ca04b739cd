//! `wpp paths …`: Ball–Larus numbering of the functions in a JSON CFG file, a recording or a
//! profile (the CFGs they embed).

use anyhow::{bail, Context};
use serde::Serialize;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use wpp_paths::chords::{EdgeAction, SpanningTree};
use wpp_paths::dag::{DagEdgeKind, DagNodeKind};
use wpp_paths::ppp::InterestingFile;
use wpp_paths::{number_with_cuts, BallLarus, Cfg, Dag, Instrumentation, PathId, PppPlan};

use crate::input::{read_cfgs, read_text};

/// Subcommands of `wpp paths`.
#[derive(clap::Subcommand)]
pub enum Command {
    /// Number every function's acyclic paths: path counts, increments and chords.
    Number {
        /// CFGs: a JSON CFG file (format in the wpp-paths `cfg` module docs), or a recording or
        /// profile, whose embedded CFGs are used.
        cfg: PathBuf,
        /// Print every edge's increments as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Print the path with a given Ball–Larus id.
    Decode {
        /// CFGs: a JSON CFG file, or a recording or profile (its embedded CFGs).
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
        /// CFGs: a JSON CFG file, or a recording or profile (its embedded CFGs).
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
        /// CFGs: a JSON CFG file, or a recording or profile (its embedded CFGs).
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
            if id >= f.bl.path_count() {
                let n = f.bl.path_count();
                let msg = format!("`{function}` has paths 0 to {}; {id} is not one", n - 1);
                return Err(crate::util::NotInFile(msg).into());
            }
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
            let Ok(id) = f.bl.encode_nodes(&f.dag, &nodes) else {
                bail!(
                    "{} is not an acyclic path of `{function}`: a path starts at the entry, a loop \
                     header, a cut node or a cut edge's target, and ends at an exit, a backedge's \
                     source, a cut node or a cut edge's source",
                    path.join(",")
                )
            };
            emit(&format!("{id}\n"))
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
        let cfgs = read_cfgs(path, "paths")?;
        let names = cfgs.iter().map(|c| c.name.as_str());
        let at = crate::util::function_position(path, function, names)?;
        let cfg = cfgs.into_iter().nth(at).expect("found");
        Self::number(cfg)
    }

    /// Numbers `cfg`.
    pub fn number(mut cfg: Cfg) -> anyhow::Result<Numbered> {
        let (dag, bl) = number_with_cuts(&mut cfg)?;
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
        let text = read_text(paths_file)?;
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
        let name = |n| match self.dag.node(n) {
            DagNodeKind::Block(v) => self.cfg.node_name(v).to_owned(),
            DagNodeKind::CutTail(v) => format!("{}'", self.cfg.node_name(v)),
            DagNodeKind::Entry => "ENTRY".to_owned(),
            DagNodeKind::Exit => "EXIT".to_owned(),
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
    /// The runtime actions with chord placement (wpp-paths `chords` module docs).
    instrumentation: Instrumentation,
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
    for cfg in read_cfgs(path, "paths number")? {
        let given_cuts = cfg.cut_nodes.len();
        let f = Numbered::number(cfg)?;
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
            added_cut_nodes: f.names(&f.cfg.cut_nodes[given_cuts..]),
            instrumented_edges_full: full.instrumented_edges(),
            instrumented_edges_chords: placed.instrumented_edges(),
            dag_edges,
            instrumentation: placed,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn example(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../wpp-paths/examples")
            .join(name)
    }

    #[test]
    fn loads_numbers_and_plans_the_figure3_example() {
        let f = Numbered::load(&example("fig3.json"), "fig3").unwrap();
        assert_eq!(f.bl.path_count(), 6);
        let plan = f.plan(&example("fig3_paths.json")).unwrap();
        assert_eq!(
            (plan.ids.clone(), plan.bl_ids.clone()),
            (vec![0, 1, 2], vec![0, 1, 5])
        );
        assert_eq!(f.edge_label(wpp_paths::DagEdgeId(0)), "ENTRY->s");
    }

    #[test]
    fn unknown_function_and_missing_file_are_errors() {
        let e = Numbered::load(&example("fig3.json"), "nope").err().unwrap();
        assert!(e.to_string().contains("no function `nope`"), "{e}");
        assert!(read_cfgs(&example("missing.json"), "paths").is_err());
        let f = Numbered::load(&example("fig3.json"), "fig3").unwrap();
        assert!(f.plan(&example("lemma3_paths.json")).is_err());
    }
}
