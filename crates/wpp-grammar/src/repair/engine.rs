//! The Re-Pair replacement engine: the sequence arena, the pair records and the frequency queue
//! (Larsson–Moffat 2000, §3), with the exact non-overlapping counting described in the parent
//! module.
//!
//! Everything is a `u32` index into one of three arenas:
//!
//! * the sequence, a `Node` (`sym`, `next`, `prev`) per position: 12 bytes per input event. A live position's
//!   `next`/`prev` thread it through the circular occurrence list of the pair it starts, or are
//!   `NIL` when the position starts no counted pair. A run of holes keeps, at its first slot, the
//!   index of the next live position (in `next`) and at its last slot the previous live position
//!   (in `prev`), so neighbours are found in O(1);
//! * the pair records (24 bytes per distinct pair present; the arena grows by a quarter at a
//!   time, not by doubling), found through a `hashbrown` [`HashTable`] of record ids hashed by
//!   their pair (5 bytes per slot; a map from the packed pair to the id took 17, and on
//!   high-entropy path traces, where the distinct pairs approach a tenth of the events late in
//!   the run, that table and the records' doubling are what pushed the peak above 16 bytes per
//!   event);
//! * the frequency queue, threaded through the records: buckets `2..=B` (`B ≈ √n`) as FIFO lists
//!   plus one unsorted list for counts above `B`, scanned for its maximum.

use std::hash::BuildHasher;

use hashbrown::HashTable;
use rustc_hash::FxBuildHasher;

/// An absent index.
pub(crate) const NIL: u32 = u32::MAX;
/// The symbol of a position removed by a replacement.
const HOLE: u32 = u32::MAX;
/// The symbol between streams (and at both ends), which never forms a pair.
pub(crate) const SEP: u32 = u32::MAX - 1;

/// One distinct pair of adjacent symbols and its counted occurrences.
struct Record {
    a: u32,
    b: u32,
    /// Number of counted (pairwise non-overlapping) occurrences: the length of the list.
    count: u32,
    /// Some counted occurrence (the list is circular, `prev[head]` is the last appended).
    head: u32,
    /// Queue links (also the free-list link of a dead record).
    qprev: u32,
    qnext: u32,
}

/// One position of the sequence: its symbol and its links (see the module docs), together so
/// that visiting a position touches one cache line.
#[derive(Clone, Copy)]
struct Node {
    sym: u32,
    next: u32,
    prev: u32,
}

impl Node {
    fn new(sym: u32) -> Node {
        Node {
            sym,
            next: NIL,
            prev: NIL,
        }
    }
}

/// What the walk in [`Engine::realign`] still owes: a list slot to hand over or to fill.
#[derive(Clone, Copy)]
enum Pending {
    None,
    /// A counted position that must stop being counted.
    Give(u32),
    /// An uncounted position that must become counted.
    Want(u32),
}

/// A digram packed for hashing.
#[inline]
pub(crate) fn key(a: u32, b: u32) -> u64 {
    (u64::from(a) << 32) | u64::from(b)
}

/// The hash of digram `ab` in [`Engine::index`].
#[inline]
fn hash(a: u32, b: u32) -> u64 {
    FxBuildHasher.hash_one(key(a, b))
}

impl Record {
    #[inline]
    fn is(&self, a: u32, b: u32) -> bool {
        self.a == a && self.b == b
    }

    #[inline]
    fn hash(&self) -> u64 {
        hash(self.a, self.b)
    }
}

/// The sequence being compressed plus every structure the replacement loop updates.
pub(crate) struct Engine {
    nodes: Vec<Node>,
    /// Position of each ended stream's first slot.
    starts: Vec<u32>,
    /// Position of the current stream's first slot.
    open: u32,
    recs: Vec<Record>,
    free: u32,
    /// Live records by pair: ids only, the keys are in the records (5 bytes per slot where a
    /// map from the packed pair would take 17).
    index: HashTable<u32>,
    /// `buckets[f]` for counts `2..=top_from - 1`, `buckets[top_from]` for all larger counts.
    buckets: Vec<u32>,
    top_from: u32,
    cursor: u32,
    /// Records created since the last [`Engine::take_new_pairs`], when logging is on.
    new_pairs: Option<Vec<u32>>,
}

