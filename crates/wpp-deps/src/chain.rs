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
//! **Block copies.** A `memcpy`/`memmove` is one statement whose store copies its load byte
//! for byte, so a chain through it goes on only from the bytes of the copy the load before
//! it read, to the writers of those bytes of the copy's source (beyond the paper, whose
//! statements copy whole values). An address trace says where each dependence's bytes lie;
//! the index keeps that for the dependences a copy narrows (`Span`). Exact for loads of up
//! to 64 bytes, whose writers' bytes are known one by one; wider, from the first byte to the
//! last. An eCF has no addresses: its chains go on to the writers of every byte copied.
//!
//! [`ChainIndex::build`] holds the recovered dependences of a whole run in memory (a few words
//! per load and store instance), fine for tests and bench prefixes. [`ChainIndex::build_for`]
//! holds only those the chains of some loads reach, level by level, one replay per level: the
//! memory of a query follows its answer, not the run (`wpp deps chain`).

use crate::at::Run;
use crate::lastwriter::{Instance, Writer};
use crate::memdb::{AccessKind, MemoryDb};
use crate::recover::{byte_mask, mask_runs, RecoverError, Recovery};
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;

/// The dependences of a run, indexed for chain queries.
pub struct ChainIndex {
    /// Per load id: the store instances each of its instances depends on.
    deps: FxHashMap<u32, Writers>,
    /// The instances of the uses at a store instance's statement.
    uses: Uses,
    /// Per store id: the load ids that are uses at its statement ([`statement_uses`]).
    at_statement: Vec<Vec<u32>>,
    /// Per store id: the source load of its block copy ([`copy_sources`]), or [`NO_COPY`].
    copy_of: Vec<u32>,
    /// Per copy store a replay recorded the uses of: its instances' addresses, which place
    /// the bytes its loads read in the copy (where a chain goes on from them).
    copy_addrs: FxHashMap<u32, Vec<u64>>,
    /// Executions per instruction.
    instances: Vec<u64>,
}

/// One load's writers by instance, in compressed rows: instance `n`'s are entries
/// `starts[n - 1]..starts[n]` (the last one's run to the end). Some 20 bytes per dependence
/// and 8 per instance, where a map of vectors took 130–220 bytes per load instance (trial 34
/// G5: 6.6 GB for one load's 5·10^7 instances).
#[derive(Default)]
struct Writers {
    starts: Vec<u64>,
    ids: Vec<u32>,
    ns: Vec<u64>,
    /// Where the bytes of the entries a block copy narrows lie, in entry order: the entry
    /// (with [`HULL`] if the bytes are a hull) and the bytes, as the writer's [`Span::mask`]
    /// or, for a writer reaching past a load's 64th byte, `offset | end << 32`. 16 bytes per
    /// such dependence.
    spans: Vec<(u64, u64)>,
    /// The address of each load instance that has spans, in instance order.
    addrs: Vec<(u64, u64)>,
}

/// [`Writers::spans`]' flag of an entry whose bytes are a hull, not a mask.
const HULL: u64 = 1 << 63;

/// Where the bytes of one dependence lie, for a chain through a block copy (see the module
/// docs): kept when the load is a copy's source or the store a copy's destination.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Span {
    /// The writer's bytes within the load: from its first (`offset`) to one past its last
    /// (`end`), and which of the load's first 64 (bit `i`: offset `i`).
    offset: u64,
    /// One past the last.
    end: u64,
    /// Bit `i`: the writer wrote the load's byte `i`.
    mask: u64,
    /// The load's address, which places its bytes in a copy's once the copy's is known.
    load_addr: u64,
}

/// Bytes `lo..hi` of one access.
type Bytes = (u64, u64);

impl Span {
    /// The writer's bytes among `interest` (all when `None`) as maximal runs.
    fn pieces(&self, interest: Option<Bytes>) -> Vec<Bytes> {
        let (lo, hi) = interest.unwrap_or((0, u64::MAX));
        let (lo, hi) = (lo.max(self.offset), hi.min(self.end));
        if self.end > 64 {
            return (lo < hi).then_some((lo, hi)).into_iter().collect();
        }
        let mask = self.mask & byte_mask(lo, hi.saturating_sub(lo));
        mask_runs(mask).map(|(at, len)| (at, at + len)).collect()
    }
}

