//! `wpp profile diff`: the paths whose counts differ between two profiles of one program,
//! largest change first. Each count is also shown as a share of its profile's total, so runs
//! of different lengths compare with `--normalize` (sorted by the change of share instead).
//! The exit status is 0 whatever the differences, except with `--check` (1 if any path
//! differs, like cmp(1)), which is how `bench/check.sh` checks that a ppp profile's counts
//! are its bl profile's.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::PathBuf;

use anyhow::Context as _;
use serde::Serialize;

use super::read;
use crate::input::{blocks_of, numberings};

/// Arguments of `wpp profile diff`.
#[derive(clap::Args)]
pub struct Args {
    /// The first profile.
    a: PathBuf,
    /// The second profile.
    b: PathBuf,
    /// Print JSON (every differing path).
    #[arg(long)]
    json: bool,
    /// List at most this many differing paths.
    #[arg(long, default_value_t = 20)]
    top: usize,
    /// Sort by the change of each path's share of its profile's total, for runs of different
    /// lengths.
    #[arg(long)]
    normalize: bool,
    /// Exit with status 1 if any path's count differs.
    #[arg(long)]
    check: bool,
}

/// A path whose counts differ between two profiles.
#[derive(Serialize)]
struct DiffPath {
    function: String,
    id: u64,
    counts: [u64; 2],
    /// `counts[1] − counts[0]`.
    delta: i128,
    /// Each count as a fraction of its profile's total path executions.
    shares: [f64; 2],
    blocks: Vec<String>,
}

impl DiffPath {
    /// The sort key: the absolute change, of counts or of shares.
    fn change(&self, normalize: bool) -> f64 {
        if normalize {
            (self.shares[1] - self.shares[0]).abs()
        } else {
            self.delta.unsigned_abs() as f64
        }
    }
}

type Counts = BTreeMap<String, BTreeMap<u64, u64>>;

/// Every path whose counts differ, unsorted.
fn differing(ca: &Counts, cb: &Counts, blocks: impl Fn(&str, u64) -> Vec<String>) -> Vec<DiffPath> {
    let total = |c: &Counts| c.values().flat_map(|p| p.values()).sum::<u64>().max(1) as f64;
    let (ta, tb) = (total(ca), total(cb));
    let none = BTreeMap::new();
    let names: BTreeSet<&String> = ca.keys().chain(cb.keys()).collect();
    let mut out = Vec::new();
    for name in names {
        let pa = ca.get(name).unwrap_or(&none);
        let pb = cb.get(name).unwrap_or(&none);
        let ids: BTreeSet<u64> = pa.keys().chain(pb.keys()).copied().collect();
        for id in ids {
            let counts = [pa.get(&id), pb.get(&id)].map(|c| c.copied().unwrap_or(0));
            if counts[0] != counts[1] {
                out.push(DiffPath {
                    function: name.clone(),
                    id,
                    counts,
                    delta: i128::from(counts[1]) - i128::from(counts[0]),
                    shares: [counts[0] as f64 / ta, counts[1] as f64 / tb],
                    blocks: blocks(name, id),
                });
            }
        }
    }
    out
}

/// Runs `wpp profile diff`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let (a, b) = (&args.a, &args.b);
    let (fa, fb) = (read(a)?, read(b)?);
    fa.check_same_paths(&fb).with_context(|| {
        format!(
            "cannot compare {} with {} (path ids agree only between profiles of one build)",
            a.display(),
            b.display()
        )
    })?;
    let (ca, cb) = (fa.path_counts(), fb.path_counts());
    let nums = numberings(&fa);
    let mut differ = differing(&ca.functions, &cb.functions, |f, id| {
        blocks_of(nums.get(f), id)
    });
    differ.sort_by(|x, y| {
        let (cx, cy) = (x.change(args.normalize), y.change(args.normalize));
        cy.total_cmp(&cx)
            .then_with(|| (&x.function, x.id).cmp(&(&y.function, y.id)))
    });
    if args.json {
        crate::util::print_json(&differ)?;
    } else {
        print_text(&differ, &ca.functions, args.top)?;
    }
    if args.check && !differ.is_empty() {
        anyhow::bail!(
            "{} and {} differ on {} paths",
            a.display(),
            b.display(),
            differ.len()
        );
    }
    Ok(())
}

fn print_text(differ: &[DiffPath], ca: &Counts, top: usize) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    if differ.is_empty() {
        let paths: usize = ca.values().map(BTreeMap::len).sum();
        return writeln!(
            out,
            "same path counts: {paths} paths in {} functions",
            ca.len()
        );
    }
    writeln!(
        out,
        "{:>14} {:>14} {:>15} {:>8}  {:>7} → {:<7}  path",
        "a", "b", "Δ", "Δ%", "share a", "share b"
    )?;
    for d in differ.iter().take(top) {
        let rel = match d.counts[0] {
            0 => "new".to_owned(),
            a => format!("{:+.1}%", 100.0 * d.delta as f64 / a as f64),
        };
        writeln!(
            out,
            "{:>14} {:>14} {:>+15} {:>8}  {:>6.2}% → {:<6.2}%  {} path {}  {}",
            d.counts[0],
            d.counts[1],
            d.delta,
            rel,
            100.0 * d.shares[0],
            100.0 * d.shares[1],
            d.function,
            d.id,
            d.blocks.join(" ")
        )?;
    }
    if differ.len() > top {
        writeln!(out, "… {} more (--top)", differ.len() - top)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(paths: &[(&str, u64, u64)]) -> Counts {
        let mut c = Counts::new();
        for &(f, id, n) in paths {
            c.entry(f.to_owned()).or_default().insert(id, n);
        }
        c
    }

    #[test]
    fn differences_with_deltas_and_shares() {
        let a = counts(&[("f", 0, 10), ("f", 1, 30), ("g", 0, 60)]);
        let b = counts(&[("f", 0, 10), ("f", 1, 80), ("g", 2, 10)]);
        let mut d = differing(&a, &b, |_, _| Vec::new());
        d.sort_by(|x, y| y.change(false).total_cmp(&x.change(false)));
        let got: Vec<(&str, u64, i128)> = d
            .iter()
            .map(|p| (p.function.as_str(), p.id, p.delta))
            .collect();
        assert_eq!(got, [("g", 0, -60), ("f", 1, 50), ("g", 2, 10)]);
        assert_eq!(d[1].shares, [0.3, 0.8]);
        // Normalised: g 0 loses 60% of the total, f 1 gains 50%, g 2 gains 10%.
        d.sort_by(|x, y| y.change(true).total_cmp(&x.change(true)));
        assert_eq!((d[0].function.as_str(), d[0].id), ("g", 0));
    }
}