impl Engine {
    /// An engine over no streams yet; `capacity` is a hint for the total number of symbols.
    pub(crate) fn new(capacity: usize) -> Engine {
        let mut nodes = Vec::with_capacity(capacity.saturating_add(1));
        nodes.push(Node::new(SEP));
        Engine {
            nodes,
            starts: Vec::new(),
            open: 1,
            recs: Vec::new(),
            free: NIL,
            index: HashTable::new(),
            buckets: Vec::new(),
            top_from: 2,
            cursor: 0,
            new_pairs: None,
        }
    }

    /// Number of positions (symbols, separators) loaded so far.
    pub(crate) fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Makes room for `additional` more symbols.
    pub(crate) fn reserve(&mut self, additional: usize) {
        self.nodes.reserve(additional);
    }

    /// Makes room for exactly `additional` more symbols.
    pub(crate) fn reserve_exact(&mut self, additional: usize) {
        self.nodes.reserve_exact(additional);
    }

    /// Appends one symbol to the current stream. Must be below [`SEP`].
    #[inline]
    pub(crate) fn push(&mut self, s: u32) {
        debug_assert!(s < SEP);
        self.nodes.push(Node::new(s));
    }

    /// Ends the current stream; the next symbol starts a new one.
    pub(crate) fn end_stream(&mut self) {
        self.starts.push(self.open);
        self.nodes.push(Node::new(SEP));
        self.open = self.nodes.len() as u32;
    }

    /// Counts every pair and builds the occurrence lists and the queue. Call once, after loading.
    pub(crate) fn index_pairs(&mut self) {
        let n = self.nodes.len();
        for t in 1..n.saturating_sub(1) {
            let (a, b) = (self.nodes[t].sym, self.nodes[t + 1].sym);
            if a == SEP || b == SEP {
                continue;
            }
            // Inside a run `cc…c` only every other pair is counted (see the module docs).
            if a == b && self.nodes[t - 1].sym == a && self.nodes[t - 1].next != NIL {
                continue;
            }
            let r = self.record(a, b);
            self.list_append(r, t as u32);
            self.recs[r as usize].count += 1;
        }
        self.top_from = ((n as f64).sqrt() as u32).max(2) + 1;
        self.buckets = vec![NIL; self.top_from as usize + 1];
        for r in 0..self.recs.len() as u32 {
            let f = self.recs[r as usize].count;
            self.queue_link(r, f);
        }
        self.reset_cursor();
    }

    /// Restarts the descending scan of the buckets (after replacements driven from outside).
    pub(crate) fn reset_cursor(&mut self) {
        self.cursor = self.top_from;
    }

    /// Turns on logging of newly created pair records (for re-parsing with known rules).
    pub(crate) fn log_new_pairs(&mut self, on: bool) {
        self.new_pairs = on.then(Vec::new);
    }

    /// Replaces `out` by the records created since the last call (some may have died or been
    /// reused since), keeping both buffers' allocations.
    pub(crate) fn swap_new_pairs(&mut self, out: &mut Vec<u32>) {
        out.clear();
        if let Some(log) = &mut self.new_pairs {
            std::mem::swap(log, out);
        }
    }