impl Writers {
    /// Adds `store` to instance `n`'s writers; instances come in increasing order (a
    /// recovery's, which replays the run in order).
    fn push(&mut self, n: u64, store: Instance, span: Option<Span>) {
        assert!(
            self.starts.len() as u64 <= n,
            "load instance {n} after {}: dependences out of order",
            self.starts.len()
        );
        while (self.starts.len() as u64) < n {
            self.starts.push(self.ids.len() as u64);
        }
        if let Some(span) = span {
            let entry = self.ids.len() as u64;
            self.spans.push(match span.end <= 64 {
                true => (entry, span.mask),
                false => (entry | HULL, span.offset | span.end << 32),
            });
            if self.addrs.last().map(|&(m, _)| m) != Some(n) {
                self.addrs.push((n, span.load_addr));
            }
        }
        self.ids.push(store.id);
        self.ns.push(store.n);
    }

    fn of(&self, n: u64) -> impl Iterator<Item = (Instance, Option<Span>)> + '_ {
        let range = match n.checked_sub(1).and_then(|i| self.starts.get(i as usize)) {
            Some(&a) => {
                a as usize
                    ..self
                        .starts
                        .get(n as usize)
                        .map_or(self.ids.len(), |&b| b as usize)
            }
            None => 0..0,
        };
        range.map(move |i| {
            let span = self.span(i, n);
            let store = Instance {
                id: self.ids[i],
                n: self.ns[i],
            };
            (store, span)
        })
    }

    /// The span of entry `entry`, of instance `n`, if kept.
    fn span(&self, entry: usize, n: u64) -> Option<Span> {
        if self.spans.is_empty() {
            return None;
        }
        let k = self
            .spans
            .binary_search_by_key(&(entry as u64), |&(e, _)| e & !HULL)
            .ok()?;
        let (key, bytes) = self.spans[k];
        let (offset, end, mask) = match key & HULL {
            0 => (
                u64::from(bytes.trailing_zeros()),
                64 - u64::from(bytes.leading_zeros()),
                bytes,
            ),
            _ => (bytes & u64::from(u32::MAX), bytes >> 32, 0),
        };
        let a = self.addrs.binary_search_by_key(&n, |&(m, _)| m).ok()?;
        Some(Span {
            offset,
            end,
            mask,
            load_addr: self.addrs[a].1,
        })
    }
}

/// Where the instances of the uses at a store instance's statement come from.
enum Uses {
    /// Per store id: for each of its instances in order, the instance of each of its
    /// statement's uses when it ran (0: not run yet).
    Recorded(FxHashMap<u32, Vec<u64>>),
    /// Under whole blocks (an eCF): a use at `d(k)`'s statement ran in the same block
    /// execution, so it is instance `k`.
    SameBlock,
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

/// [`copy_sources`]' entry of a store that is not a block copy's destination.
pub const NO_COPY: u32 = u32::MAX;

/// Per store id: the load of the same `memcpy`/`memmove` that reads what it writes (the
/// instrumenter numbers a copy's source load right before its destination store), or
/// [`NO_COPY`].
pub fn copy_sources(db: &MemoryDb) -> Vec<u32> {
    let ins = &db.instructions;
    (0..ins.len())
        .map(|d| {
            let (s, call) = (&ins[d], ins[d].what.strip_suffix(" dst"));
            let src = d.checked_sub(1).map(|u| &ins[u]);
            match (call, src) {
                (Some(call), Some(u))
                    if s.kind == AccessKind::Store
                        && u.kind == AccessKind::Load
                        && u.what.strip_suffix(" src") == Some(call)
                        && (u.function, u.block, u.line) == (s.function, s.block, s.line) =>
                {
                    d as u32 - 1
                }
                _ => NO_COPY,
            }
        })
        .collect()
}

impl ChainIndex {
    /// Replays a run's accesses, keeping every dependence.
    pub fn build<T: Into<Run>, E>(
        db: &MemoryDb,
        runs: impl IntoIterator<Item = Result<T, E>>,
    ) -> Result<ChainIndex, RecoverError>
    where
        RecoverError: From<E>,
    {
        let mut index = ChainIndex::empty(db, Uses::Recorded(FxHashMap::default()));
        let kind = |k| {
            db.instructions
                .iter()
                .map(|i| i.kind == k)
                .collect::<Vec<_>>()
        };
        let (loads, stores) = (kind(AccessKind::Load), kind(AccessKind::Store));
        index.replay_level(db, &loads, &stores, runs)?;
        Ok(index)
    }

