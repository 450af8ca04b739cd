//! Path profiles: Ball–Larus counts per path id, PPP counts per interesting path, merging
//! runs, and the residual report (PPP §1: paths that ran but are not in the interesting set,
//! e.g. untested paths when the interesting set is a test suite's profile).
//!
//! # Compact format
//!
//! A profile file is the 8-byte magic `b"WPPPROF\0"`, one version byte (currently 1), one kind
//! byte (`b'B'` Ball–Larus, `b'P'` PPP), then the profile in postcard (varint integers; a
//! map is its length then its entries in key order). For example a Ball–Larus profile of one
//! function `f` with path 5 run 3 times is
//! `57 50 50 50 52 4F 46 00 | 01 | 42 | 01 01 66 01 05 03`
//! (one function; name of length 1, `f`; one path; id 5; count 3). Every profile is also
//! readable and writable as JSON through serde.

use crate::error::{Error, Result};
use crate::ids::PathId;
use crate::ppp::PppPlan;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

const MAGIC: &[u8; 8] = b"WPPPROF\0";
const VERSION: u8 = 1;

/// Ball–Larus profile: per function, path id → execution count.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlProfile {
    /// Function name → (path id → count).
    pub functions: BTreeMap<String, BTreeMap<u64, u64>>,
}

impl BlProfile {
    /// Adds `count` executions of path `id` of `function`.
    pub fn record(&mut self, function: &str, id: PathId, count: u64) {
        let slot = self
            .functions
            .entry(function.to_owned())
            .or_default()
            .entry(id.0)
            .or_default();
        *slot = slot.saturating_add(count);
    }

    /// Adds every count of `other` (counts saturate at `u64::MAX`). A function's name is
    /// copied only when it is new, not per path: merging thousands of profiles of one program
    /// adds counts to functions already there.
    pub fn merge(&mut self, other: &BlProfile) {
        for (f, paths) in &other.functions {
            let ours = match self.functions.get_mut(f) {
                Some(ours) => ours,
                None => self.functions.entry(f.clone()).or_default(),
            };
            for (&id, &n) in paths {
                let slot = ours.entry(id).or_default();
                *slot = slot.saturating_add(n);
            }
        }
    }

    /// Paths of `function` that ran but are not in `interesting` (Ball–Larus ids), with
    /// their counts, in id order.
    pub fn residual(&self, function: &str, interesting: &[u64]) -> Vec<(u64, u64)> {
        let Some(paths) = self.functions.get(function) else {
            return Vec::new();
        };
        paths
            .iter()
            .filter(|(id, _)| !interesting.contains(id))
            .map(|(&id, &n)| (id, n))
            .collect()
    }

    /// The compact encoding (see the module docs).
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        encode(b'B', self)
    }

    /// Reads the compact encoding.
    pub fn from_bytes(bytes: &[u8]) -> Result<BlProfile> {
        decode(b'B', bytes)
    }
}

/// PPP profile of one function: counts indexed like the plan's interesting paths, plus the
/// uninteresting paths seen (by Ball–Larus id).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PppFunctionProfile {
    /// Ball–Larus ids of the interesting paths (the plan's `bl_ids`), identifying the plan.
    pub interesting: Vec<u64>,
    /// Count per interesting path, same order.
    pub counts: Vec<u64>,
    /// Uninteresting executions: Ball–Larus id → count.
    pub uninteresting: BTreeMap<u64, u64>,
}

/// PPP profile: per function.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PppProfile {
    /// Function name → its profile.
    pub functions: BTreeMap<String, PppFunctionProfile>,
}