    /// All live pair records.
    pub(crate) fn live_pairs(&self) -> impl Iterator<Item = u32> + '_ {
        self.index.iter().copied()
    }

    /// The pair and count of record `r`.
    pub(crate) fn pair(&self, r: u32) -> (u32, u32, u32) {
        let rec = &self.recs[r as usize];
        (rec.a, rec.b, rec.count)
    }

    /// The record of pair `ab`, if it has a counted occurrence.
    pub(crate) fn find(&self, a: u32, b: u32) -> Option<u32> {
        let recs = &self.recs;
        self.index
            .find(hash(a, b), |&r| recs[r as usize].is(a, b))
            .copied()
    }

    /// The most frequent pair with at least two counted occurrences: among equal counts, the one
    /// that reached its count-bucket first.
    pub(crate) fn most_frequent(&mut self) -> Option<u32> {
        let top = self.buckets[self.top_from as usize];
        if top != NIL {
            return Some(self.max_of_top(top));
        }
        while self.cursor >= 2 {
            let head = self.buckets[self.cursor as usize];
            if head != NIL {
                return Some(head);
            }
            self.cursor -= 1;
        }
        None
    }

    fn max_of_top(&self, head: u32) -> u32 {
        let (mut best, mut r) = (head, self.recs[head as usize].qnext);
        while r != head {
            if self.recs[r as usize].count > self.recs[best as usize].count {
                best = r;
            }
            r = self.recs[r as usize].qnext;
        }
        best
    }

    /// Replaces every counted occurrence of record `r`'s pair by symbol `s`, left to right in
    /// list order. `s` must differ from both halves of the pair.
    pub(crate) fn replace_all(&mut self, r: u32, s: u32) {
        // The list only shrinks from its head while it is processed (new pairs all contain `s`),
        // and the record is freed, possibly reused, after its last occurrence: hence the count.
        for _ in 0..self.recs[r as usize].count {
            let i = self.recs[r as usize].head;
            self.replace_at(r, i, s);
        }
    }

    /// Replaces the occurrence of pair `r` at position `i` by `s`:
    /// `p a b q → p s _ q`, updating the pairs `pa`, `bq` (removed) and `ps`, `sq` (added).
    fn replace_at(&mut self, r: u32, i: u32, s: u32) {
        let j = self.next_pos(i);
        let p = self.prev_pos(i);
        let q = self.next_pos(j);
        let (a, b) = (self.nodes[i as usize].sym, self.nodes[j as usize].sym);
        if self.counted(p) {
            self.remove_pair_at(p, self.nodes[p as usize].sym, a);
        }
        if self.counted(j) {
            self.remove_pair_at(j, b, self.nodes[q as usize].sym);
        }
        self.remove_occurrence(r, i);
        self.nodes[i as usize].sym = s;
        self.make_hole(i, j, q);
        if self.nodes[p as usize].sym != SEP {
            self.add_pair_at(p, self.nodes[p as usize].sym, s);
        }
        if self.nodes[q as usize].sym != SEP {
            self.add_pair_at(i, s, self.nodes[q as usize].sym);
            self.fix_run_start(i, q);
        }
    }

    #[inline]
    fn counted(&self, t: u32) -> bool {
        self.nodes[t as usize].next != NIL
    }

    #[inline]
    fn next_pos(&self, i: u32) -> u32 {
        let k = i + 1;
        if self.nodes[k as usize].sym == HOLE {
            self.nodes[k as usize].next
        } else {
            k
        }
    }

    #[inline]
    fn prev_pos(&self, i: u32) -> u32 {
        let k = i - 1;
        if self.nodes[k as usize].sym == HOLE {
            self.nodes[k as usize].prev
        } else {
            k
        }
    }

    /// Makes `j` (between live `i` and `q`) a hole, merging the hole runs around it.
    fn make_hole(&mut self, i: u32, j: u32, q: u32) {
        self.nodes[j as usize].sym = HOLE;
        self.nodes[i as usize + 1].next = q;
        self.nodes[q as usize - 1].prev = i;
    }

    fn remove_pair_at(&mut self, t: u32, a: u32, b: u32) {
        let r = self.find(a, b).expect("a counted occurrence has a record");
        self.remove_occurrence(r, t);
    }

    /// Counts the pair `ab` starting at `t`, unless `t` sits inside a run `aa…` right after a
    /// counted `aa`, where it would overlap it.
    fn add_pair_at(&mut self, t: u32, a: u32, b: u32) {
        if a == b {
            let pp = self.prev_pos(t);
            if self.nodes[pp as usize].sym == a && self.counted(pp) {
                return;
            }
        }
        let r = self.record(a, b);
        self.add_occurrence(r, t);
    }

    /// After position `i` changed, re-establishes the counting of the run of equal symbols that
    /// may start at its successor `q` (it shrank or grew at its left end).
    fn fix_run_start(&mut self, i: u32, q: u32) {
        let c = self.nodes[q as usize].sym;
        let after = self.next_pos(q);
        if self.nodes[after as usize].sym != c {
            return;
        }
        let want = !(self.nodes[i as usize].sym == c && self.counted(i));
        if want != self.counted(q) {
            self.realign(q, want);
        }
    }

    /// Walks the run of equal symbols from `t` (whose desired state is `want`), making every
    /// other pair counted, starting there. A position losing its count hands its list slot to a
    /// neighbour gaining one, so lists stay in position order and counts change only by the
    /// difference. Stops where the old state already agrees.
    fn realign(&mut self, mut t: u32, mut want: bool) {
        let c = self.nodes[t as usize].sym;
        let r = self.record(c, c);
        let mut pending = Pending::None;
        loop {
            let has = self.counted(t);
            if has == want && matches!(pending, Pending::None) {
                break;
            }
            pending = match (has, want, pending) {
                (true, false, Pending::Want(w)) => {
                    self.list_substitute(r, t, w);
                    Pending::None
                }
                (false, true, Pending::Give(g)) => {
                    self.list_substitute(r, g, t);
                    Pending::None
                }
                (true, false, old) => {
                    self.settle(r, old);
                    Pending::Give(t)
                }
                (false, true, old) => {
                    self.settle(r, old);
                    Pending::Want(t)
                }
                (_, _, old) => old,
            };
            let u = self.next_pos(t);
            let v = self.next_pos(u);
            if self.nodes[v as usize].sym != c {
                // `u` ends the run: its pair is not `cc` and keeps its state.
                break;
            }
            want = !want;
            t = u;
        }
        self.settle(r, pending);
    }

    fn settle(&mut self, r: u32, pending: Pending) {
        match pending {
            Pending::None => {}
            Pending::Give(g) => self.remove_occurrence(r, g),
            Pending::Want(w) => self.add_occurrence(r, w),
        }
    }

    /// The record of pair `ab`, created empty if absent.
    fn record(&mut self, a: u32, b: u32) -> u32 {
        if let Some(r) = self.find(a, b) {
            return r;
        }
        let rec = Record {
            a,
            b,
            count: 0,
            head: NIL,
            qprev: NIL,
            qnext: NIL,
        };
        let r = if self.free != NIL {
            let r = self.free;
            self.free = self.recs[r as usize].qnext;
            self.recs[r as usize] = rec;
            r
        } else {
            if self.recs.len() == self.recs.capacity() {
                // Grow by a quarter, not double: on high-entropy traces the records are the
                // largest table after the sequence, and doubling leaves up to half unused.
                self.recs.reserve_exact((self.recs.len() / 4).max(1024));
            }
            self.recs.push(rec);
            self.recs.len() as u32 - 1
        };
        let recs = &self.recs;
        self.index
            .insert_unique(hash(a, b), r, |&q| recs[q as usize].hash());
        if let Some(log) = &mut self.new_pairs {
            log.push(r);
        }
        r
    }

    fn free_record(&mut self, r: u32) {
        let h = self.recs[r as usize].hash();
        if let Ok(entry) = self.index.find_entry(h, |&q| q == r) {
            entry.remove();
        }
        let rec = &mut self.recs[r as usize];
        rec.head = NIL;
        rec.qnext = self.free;
        self.free = r;
    }

    fn add_occurrence(&mut self, r: u32, t: u32) {
        self.list_append(r, t);
        let f = self.recs[r as usize].count;
        self.recs[r as usize].count = f + 1;
        self.requeue(r, f, f + 1);
    }

    fn remove_occurrence(&mut self, r: u32, t: u32) {
        self.list_unlink(r, t);
        let f = self.recs[r as usize].count;
        self.recs[r as usize].count = f - 1;
        self.requeue(r, f, f - 1);
        if f == 1 {
            self.free_record(r);
        }
    }

    fn list_append(&mut self, r: u32, t: u32) {
        let h = self.recs[r as usize].head;
        let (ti, hi) = (t as usize, h as usize);
        if h == NIL {
            self.recs[r as usize].head = t;
            self.nodes[ti].next = t;
            self.nodes[ti].prev = t;
        } else {
            let last = self.nodes[hi].prev;
            self.nodes[last as usize].next = t;
            self.nodes[ti].prev = last;
            self.nodes[ti].next = h;
            self.nodes[hi].prev = t;
        }
    }

    fn list_unlink(&mut self, r: u32, t: u32) {
        let (n, p) = (self.nodes[t as usize].next, self.nodes[t as usize].prev);
        if n == t {
            self.recs[r as usize].head = NIL;
        } else {
            self.nodes[p as usize].next = n;
            self.nodes[n as usize].prev = p;
            if self.recs[r as usize].head == t {
                self.recs[r as usize].head = n;
            }
        }
        self.nodes[t as usize].next = NIL;
    }

    /// Puts uncounted position `new` in counted `old`'s place in `r`'s list.
    fn list_substitute(&mut self, r: u32, old: u32, new: u32) {
        let (n, p) = (self.nodes[old as usize].next, self.nodes[old as usize].prev);
        if n == old {
            self.nodes[new as usize].next = new;
            self.nodes[new as usize].prev = new;
        } else {
            self.nodes[new as usize].next = n;
            self.nodes[new as usize].prev = p;
            self.nodes[p as usize].next = new;
            self.nodes[n as usize].prev = new;
        }
        if self.recs[r as usize].head == old {
            self.recs[r as usize].head = new;
        }
        self.nodes[old as usize].next = NIL;
    }

    #[inline]
    fn bucket(&self, f: u32) -> Option<usize> {
        (f >= 2).then(|| f.min(self.top_from) as usize)
    }

    fn requeue(&mut self, r: u32, old: u32, new: u32) {
        let (from, to) = (self.bucket(old), self.bucket(new));
        if from == to {
            return;
        }
        if let Some(b) = from {
            self.queue_unlink(r, b);
        }
        if to.is_some() {
            self.queue_link(r, new);
        }
    }

    /// Appends `r` to the tail of the bucket for count `f` (nothing below 2).
    fn queue_link(&mut self, r: u32, f: u32) {
        let Some(b) = self.bucket(f) else { return };
        let h = self.buckets[b];
        if h == NIL {
            self.buckets[b] = r;
            self.recs[r as usize].qnext = r;
            self.recs[r as usize].qprev = r;
        } else {
            let last = self.recs[h as usize].qprev;
            self.recs[last as usize].qnext = r;
            self.recs[r as usize].qprev = last;
            self.recs[r as usize].qnext = h;
            self.recs[h as usize].qprev = r;
        }
    }

    fn queue_unlink(&mut self, r: u32, b: usize) {
        let (n, p) = (self.recs[r as usize].qnext, self.recs[r as usize].qprev);
        if n == r {
            self.buckets[b] = NIL;
        } else {
            self.recs[p as usize].qnext = n;
            self.recs[n as usize].qprev = p;
            if self.buckets[b] == r {
                self.buckets[b] = n;
            }
        }
    }

    /// Each stream's remaining symbols, in order, holes skipped.
    pub(crate) fn streams(&self) -> impl Iterator<Item = impl Iterator<Item = u32> + '_> + '_ {
        // A stream's first slot never becomes a hole: holes are second halves of pairs.
        self.starts.iter().map(move |&first| {
            let mut t = first;
            std::iter::from_fn(move || {
                let s = self.nodes[t as usize].sym;
                (s != SEP).then(|| {
                    t = self.next_pos(t);
                    s
                })
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rustc_hash::FxHashMap;

    /// Every live record by its packed pair.
    fn index(e: &Engine) -> FxHashMap<u64, u32> {
        let map: FxHashMap<u64, u32> = e
            .index
            .iter()
            .map(|&r| (key(e.recs[r as usize].a, e.recs[r as usize].b), r))
            .collect();
        assert_eq!(map.len(), e.index.len(), "a pair has two records");
        map
    }

    fn engine(streams: &[Vec<u32>]) -> Engine {
        let mut e = Engine::new(0);
        for s in streams {
            for &x in s {
                e.push(x);
            }
            e.end_stream();
        }
        e.index_pairs();
        e
    }

    /// The most non-overlapping occurrences of each pair: all pairs, except that inside a run
    /// `cc…` a pair right after a counted `cc` overlaps it (greedy from the left is optimal).
    fn non_overlapping_counts(s: &[u32]) -> FxHashMap<u64, u32> {
        let mut counts = FxHashMap::default();
        let mut prev_counted_run = false;
        for i in 0..s.len().saturating_sub(1) {
            let run = s[i] == s[i + 1];
            if run && prev_counted_run && s[i - 1] == s[i] {
                prev_counted_run = false;
                continue;
            }
            prev_counted_run = run;
            *counts.entry(key(s[i], s[i + 1])).or_default() += 1;
        }
        counts
    }

    /// Recomputes every count by brute force (greedy non-overlapping, left to right per run,
    /// which is the maximum) and checks records, lists and queue against it.
    fn validate(e: &Engine) {
        let mut want: FxHashMap<u64, u32> = FxHashMap::default();
        for s in e.streams() {
            let s: Vec<u32> = s.collect();
            for (k, n) in non_overlapping_counts(&s) {
                *want.entry(k).or_default() += n;
            }
        }
        let got: FxHashMap<u64, u32> = index(e)
            .iter()
            .map(|(&k, &r)| (k, e.recs[r as usize].count))
            .collect();
        assert_eq!(got, want, "pair counts");
        let mut queued = 0;
        for (b, &h) in e.buckets.iter().enumerate() {
            let mut r = h;
            while r != NIL {
                let f = e.recs[r as usize].count;
                assert_eq!(e.bucket(f), Some(b), "record in the wrong bucket");
                queued += 1;
                r = e.recs[r as usize].qnext;
                if r == h {
                    break;
                }
            }
        }
        assert_eq!(queued, want.values().filter(|&&f| f >= 2).count());
        for (&k, &r) in &index(e) {
            let rec = &e.recs[r as usize];
            let (mut t, mut n) = (rec.head, 0);
            loop {
                assert_eq!(
                    key(e.nodes[t as usize].sym, e.nodes[e.next_pos(t) as usize].sym),
                    k
                );
                n += 1;
                t = e.nodes[t as usize].next;
                if t == rec.head {
                    break;
                }
            }
            assert_eq!(n, rec.count, "list length");
        }
    }

    /// Runs the replacement loop, validating after every step; returns the final sequences.
    fn run(streams: &[Vec<u32>]) -> Vec<Vec<u32>> {
        let mut e = engine(streams);
        validate(&e);
        let mut next_rule = RULE_BIT_FOR_TESTS;
        while let Some(r) = e.most_frequent() {
            let max = e.recs[r as usize].count;
            assert!(e.index.iter().all(|&o| e.recs[o as usize].count <= max));
            e.replace_all(r, next_rule);
            next_rule += 1;
            validate(&e);
        }
        e.streams().map(|s| s.collect()).collect()
    }

    const RULE_BIT_FOR_TESTS: u32 = 1 << 31;

    #[test]
    fn runs_count_non_overlapping_pairs() {
        for k in 0..9 {
            let e = engine(&[vec![7; k]]);
            validate(&e);
            let f = e.find(7, 7).map_or(0, |r| e.pair(r).2);
            assert_eq!(f, k as u32 / 2, "run of {k}");
        }
    }

    #[test]
    fn replacing_in_a_run_is_greedy_from_the_left() {
        let a = RULE_BIT_FOR_TESTS;
        assert_eq!(run(&[vec![1; 5]]), vec![vec![a, a, 1]]);
        assert_eq!(run(&[vec![1; 4]]), vec![vec![a, a]]);
        assert_eq!(run(&[vec![1; 8]]), vec![vec![a + 1, a + 1]]);
    }

    #[test]
    fn a_run_losing_its_first_symbol_is_recounted() {
        // `xy` is the most frequent pair; each replacement takes the first `y` of a run.
        let s = vec![0, 1, 1, 1, 1, 2, 0, 1, 1, 1, 2, 0, 1, 3, 0, 1, 4, 0, 1, 5];
        run(&[s]);
    }

    proptest! {
        #[test]
        fn counts_lists_and_queue_stay_exact(
            streams in prop::collection::vec(prop::collection::vec(0u32..4, 0..60), 1..4)
        ) {
            run(&streams);
        }

        /// Re-parsing replaces a digram by a symbol already present, so runs of it can grow at
        /// their left end (`01 3 3` → `3 3 3`) and must be recounted.
        #[test]
        fn replacing_by_a_symbol_already_present(
            streams in prop::collection::vec(prop::collection::vec(0u32..4, 0..60), 1..3)
        ) {
            let mut e = engine(&streams);
            if let Some(r) = e.find(0, 1) {
                e.replace_all(r, 3);
                validate(&e);
            }
            if let Some(r) = e.find(2, 3) {
                e.replace_all(r, 0);
                validate(&e);
            }
        }

        #[test]
        fn no_pair_repeats_at_the_end(
            streams in prop::collection::vec(prop::collection::vec(0u32..3, 0..80), 1..3)
        ) {
            for s in run(&streams) {
                // `validate` already proved the counts exact; all are below 2 when the loop ends.
                prop_assert!(non_overlapping_counts(&s).values().all(|&n| n < 2));
            }
        }
    }
}