    fn empty(db: &MemoryDb, uses: Uses) -> ChainIndex {
        ChainIndex {
            deps: FxHashMap::default(),
            uses,
            at_statement: statement_uses(db),
            copy_of: copy_sources(db),
            copy_addrs: FxHashMap::default(),
            instances: vec![0; db.instructions.len()],
        }
    }

    /// The index holding only what the chains of `loads` with at most `depth` dependences
    /// need: replay `i` (each from `open`) keeps the dependences of the loads of level `i`
    /// (level 0: `loads`; level `i + 1`: the uses at the statements of the stores level `i`
    /// reached) and the uses at the statements of level `i - 1`'s stores. It stops early
    /// when a level has nothing left to record.
    pub fn build_for<I, T, E>(
        db: &MemoryDb,
        loads: &[u32],
        depth: usize,
        mut open: impl FnMut() -> Result<I, RecoverError>,
    ) -> Result<ChainIndex, RecoverError>
    where
        I: IntoIterator<Item = Result<T, E>>,
        T: Into<Run>,
        RecoverError: From<E>,
    {
        let index = ChainIndex::empty(db, Uses::Recorded(FxHashMap::default()));
        index.by_levels(loads, depth, |index, level, stores| {
            index.replay_level(db, level, stores, open()?)
        })
    }

    /// [`build_for`](Self::build_for) for an eCF, whose dependences come from a recovery of
    /// the whole run: `recover` runs it once per level, gives each dependence (load instance,
    /// store instance) to its callback, and returns the executions per instruction. The
    /// index keeps those of the level's loads only.
    pub fn build_for_ecf<E>(
        db: &MemoryDb,
        loads: &[u32],
        depth: usize,
        mut recover: impl FnMut(&mut dyn FnMut(Instance, Instance)) -> Result<Vec<u64>, E>,
    ) -> Result<ChainIndex, E> {
        ChainIndex::of_ecf(db).by_levels(loads, depth, |index, level, _| {
            let mut reached = vec![false; level.len()];
            let instances = recover(&mut |load, store| {
                if level[load.id as usize] {
                    index.push(load, store);
                    reached[store.id as usize] = true;
                }
            })?;
            index.set_instances(instances);
            Ok(reached)
        })
    }

    /// The level loop of [`build_for`](Self::build_for): `replay(index, level, stores)` keeps
    /// the dependences of the loads in `level` and the uses at the statements of `stores`,
    /// and returns the stores the level's loads depend on.
    fn by_levels<E>(
        mut self,
        loads: &[u32],
        depth: usize,
        mut replay: impl FnMut(&mut ChainIndex, &[bool], &[bool]) -> Result<Vec<bool>, E>,
    ) -> Result<ChainIndex, E> {
        let n = self.instances.len();
        let (mut level, mut stores) = (vec![false; n], vec![false; n]);
        for &u in loads {
            level[u as usize] = true;
        }
        // What an earlier replay recorded is whole (every instance): never recorded twice.
        let (mut loads_done, mut stores_done) = (vec![false; n], vec![false; n]);
        for _ in 0..depth {
            for id in 0..n {
                level[id] &= !loads_done[id];
                stores[id] &= !stores_done[id];
                loads_done[id] |= level[id];
                stores_done[id] |= stores[id];
            }
            if !level.contains(&true) && !stores.contains(&true) {
                break;
            }
            let reached = replay(&mut self, &level, &stores)?;
            level.iter_mut().for_each(|l| *l = false);
            for d in (0..n).filter(|&d| reached[d]) {
                for &u in &self.at_statement[d] {
                    level[u as usize] = true;
                }
            }
            // Under whole blocks a store's uses need no replay of their own.
            if matches!(self.uses, Uses::Recorded(_)) {
                stores = reached;
            }
        }
        Ok(self)
    }