impl PppProfile {
    /// Records one path end with PPP register `ppp` and Ball–Larus register `bl_id`, the
    /// runtime's check (§2.3): a slot whose stored id matches counts as interesting.
    pub fn record(&mut self, function: &str, plan: &PppPlan, ppp: u64, bl_id: PathId) {
        let f = self
            .functions
            .entry(function.to_owned())
            .or_insert_with(|| PppFunctionProfile {
                interesting: plan.bl_ids.clone(),
                counts: vec![0; plan.bl_ids.len()],
                uninteresting: BTreeMap::new(),
            });
        match plan.classify(ppp, bl_id) {
            Some(i) => f.counts[i] = f.counts[i].saturating_add(1),
            None => {
                let n = f.uninteresting.entry(bl_id.0).or_default();
                *n = n.saturating_add(1);
            }
        }
    }

    /// Adds `other`'s counts; a function planned with a different interesting set is an
    /// error (its counters mean different paths).
    pub fn merge(&mut self, other: &PppProfile) -> Result<()> {
        for (name, theirs) in &other.functions {
            let Some(ours) = self.functions.get_mut(name) else {
                self.functions.insert(name.clone(), theirs.clone());
                continue;
            };
            if ours.interesting != theirs.interesting
                || theirs.counts.len() != theirs.interesting.len()
            {
                return Err(Error::Name(format!(
                    "function `{name}`: PPP profiles of different plans"
                )));
            }
            for (a, b) in ours.counts.iter_mut().zip(&theirs.counts) {
                *a = a.saturating_add(*b);
            }
            for (&id, &n) in &theirs.uninteresting {
                let slot = ours.uninteresting.entry(id).or_default();
                *slot = slot.saturating_add(n);
            }
        }
        Ok(())
    }

    /// The residual report: per function, the uninteresting paths that ran, by count
    /// (highest first, then id).
    pub fn residual(&self) -> BTreeMap<String, Vec<(u64, u64)>> {
        self.functions
            .iter()
            .filter(|(_, f)| !f.uninteresting.is_empty())
            .map(|(name, f)| {
                let mut v: Vec<(u64, u64)> =
                    f.uninteresting.iter().map(|(&id, &n)| (id, n)).collect();
                v.sort_by_key(|&(id, n)| (std::cmp::Reverse(n), id));
                (name.clone(), v)
            })
            .collect()
    }

    /// The compact encoding (see the module docs).
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        encode(b'P', self)
    }

    /// Reads the compact encoding, rejecting a function whose counts do not match its
    /// interesting paths one for one (see [`validate`](Self::validate)).
    pub fn from_bytes(bytes: &[u8]) -> Result<PppProfile> {
        let p: PppProfile = decode(b'P', bytes)?;
        p.validate()?;
        Ok(p)
    }

    /// Checks that every function has exactly one count per interesting path; a profile read
    /// from JSON should be checked with this before use ([`record`](Self::record) and
    /// [`merge`](Self::merge) rely on it).
    pub fn validate(&self) -> Result<()> {
        for (name, f) in &self.functions {
            if f.counts.len() != f.interesting.len() {
                return Err(Error::Name(format!(
                    "PPP profile: function `{name}` has {} counts for {} interesting paths",
                    f.counts.len(),
                    f.interesting.len()
                )));
            }
        }
        Ok(())
    }
}

fn encode<T: Serialize>(kind: u8, value: &T) -> Result<Vec<u8>> {
    let mut out = MAGIC.to_vec();
    out.extend([VERSION, kind]);
    Ok(postcard::to_extend(value, out)?)
}

fn decode<T: for<'a> Deserialize<'a>>(kind: u8, bytes: &[u8]) -> Result<T> {
    let header = |what: &str| Error::Name(format!("compact profile: {what}"));
    let rest = bytes
        .strip_prefix(MAGIC.as_slice())
        .ok_or_else(|| header("missing magic WPPPROF"))?;
    match rest {
        [VERSION, k, body @ ..] if *k == kind => Ok(postcard::from_bytes(body)?),
        [VERSION, k, ..] => Err(header(&format!("kind byte {k:#04x}, expected {kind:#04x}"))),
        [v, ..] => Err(header(&format!("version {v}, this build reads {VERSION}"))),
        [] => Err(header("truncated header")),
    }
}
