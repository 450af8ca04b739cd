//! `wpp profile show|residual|diff|merge`: read the path profile an instrumented program wrote
//! (`wpp cc --mode bl`; format in `wpp_abi::profile`). Profiles are self-contained: they carry
//! each function's CFG with its cut points, so paths are decoded into blocks without the
//! program.

use serde::Serialize;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use wpp_abi::profile::ProfileFile;

use crate::input::{blocks_of, numberings};

mod diff;
mod merge;

/// Subcommands of `wpp profile`.
#[derive(clap::Subcommand)]
pub enum Command {
    /// Print a profile: per function, its executed paths with counts and blocks.
    ///
    /// Blocks are named by id: `b3` is block 3; a leading `b3'` is the part of block 3 after
    /// its call (a path that starts at a call); `b3[2]` is block 3 entered by an edge that has
    /// a parallel one (a switch whose cases share a target): the edge's position among the
    /// previous block's successors, from 0, in the order `wpp cfg` lists them. Two paths never
    /// print the same blocks.
    Show {
        /// The profile (`PROGRAM.PID.blprof` by default).
        profile: PathBuf,
        /// Print JSON.
        #[arg(long)]
        json: bool,
        /// Show at most this many paths per function (hottest first).
        #[arg(long, default_value_t = 20)]
        top: usize,
    },
    /// List executed paths outside an interesting set (PPP §1's residual paths): the
    /// uninteresting paths of a `ppp` profile, or the paths of a `bl` profile that did not
    /// run in the `--interesting` profile. Blocks are named as `wpp profile show` names them.
    Residual {
        /// The profile of the run to examine.
        profile: PathBuf,
        /// For a `bl` profile: the interesting set, another `bl` profile whose executed paths
        /// are interesting (e.g. a test suite's run).
        #[arg(long)]
        interesting: Option<PathBuf>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Compare the path counts of two profiles of one program, path by path (a `ppp` profile
    /// counts as its interesting and uninteresting executions together, so a `bl` and a `ppp`
    /// profile of the same deterministic run must be equal): the paths whose counts differ,
    /// largest change first, with each count's share of its profile's total.
    Diff(diff::Args),
    /// Sum the profiles of one program (e.g. the files its processes left, one per PID, or a
    /// test suite's) into one: every path's count is the sum of its counts. The profiles must
    /// come from the same instrumented program and mode. Streams: memory is the merged profile
    /// and one input, whatever the number of inputs.
    Merge(merge::Args),
}

#[derive(Serialize)]
struct ShownPath {
    id: u64,
    count: u64,
    /// Blocks along the path (`b3`, …); a leading `b3'` is the part of block 3 after its
    /// call (a path starting at a cut); `b3[2]`, block 3 entered by the previous block's
    /// successor 2 where another successor is block 3 too (parallel edges).
    blocks: Vec<String>,
}

#[derive(Serialize)]
struct ShownFunction {
    name: String,
    file: Option<String>,
    line: Option<u32>,
    paths_total: u64,
    paths_executed: usize,
    executions: u64,
    paths: Vec<ShownPath>,
}

pub(super) fn read(path: &Path) -> anyhow::Result<ProfileFile> {
    crate::input::read_profile(path, "profile")
}

/// Runs a `wpp profile` subcommand.
pub fn run(command: Command) -> anyhow::Result<()> {
    match command {
        Command::Merge(args) => merge::run(args),
        Command::Diff(args) => diff::run(args),
        Command::Show { profile, json, top } => {
            let file = read(&profile)?;
            // A PPP profile shows as its counts by Ball–Larus id.
            let counts = file.path_counts();
            let nums = numberings(&file);
            let mut shown = Vec::new();
            for f in &file.program.program.functions {
                let Some(paths) = counts.functions.get(&f.name) else {
                    continue;
                };
                let mut ps: Vec<(u64, u64)> = paths.iter().map(|(&i, &c)| (i, c)).collect();
                ps.sort_by_key(|&(i, c)| (std::cmp::Reverse(c), i));
                let n = nums.get(&f.name);
                shown.push(ShownFunction {
                    name: f.name.clone(),
                    file: f.file.clone(),
                    line: f.line,
                    paths_total: n.map_or(0, |(_, bl)| bl.path_count()),
                    paths_executed: ps.len(),
                    executions: ps.iter().map(|p| p.1).sum(),
                    paths: ps
                        .iter()
                        .take(top)
                        .map(|&(id, count)| ShownPath {
                            id,
                            count,
                            blocks: blocks_of(n, id),
                        })
                        .collect(),
                });
            }
            shown.sort_by_key(|f| std::cmp::Reverse(f.executions));
            if json {
                return crate::util::print_json(&shown);
            }
            let mut out = std::io::stdout().lock();
            writeln!(
                out,
                "profile of a {} run: {} functions ran",
                file.program.mode.name(),
                shown.len()
            )?;
            if let Some(run) = &file.run {
                let status = run.exit_status.map_or_else(
                    || "no exit status: a snapshot, or it died of a signal or exec'd".into(),
                    |s| format!("exit status {s}"),
                );
                let id = run
                    .id
                    .map_or_else(String::new, |id| format!(", run id {id:032x}"));
                writeln!(out, "run: {} ({status}{id})", run.command_text())?;
            }
            for f in &shown {
                let loc = match (&f.file, f.line) {
                    (Some(file), Some(l)) => format!(" ({file}:{l})"),
                    _ => String::new(),
                };
                writeln!(
                    out,
                    "{}{}: {} executions, {} of {} paths",
                    f.name, loc, f.executions, f.paths_executed, f.paths_total
                )?;
                for p in &f.paths {
                    write_path(&mut out, p)?;
                }
            }
            Ok(())
        }
        Command::Residual {
            profile,
            interesting,
            json,
        } => {
            let file = read(&profile)?;
            let nums = numberings(&file);
            let mut out: BTreeMap<String, Vec<ShownPath>> = BTreeMap::new();
            if let Some(ppp) = &file.ppp {
                for (name, fp) in &ppp.functions {
                    for (&id, &count) in &fp.uninteresting {
                        let blocks = blocks_of(nums.get(name), id);
                        out.entry(name.clone())
                            .or_default()
                            .push(ShownPath { id, count, blocks });
                    }
                }
            } else {
                let Some(interesting) = &interesting else {
                    anyhow::bail!(
                        "{} is a bl profile: give the interesting set to compare it with \
                         (--interesting PROFILE); a ppp profile carries its own",
                        profile.display()
                    );
                };
                let base = read(interesting)?;
                for name in file.bl.functions.keys() {
                    let known: Vec<u64> = base
                        .bl
                        .functions
                        .get(name)
                        .map(|m| m.keys().copied().collect())
                        .unwrap_or_default();
                    for (id, count) in file.bl.residual(name, &known) {
                        let blocks = blocks_of(nums.get(name), id);
                        out.entry(name.clone())
                            .or_default()
                            .push(ShownPath { id, count, blocks });
                    }
                }
            }
            if json {
                return crate::util::print_json(&out);
            }
            let total: usize = out.values().map(Vec::len).sum();
            let mut stdout = std::io::stdout().lock();
            writeln!(
                stdout,
                "{total} executed paths are not in the interesting set"
            )?;
            for (name, ps) in &out {
                writeln!(stdout, "{name}:")?;
                for p in ps {
                    write_path(&mut stdout, p)?;
                }
            }
            Ok(())
        }
    }
}

/// One line of a path listing: id, count and decoded blocks.
fn write_path(out: &mut impl Write, p: &ShownPath) -> std::io::Result<()> {
    writeln!(
        out,
        "  path {:>6} x{:<10} {}",
        p.id,
        p.count,
        p.blocks.join(" ")
    )
}