    /// One replay of [`build_for`](Self::build_for): keeps the dependences of the loads in
    /// `level` and the uses at the statements of the stores in `stores`; the store ids the
    /// level's loads depend on.
    fn replay_level<T: Into<Run>, E>(
        &mut self,
        db: &MemoryDb,
        level: &[bool],
        stores: &[bool],
        runs: impl IntoIterator<Item = Result<T, E>>,
    ) -> Result<Vec<bool>, RecoverError>
    where
        RecoverError: From<E>,
    {
        let is_source = self.copy_sources_mask();
        let Uses::Recorded(uses) = &mut self.uses else {
            unreachable!("a replay records its uses")
        };
        let mut r = Recovery::new(db);
        let mut reached = vec![false; level.len()];
        for run in runs {
            let run: Run = run?.into();
            r.set_thread(run.thread);
            for a in run.accesses {
                let (inst, ds) = r.step(a)?;
                let id = a.id as usize;
                let at = &self.at_statement[id];
                if level[id] {
                    for d in ds {
                        if let Writer::Store(s) = d.store {
                            let copied = self.copy_of[s.id as usize] != NO_COPY;
                            let span = (copied || is_source[id]).then_some(Span {
                                offset: d.offset,
                                end: d.end,
                                mask: d.mask,
                                load_addr: a.addr,
                            });
                            let writers = self.deps.entry(a.id).or_default();
                            writers.push(inst.n, s, span);
                            reached[s.id as usize] = true;
                        }
                    }
                } else if stores[id] && !at.is_empty() {
                    if self.copy_of[id] != NO_COPY {
                        self.copy_addrs.entry(a.id).or_default().push(a.addr);
                    }
                    let n = r.instances();
                    uses.entry(a.id)
                        .or_default()
                        .extend(at.iter().map(|&u| n[u as usize]));
                }
            }
        }
        self.instances = r.instances().to_vec();
        Ok(reached)
    }

    /// Per load id: whether it is a block copy's source.
    fn copy_sources_mask(&self) -> Vec<bool> {
        let mut is_source = vec![false; self.copy_of.len()];
        for &u in self.copy_of.iter().filter(|&&u| u != NO_COPY) {
            is_source[u as usize] = true;
        }
        is_source
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
        let mut index = ChainIndex::of_ecf(db);
        let mut deps: Vec<(Instance, Instance)> = deps.into_iter().collect();
        deps.sort_unstable();
        for (load, store) in deps {
            index.push(load, store);
        }
        index.set_instances(instances);
        index
    }

    /// An empty index of an eCF's dependences (as [`from_dependences`](Self::from_dependences)),
    /// filled as they are recovered, without holding them in a list first.
    pub fn of_ecf(db: &MemoryDb) -> ChainIndex {
        ChainIndex::empty(db, Uses::SameBlock)
    }

    /// Adds a dependence of an eCF's index; each load's come in the order of its instances.
    pub fn push(&mut self, load: Instance, store: Instance) {
        self.deps
            .entry(load.id)
            .or_default()
            .push(load.n, store, None);
    }

    /// Sets the executions per instruction.
    pub fn set_instances(&mut self, instances: Vec<u64>) {
        self.instances = instances;
    }

    /// The store instances load instance `u` depends on, with where their bytes lie if kept.
    fn deps_of(&self, u: Instance) -> impl Iterator<Item = (Instance, Option<Span>)> + '_ {
        self.deps
            .get(&u.id)
            .into_iter()
            .flat_map(move |w| w.of(u.n))
    }

