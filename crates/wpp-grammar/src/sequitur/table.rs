//! The digram index: an open-addressing hash table from a digram to the node that starts its
//! indexed occurrence.
//!
//! A slot is 4 bytes: a node index, and in the bits the index does not need yet, a *tag* of the
//! key's hash. The key — the node's symbol and its successor's symbol — is read back from the
//! node arena, as in Nevill-Manning and Witten's implementation; the tag lets a probe skip
//! non-matching slots without that (cache-missing) read. Node indices start 24 bits wide (8-bit
//! tags, a false match per 256 probed slots); when the arena outgrows them the table is rebuilt
//! with 28-bit and then 32-bit indices (no tag). Removal compares whole slots, so it never
//! touches the arena.
//!
//! Linear probing over a power-of-two table, Fibonacci hashing of the 64-bit key, tombstones for
//! deletion (reused by later insertions), and an in-place rebuild — growing to the power of two
//! that puts the load between 3/16 and 3/8, and dropping the tombstones — once live entries plus
//! tombstones exceed 3/4 of the slots. SEQUITUR deletes about as many digrams as it inserts, so
//! on high-entropy traces most rebuilds are for tombstones, not growth, and each rehashes every
//! live entry through two random reads of the arena: leaving at least 3/8 of the slots free
//! after a rebuild (1/4 before) halved the rebuilds' cache misses (cachegrind, 2·10^6-event
//! high-entropy trace: D1 misses −9 %, LL misses −18 % in all; BENCHMARKS.md). Tags keep the longer probes of that load cheap: a probe reads consecutive
//! slots of one cache line and touches the arena only on a tag match. The table thus costs
//! 11–21 bytes per indexed digram.

use super::Node;

const EMPTY: u32 = u32::MAX;
const TOMB: u32 = u32::MAX - 1;
const MIN_SLOTS: usize = 64;

/// The digram index. Node indices stored here must stay below `u32::MAX - 1`.
pub(super) struct DigramTable {
    slots: Vec<u32>,
    shift: u32,
    live: usize,
    used: usize,
    /// Width of the node index in a slot; the remaining `32 - index_bits` bits hold the tag.
    index_bits: u32,
}

