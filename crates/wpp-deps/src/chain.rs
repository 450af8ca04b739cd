//! Dependence chains (Tallam and Gupta §5, Figure 21). A chain `u0 → (d1, u1) → … → (dn, un)
//! → d(n+1)` says: load `u0` read a value stored by `d1`; the statement of `d1` used a value
//! loaded by `u1`, which `d2` stored; and so on. `RecoverChain` checks whether one instance of
//! `u0` starts such a chain, `ChainFreq` counts the instances of `u0` that do.
//!
//! A *use at statement d* is a load of the same function, block and source line as the store
//! `d` that precedes it in the block (so it ran in the same execution of the block, before
//! `d`); its instance for `d(k)` is its latest instance when `d(k)` ran. The paper's statements
//! are three-address code, where the instance of a use at `d` is `d`'s own timestamp
//! (`t_{i+1} = t_i`); at source level a line is the statement. Loads on lines without debug
//! information (line 0) are never uses at a statement.
//!
//! [`ChainIndex`] holds the recovered dependences of a whole run in memory (a few words per
//! load and store instance), fine for tests and bench prefixes; the listing commands stream.

use crate::at::Run;
use crate::lastwriter::{Instance, Writer};
use crate::memdb::{AccessKind, MemoryDb};
use crate::recover::{RecoverError, Recovery};
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;

/// The dependences of a run, indexed for chain queries.
pub struct ChainIndex {
    /// Per load instance: the store instances it depends on.
    deps: FxHashMap<Instance, Vec<Instance>>,
    /// Per store instance: the instances of the uses at its statement.
    uses: FxHashMap<Instance, Vec<Instance>>,
    /// Executions per instruction.
    instances: Vec<u64>,
}

/// Per store id: the load ids that are uses at its statement (see the module docs).
pub fn statement_uses(db: &MemoryDb) -> Vec<Vec<u32>> {
    let ins = &db.instructions;
    (0..ins.len())
        .map(|d| {
            let s = &ins[d];
            if s.kind != AccessKind::Store || s.line == 0 {
                return Vec::new();
            }
            (0..d)
                .rev()
                .take_while(|&u| ins[u].function == s.function && ins[u].block == s.block)
                .filter(|&u| ins[u].kind == AccessKind::Load && ins[u].line == s.line)
                .map(|u| u as u32)
                .collect()
        })
        .collect()
}

impl ChainIndex {
    /// Replays a run's accesses.
    pub fn build<T: Into<Run>, E>(
        db: &MemoryDb,
        runs: impl IntoIterator<Item = Result<T, E>>,
    ) -> Result<ChainIndex, RecoverError>
    where
        RecoverError: From<E>,
    {
        let at_statement = statement_uses(db);
        let mut r = Recovery::new(db);
        let mut deps = FxHashMap::default();
        let mut uses = FxHashMap::default();
        for run in runs {
            let run: Run = run?.into();
            r.set_thread(run.thread);
            for a in run.accesses {
                let (inst, ds) = r.step(a)?;
                let stores: Vec<Instance> = ds
                    .iter()
                    .filter_map(|d| match d.store {
                        Writer::Store(s) => Some(s),
                        Writer::External => None,
                    })
                    .collect();
                if !stores.is_empty() {
                    deps.insert(inst, stores);
                }
                let us = &at_statement[a.id as usize];
                if !us.is_empty() {
                    let n = r.instances();
                    let v: Vec<Instance> = us
                        .iter()
                        .filter(|&&u| n[u as usize] > 0)
                        .map(|&u| Instance {
                            id: u,
                            n: n[u as usize],
                        })
                        .collect();
                    uses.insert(inst, v);
                }
            }
        }
        Ok(ChainIndex {
            deps,
            uses,
            instances: r.instances().to_vec(),
        })
    }