    /// The instances of the uses at store instance `d`'s statement.
    fn uses_of(&self, d: Instance) -> impl Iterator<Item = Instance> + '_ {
        let ids = self
            .at_statement
            .get(d.id as usize)
            .map_or(&[][..], Vec::as_slice);
        let recorded = match &self.uses {
            Uses::SameBlock => None,
            Uses::Recorded(m) => Some(
                m.get(&d.id)
                    .and_then(|v| {
                        let (w, k) = (ids.len(), d.n.checked_sub(1)? as usize);
                        v.get(k * w..(k + 1) * w)
                    })
                    .unwrap_or(&[]),
            ),
        };
        ids.iter().enumerate().filter_map(move |(j, &u)| {
            let n = match recorded {
                None => d.n,
                Some(r) => r.get(j).copied().unwrap_or(0),
            };
            (n > 0).then_some(Instance { id: u, n })
        })
    }

    /// The writers of the bytes `interest` of load instance `u` (all: `None`), each with those
    /// of its bytes as runs in the store's coordinates where the index knows them (a copy's
    /// whose address a replay recorded).
    fn steps(
        &self,
        u: Instance,
        interest: Option<Bytes>,
    ) -> impl Iterator<Item = (Instance, Option<Vec<Bytes>>)> + '_ {
        self.deps_of(u).filter_map(move |(d, span)| {
            let Some(span) = span else {
                return Some((d, None));
            };
            let pieces = span.pieces(interest);
            if pieces.is_empty() {
                return None;
            }
            let addrs = self.copy_addrs.get(&d.id);
            let store_addr = addrs.and_then(|a| a.get(d.n as usize - 1));
            let shift = |b: u64, at: u64| b.wrapping_add(span.load_addr).wrapping_sub(at);
            let placed = store_addr.map(|&at| {
                let place = |(lo, hi)| (shift(lo, at), shift(hi, at));
                pieces.into_iter().map(place).collect()
            });
            Some((d, placed))
        })
    }

    /// The uses at store instance `d`'s statement, each with the bytes of it a chain follows:
    /// of a copy's source, those the copy's `pieces` took from it, a run at a time; of any
    /// other use, or where the pieces are unknown, all.
    fn next_uses<'s>(
        &'s self,
        d: Instance,
        pieces: &'s Option<Vec<Bytes>>,
    ) -> impl Iterator<Item = (Instance, Option<Bytes>)> + 's {
        let source = self.copy_of[d.id as usize];
        self.uses_of(d).flat_map(move |x| {
            let narrowed = pieces.as_deref().filter(|_| x.id == source);
            let all = narrowed.is_none().then_some((x, None));
            let runs = narrowed.into_iter().flatten().map(move |&p| (x, Some(p)));
            all.into_iter().chain(runs)
        })
    }

    /// `RecoverChain` (Figure 21): whether instance `u0` starts the chain `d1, u1, d2, u2, …,
    /// d(n+1)` (`chain` alternates store and load ids and ends with a store); the instances
    /// along it if so. Where a load has several writer instances of one store, any of them
    /// may continue the chain (the first that does is returned).
    pub fn recover_chain(&self, u0: Instance, chain: &[u32]) -> Option<Vec<Instance>> {
        let mut out = vec![u0];
        self.extend(u0, None, chain, &mut out).then_some(out)
    }

    fn extend(
        &self,
        u: Instance,
        interest: Option<Bytes>,
        chain: &[u32],
        out: &mut Vec<Instance>,
    ) -> bool {
        let Some(&d_id) = chain.first() else {
            return true;
        };
        for (d, pieces) in self.steps(u, interest).filter(|(d, _)| d.id == d_id) {
            out.push(d);
            let ok = match chain.get(1) {
                None => true,
                Some(&want) => self
                    .next_uses(d, &pieces)
                    .filter(|(x, _)| x.id == want)
                    .any(|(x, bytes)| {
                        out.push(x);
                        self.extend(x, bytes, &chain[2..], out) || {
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
            let u = Instance { id: u0, n };
            self.walk(u, None, depth, &mut Vec::new(), &mut seen);
            for c in seen {
                *freq.entry(c).or_insert(0) += 1;
            }
        }
        freq
    }

    fn walk(
        &self,
        u: Instance,
        interest: Option<Bytes>,
        depth: usize,
        path: &mut Vec<u32>,
        seen: &mut std::collections::BTreeSet<Vec<u32>>,
    ) {
        if depth == 0 {
            return;
        }
        for (d, pieces) in self.steps(u, interest) {
            path.push(d.id);
            seen.insert(path.clone());
            for (x, bytes) in self.next_uses(d, &pieces) {
                path.push(x.id);
                self.walk(x, bytes, depth - 1, path, seen);
                path.pop();
            }
            path.pop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A span comes back as kept: a writer's bytes within a load's first 64 as their mask,
    /// beyond as their hull; the load's address once per instance.
    #[test]
    fn spans_come_back_as_kept() {
        let store = |n| Instance { id: 1, n };
        let narrow = Span {
            offset: 2,
            end: 7,
            mask: 0b110_1100,
            load_addr: 4096,
        };
        let wide = Span {
            offset: 60,
            end: 200,
            mask: 0,
            load_addr: 4096,
        };
        let other = Span {
            load_addr: 8192,
            ..narrow
        };
        let mut w = Writers::default();
        w.push(1, store(1), Some(narrow));
        w.push(1, store(2), None);
        w.push(1, store(3), Some(wide));
        w.push(3, store(4), Some(other));
        let got: Vec<_> = w.of(1).map(|(_, s)| s).collect();
        assert_eq!(got, [Some(narrow), None, Some(wide)]);
        assert_eq!(w.of(2).count(), 0);
        assert_eq!(w.of(3).map(|(_, s)| s).collect::<Vec<_>>(), [Some(other)]);
        assert_eq!(narrow.pieces(Some((3, 6))), [(3, 4), (5, 6)]);
        assert_eq!(wide.pieces(Some((0, 64))), [(60, 64)]);
    }
}