#[inline]
fn hash(a: u32, b: u32) -> u64 {
    ((u64::from(a) << 32) | u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

impl DigramTable {
    pub(super) fn new() -> Self {
        Self::with_index_bits(24)
    }

    /// A table whose slots start with `index_bits`-bit node indices (tests start narrow to
    /// exercise [`widen`](Self::widen)).
    pub(super) fn with_index_bits(index_bits: u32) -> Self {
        DigramTable {
            slots: vec![EMPTY; MIN_SLOTS],
            shift: 64 - MIN_SLOTS.trailing_zeros(),
            live: 0,
            used: 0,
            index_bits,
        }
    }

    /// The home slot of a key and the slot value its entry for `node` has.
    #[inline]
    fn place(&self, a: u32, b: u32, node: u32) -> (usize, u32) {
        let h = hash(a, b);
        let tag_bits = 32 - self.index_bits;
        let tag = (h >> (self.shift - tag_bits)) & ((1 << tag_bits) - 1);
        (
            (h >> self.shift) as usize,
            ((tag << self.index_bits) | u64::from(node)) as u32,
        )
    }

    #[inline]
    fn index_mask(&self) -> u32 {
        ((1u64 << self.index_bits) - 1) as u32
    }

    /// Node indices must stay below this; see [`widen`](Self::widen).
    #[inline]
    pub(super) fn node_limit(&self) -> u64 {
        (1u64 << self.index_bits) - 2
    }

    /// Makes room for node indices up to 4 bits wider, at the cost of tag bits.
    #[cold]
    pub(super) fn widen(&mut self, nodes: &[Node]) {
        let old_bits = self.index_bits;
        self.index_bits = (self.index_bits + 4).min(32);
        self.rebuild(nodes, old_bits);
    }

    /// The node of the indexed occurrence of digram `(a, b)`, or else the slot where it should
    /// be inserted.
    #[inline]
    pub(super) fn find(&self, nodes: &[Node], a: u32, b: u32) -> Result<u32, usize> {
        let mask = self.slots.len() - 1;
        let index_mask = self.index_mask();
        let (mut i, want) = self.place(a, b, 0);
        let mut tomb = None;
        loop {
            match self.slots[i] {
                EMPTY => return Err(tomb.unwrap_or(i)),
                TOMB => {
                    tomb.get_or_insert(i);
                }
                v if v & !index_mask == want => {
                    let n = nodes[(v & index_mask) as usize];
                    if n.sym == a && nodes[n.next as usize].sym == b {
                        return Ok(v & index_mask);
                    }
                }
                _ => {}
            }
            i = (i + 1) & mask;
        }
    }

    /// Stores `node`, which starts digram `(a, b)`, in `slot`, a slot returned by a failed
    /// [`find`](Self::find) for that digram.
    #[inline]
    pub(super) fn insert(&mut self, nodes: &[Node], slot: usize, (a, b): (u32, u32), node: u32) {
        if self.slots[slot] == EMPTY {
            self.used += 1;
        }
        self.slots[slot] = self.place(a, b, node).1;
        self.live += 1;
        if self.used * 4 > self.slots.len() * 3 {
            self.rebuild(nodes, self.index_bits);
        }
    }

    /// Makes the entry of digram `(a, b)`, whose indexed occurrence starts at `from`, point at
    /// `to`, which starts another occurrence. The entry is looked up again rather than taken
    /// from the [`find`](Self::find) that saw it: the nodes allocated in between may have
    /// [`widen`](Self::widen)ed the table, which moves entries.
    #[inline]
    pub(super) fn repoint(&mut self, (a, b): (u32, u32), from: u32, to: u32) {
        let mask = self.slots.len() - 1;
        let (mut i, want) = self.place(a, b, from);
        while self.slots[i] != want {
            debug_assert_ne!(self.slots[i], EMPTY, "repoint of an unindexed digram");
            i = (i + 1) & mask;
        }
        self.slots[i] = self.place(a, b, to).1;
    }

    /// Removes `node` if it is the indexed occurrence of its digram `(a, b)`; returns whether it
    /// was.
    #[inline]
    pub(super) fn remove(&mut self, a: u32, b: u32, node: u32) -> bool {
        let mask = self.slots.len() - 1;
        let (mut i, want) = self.place(a, b, node);
        loop {
            match self.slots[i] {
                EMPTY => return false,
                v if v == want => {
                    self.slots[i] = TOMB;
                    self.live -= 1;
                    return true;
                }
                _ => i = (i + 1) & mask,
            }
        }
    }

    /// Rehashes in place, growing (never shrinking) to the power of two that puts the load
    /// between 3/16 and 3/8 and re-encoding entries that hold `old_bits`-wide node indices. In
    /// place, because a second table next to the first would be the compressor's peak memory.
    ///
    /// This is Abseil's `DropDeletesWithoutResize` for linear probing: tombstones become empty,
    /// then each not-yet-placed entry moves to the first slot from its home that is empty or
    /// not yet placed (swapping with the latter and continuing with what it displaced). Placed
    /// slots are never emptied again, so every probe path stays gap-free. One bit per slot
    /// records which entries are placed.
    #[cold]
    fn rebuild(&mut self, nodes: &[Node], old_bits: u32) {
        let len = (self.live * 8 / 3)
            .next_power_of_two()
            .max(self.slots.len());
        self.slots.resize(len, EMPTY);
        self.shift = 64 - len.trailing_zeros();
        for v in self.slots.iter_mut().filter(|v| **v == TOMB) {
            *v = EMPTY;
        }
        let old_mask = ((1u64 << old_bits) - 1) as u32;
        let mut placed = vec![0u64; len.div_ceil(64)];
        let is_placed = |placed: &[u64], i: usize| placed[i / 64] & (1 << (i % 64)) != 0;
        for i in 0..len {
            while self.slots[i] != EMPTY && !is_placed(&placed, i) {
                let node = self.slots[i] & old_mask;
                let n = nodes[node as usize];
                let (mut j, entry) = self.place(n.sym, nodes[n.next as usize].sym, node);
                while j != i && self.slots[j] != EMPTY && is_placed(&placed, j) {
                    j = (j + 1) & (len - 1);
                }
                placed[j / 64] |= 1 << (j % 64);
                let displaced = std::mem::replace(&mut self.slots[j], entry);
                if j != i {
                    self.slots[i] = displaced;
                }
            }
        }
        self.used = self.live;
    }

    /// Checks that every entry is unique and reachable from its home.
    #[cfg(test)]
    fn validate(&self, nodes: &[Node]) {
        let mask = self.index_mask();
        let mut seen = std::collections::HashSet::new();
        for (i, &v) in self.slots.iter().enumerate() {
            if v >= TOMB {
                continue;
            }
            let n = nodes[(v & mask) as usize];
            let (a, b) = (n.sym, nodes[n.next as usize].sym);
            assert!(seen.insert((a, b)), "duplicate key at {i}");
            assert_eq!(self.find(nodes, a, b), Ok(v & mask), "unreachable at {i}");
        }
    }

    /// Number of indexed digrams.
    pub(super) fn len(&self) -> usize {
        self.live
    }

    /// Bytes held by the table.
    pub(super) fn heap_bytes(&self) -> usize {
        self.slots.capacity() * 4
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// Digram `k` lives at node `2k` (symbol `a`) followed by node `2k + 1` (symbol `b`).
    fn arena(keys: &[(u32, u32)]) -> Vec<Node> {
        keys.iter()
            .enumerate()
            .flat_map(|(k, &(a, b))| {
                let k = k as u32;
                [
                    Node {
                        sym: a,
                        prev: 0,
                        next: 2 * k + 1,
                    },
                    Node {
                        sym: b,
                        prev: 2 * k,
                        next: 0,
                    },
                ]
            })
            .collect()
    }

    /// Random inserts and removals, through many rebuilds and widenings from 8- to 16-bit node
    /// indices, against a map.
    #[test]
    fn agrees_with_a_hash_map_through_rebuilds() {
        let mut x = 7u64;
        let mut rnd = move || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 33) as u32
        };
        let keys: Vec<(u32, u32)> = (0..6000).map(|_| (rnd() % 300, rnd() % 300)).collect();
        let nodes = arena(&keys);
        let mut table = DigramTable::with_index_bits(8);
        let mut oracle: HashMap<(u32, u32), u32> = HashMap::new();
        for step in 0..40_000 {
            // Keys (and so node indices) come from a growing range, so widening meets a
            // populated table.
            let k = rnd() as usize % keys.len().min(10 + step / 4);
            let (a, b) = keys[k];
            let node = 2 * k as u32;
            while node as u64 >= table.node_limit() {
                table.widen(&nodes);
            }
            match (table.find(&nodes, a, b), oracle.get(&(a, b))) {
                (Err(slot), None) => {
                    table.insert(&nodes, slot, (a, b), node);
                    oracle.insert((a, b), node);
                }
                (Ok(n), Some(&m)) => {
                    assert_eq!(n, m, "step {step}");
                    if rnd() % 2 == 0 {
                        assert!(table.remove(a, b, n));
                        oracle.remove(&(a, b));
                    }
                }
                (got, want) => panic!("step {step}: table {got:?}, map {want:?}"),
            }
            assert_eq!(table.len(), oracle.len());
            if step % 97 == 0 {
                table.validate(&nodes);
            }
        }
        for (&(a, b), &n) in &oracle {
            assert_eq!(table.find(&nodes, a, b), Ok(n));
        }
    }
}