    /// The index of dependences recovered some other way (from an eCF, [`crate::ecf`]):
    /// `deps` as (load instance, store instance), `instances` the executions per instruction.
    /// Under whole blocks (see [`crate::ecf`]) a use at statement `d` ran in the same block
    /// execution as `d(k)`, so its instance is `k`.
    pub fn from_dependences(
        db: &MemoryDb,
        deps: impl IntoIterator<Item = (Instance, Instance)>,
        instances: Vec<u64>,
    ) -> ChainIndex {
        let at_statement = statement_uses(db);
        let mut index = ChainIndex {
            deps: FxHashMap::default(),
            uses: FxHashMap::default(),
            instances,
        };
        for (load, store) in deps {
            index.deps.entry(load).or_default().push(store);
            let us = &at_statement[store.id as usize];
            index
                .uses
                .entry(store)
                .or_insert_with(|| us.iter().map(|&u| Instance { id: u, n: store.n }).collect());
        }
        index
    }

    /// `RecoverDependence(u(t))` restricted to store `d`: the instances of `d` that wrote some
    /// byte `u(t)` read (several when a loop of narrow stores filled a wide load).
    pub fn writers(&self, u: Instance, d: u32) -> impl Iterator<Item = Instance> + '_ {
        self.deps
            .get(&u)
            .map_or(&[][..], |v| v)
            .iter()
            .copied()
            .filter(move |s| s.id == d)
    }

    /// `RecoverChain` (Figure 21): whether instance `u0` starts the chain `d1, u1, d2, u2, …,
    /// d(n+1)` (`chain` alternates store and load ids and ends with a store); the instances
    /// along it if so. Where a load has several writer instances of one store, any of them
    /// may continue the chain (the first that does is returned).
    pub fn recover_chain(&self, u0: Instance, chain: &[u32]) -> Option<Vec<Instance>> {
        let mut out = vec![u0];
        self.extend(u0, chain, &mut out).then_some(out)
    }

    fn extend(&self, u: Instance, chain: &[u32], out: &mut Vec<Instance>) -> bool {
        let Some(&d_id) = chain.first() else {
            return true;
        };
        for d in self.writers(u, d_id) {
            out.push(d);
            let ok = match chain.get(1) {
                None => true,
                Some(&next) => self
                    .uses
                    .get(&d)
                    .and_then(|v| v.iter().find(|x| x.id == next))
                    .is_some_and(|&n| {
                        out.push(n);
                        self.extend(n, &chain[2..], out) || {
                            out.pop();
                            false
                        }
                    }),
            };
            if ok {
                return true;
            }
            out.pop();
        }
        false
    }

    /// `ChainFreq` (Figure 21): how many instances of load `u0` start the chain.
    pub fn chain_freq(&self, u0: u32, chain: &[u32]) -> u64 {
        let runs = self.instances.get(u0 as usize).copied().unwrap_or(0);
        (1..=runs)
            .filter(|&n| self.recover_chain(Instance { id: u0, n }, chain).is_some())
            .count() as u64
    }

    /// Every chain from load `u0` with at most `depth` dependences, with its `ChainFreq`
    /// (static chain → instances of `u0` that start it).
    pub fn chains(&self, u0: u32, depth: usize) -> BTreeMap<Vec<u32>, u64> {
        let mut freq = BTreeMap::new();
        let runs = self.instances.get(u0 as usize).copied().unwrap_or(0);
        for n in 1..=runs {
            let mut seen = std::collections::BTreeSet::new();
            self.walk(Instance { id: u0, n }, depth, &mut Vec::new(), &mut seen);
            for c in seen {
                *freq.entry(c).or_insert(0) += 1;
            }
        }
        freq
    }

    fn walk(
        &self,
        u: Instance,
        depth: usize,
        path: &mut Vec<u32>,
        seen: &mut std::collections::BTreeSet<Vec<u32>>,
    ) {
        if depth == 0 {
            return;
        }
        for &d in self.deps.get(&u).map_or(&[][..], |v| v) {
            path.push(d.id);
            seen.insert(path.clone());
            for &next in self.uses.get(&d).map_or(&[][..], |v| v) {
                path.push(next.id);
                self.walk(next, depth - 1, path, seen);
                path.pop();
            }
            path.pop();
        }
    }
}
