//! The byte-granular last-writer table: for every byte of memory, the store instance that last
//! wrote it. Tallam and Gupta (§5, the text after Figure 22) recover dependences from an address
//! trace with a hash table indexed by address holding the latest definition and instance; this
//! one is indexed by *byte*, so a load depends on the last store to each byte it reads: partial
//! overlaps, unions written as bytes and read as a word, and block copies are exact.
//!
//! Memory is an arena of 4 KiB pages, each an array of packed writers (8 bytes per byte of
//! traced memory), found through a hash map by page number, with the pages used recently
//! cached (accesses are local: the cache spares most lookups); a byte never written reads as
//! [`Writer::External`]. (A table of one entry per 8-byte word, with the bytes of words that
//! have several writers aside, was measured slower: 12 % on zlib's address trace, whose
//! program writes bytes, 4 % on Lua's; BENCHMARKS.md.)

use rustc_hash::FxHashMap;
use serde::Serialize;
use std::cell::Cell;

/// One execution of a memory instruction: instance `n` (from 1) of instruction `id`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct Instance {
    /// The memory instruction ([`crate::MemoryDb`] id).
    pub id: u32,
    /// Which execution, from 1.
    pub n: u64,
}

/// Who last wrote a byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum Writer {
    /// No store of the instrumented program: the loader, a library, the kernel, or memory
    /// freshly returned by the allocator.
    External,
    /// This store instance.
    Store(Instance),
}

const PAGE_BITS: u32 = 12;
const PAGE: usize = 1 << PAGE_BITS;
/// Bits of a packed writer that hold the instance.
const INSTANCE_BITS: u32 = 40;

/// The largest instruction id the table can hold (ids are packed beside the instance).
pub const MAX_ID: u32 = (1 << (64 - INSTANCE_BITS)) - 2;
/// The largest instance number the table can hold.
pub const MAX_INSTANCE: u64 = (1 << INSTANCE_BITS) - 1;

fn pack(w: Writer) -> u64 {
    match w {
        Writer::External => 0,
        Writer::Store(i) => (u64::from(i.id + 1) << INSTANCE_BITS) | i.n,
    }
}

fn unpack(p: u64) -> Writer {
    if p == 0 {
        return Writer::External;
    }
    Writer::Store(Instance {
        id: (p >> INSTANCE_BITS) as u32 - 1,
        n: p & MAX_INSTANCE,
    })
}

/// Entries of the page cache: a power of two.
const CACHE: usize = 64;
/// A cache entry that holds no page (no page number is this large).
const NO_PAGE: (u64, u32) = (u64::MAX, u32::MAX);

/// The table. See the module docs.
pub struct LastWriter {
    pages: Vec<Box<[u64; PAGE]>>,
    /// Page number → index in `pages`.
    index: FxHashMap<u64, u32>,
    /// Pages looked up recently and their indices (`u32::MAX`: never written), by the low bits
    /// of the page number. Direct-mapped rather than one entry, because a program's accesses
    /// alternate between a few pages (its stack, heap and globals), which one would thrash.
    cache: [Cell<(u64, u32)>; CACHE],
}

impl Default for LastWriter {
    fn default() -> Self {
        LastWriter {
            pages: Vec::new(),
            index: FxHashMap::default(),
            cache: std::array::from_fn(|_| Cell::new(NO_PAGE)),
        }
    }
}

/// The offset of `addr` in its page if `[addr, addr + size)` is not empty and lies in that
/// page.
#[inline]
fn within_page(addr: u64, size: u64) -> Option<usize> {
    let off = (addr & (PAGE as u64 - 1)) as usize;
    (size > 0 && size <= (PAGE - off) as u64).then_some(off)
}

/// The pieces of `[addr, addr + size)` that fall in one page each: (page number, first offset
/// in the page, length). Addresses past the top of memory are cut off.
fn pieces(addr: u64, size: u64) -> impl Iterator<Item = (u64, usize, usize)> {
    let end = addr.saturating_add(size);
    let mut at = addr;
    std::iter::from_fn(move || {
        if at >= end {
            return None;
        }
        let off = (at & (PAGE as u64 - 1)) as usize;
        let len = ((PAGE - off) as u64).min(end - at) as usize;
        let piece = (at >> PAGE_BITS, off, len);
        at += len as u64;
        Some(piece)
    })
}

impl LastWriter {
    /// An empty table: every byte external.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records that `w` wrote `[addr, addr + size)`. The instance must satisfy [`MAX_ID`] and
    /// [`MAX_INSTANCE`] (the caller checks; see [`crate::recover::Recovery`]).
    pub fn write(&mut self, addr: u64, size: u64, w: Writer) {
        let p = pack(w);
        if let Some(off) = within_page(addr, size) {
            if let Some(i) = self.find(addr >> PAGE_BITS) {
                self.pages[i as usize][off..off + size as usize].fill(p);
                return;
            }
        }
        if p == 0 && size >> PAGE_BITS > self.pages.len() as u64 {
            // A clobber wider than every page written (a large `mmap`): only those pages
            // change.
            return self.clear(addr, addr.saturating_add(size));
        }
        for (page, off, len) in pieces(addr, size) {
            let i = match self.find(page) {
                Some(i) => i,
                None if p == 0 => continue, // already external
                None => {
                    let i = self.pages.len() as u32;
                    self.pages.push(Box::new([0; PAGE]));
                    self.index.insert(page, i);
                    self.cache[page as usize % CACHE].set((page, i));
                    i
                }
            };
            self.pages[i as usize][off..off + len].fill(p);
        }
    }

    /// Makes the bytes of `[start, end)` external, visiting the pages written.
    fn clear(&mut self, start: u64, end: u64) {
        for (&page, &i) in &self.index {
            let (first, last) = (page << PAGE_BITS, (page << PAGE_BITS) + PAGE as u64);
            let (from, to) = (first.max(start), last.min(end));
            if from < to {
                let off = (from - first) as usize;
                self.pages[i as usize][off..off + (to - from) as usize].fill(0);
            }
        }
    }

    /// The index of a page, if it was ever written.
    #[inline]
    fn find(&self, page: u64) -> Option<u32> {
        let slot = &self.cache[page as usize % CACHE];
        match slot.get() {
            (p, i) if p == page => Some(i).filter(|&i| i != u32::MAX),
            _ => {
                let i = self.index.get(&page).copied();
                slot.set((page, i.unwrap_or(u32::MAX)));
                i
            }
        }
    }

    /// The one writer of every byte of `[addr, addr + size)`, if they have one and lie in one
    /// page (most loads); `None` sends the caller to [`read`](Self::read).
    #[inline]
    pub fn read_uniform(&self, addr: u64, size: u64) -> Option<Writer> {
        let off = within_page(addr, size)?;
        let Some(i) = self.find(addr >> PAGE_BITS) else {
            return Some(Writer::External);
        };
        let bytes = &self.pages[i as usize][off..off + size as usize];
        let first = bytes[0];
        bytes.iter().all(|&p| p == first).then(|| unpack(first))
    }

    /// Calls `f(offset, len, writer)` for each maximal run of bytes of `[addr, addr + size)`
    /// with one last writer, in address order (`offset` from `addr`).
    pub fn read(&self, addr: u64, size: u64, mut f: impl FnMut(u64, u64, Writer)) {
        let mut run: Option<(u64, u64, u64)> = None; // (offset, len, packed)
        let mut offset = 0u64;
        // `len` more bytes of writer `p`: the run grows, or the next one starts.
        let mut extend = |len: u64, p: u64| {
            match &mut run {
                Some((_, l, q)) if *q == p => *l += len,
                _ => {
                    if let Some((o, l, q)) = run {
                        f(o, l, unpack(q));
                    }
                    run = Some((offset, len, p));
                }
            }
            offset += len;
        };
        for (page, off, len) in pieces(addr, size) {
            // A page never written is one external run, whatever its length.
            let Some(i) = self.find(page) else {
                extend(len as u64, 0);
                continue;
            };
            let bytes = &self.pages[i as usize][off..off + len];
            let mut i = 0;
            while i < len {
                let p = bytes[i];
                let same = bytes[i..].iter().position(|&x| x != p).unwrap_or(len - i);
                extend(same as u64, p);
                i += same;
            }
        }
        if let Some((o, l, q)) = run {
            f(o, l, unpack(q));
        }
    }

    /// Bytes of memory the table holds (pages × 4 KiB × 8).
    pub fn memory_bytes(&self) -> usize {
        self.pages.len() * PAGE * 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn st(id: u32, n: u64) -> Writer {
        Writer::Store(Instance { id, n })
    }

    fn runs(t: &LastWriter, addr: u64, size: u64) -> Vec<(u64, u64, Writer)> {
        let mut v = Vec::new();
        t.read(addr, size, |o, l, w| v.push((o, l, w)));
        v
    }

    #[test]
    fn byte_writes_then_word_read() {
        let mut t = LastWriter::new();
        for b in 0..4 {
            t.write(100 + b, 1, st(b as u32, 1));
        }
        let want: Vec<_> = (0..4).map(|b| (b, 1, st(b as u32, 1))).collect();
        assert_eq!(runs(&t, 100, 4), want);
        assert_eq!(
            runs(&t, 98, 4),
            vec![(0, 2, Writer::External), (2, 1, st(0, 1)), (3, 1, st(1, 1))]
        );
    }

    /// A clobber of all memory clears what was written, allocating nothing; a load of 1 GiB
    /// (the widest a recovery takes) is one run per writer.
    #[test]
    fn clobbers_and_reads_wider_than_the_table() {
        let mut t = LastWriter::new();
        let (far, gib) = (1 << 40, 1 << 30);
        t.write(far, 8, st(1, 1));
        t.write(5, 3, st(2, 1));
        assert_eq!(
            runs(&t, far - gib, gib + 16),
            vec![
                (0, gib, Writer::External),
                (gib, 8, st(1, 1)),
                (gib + 8, 8, Writer::External)
            ]
        );
        t.write(6, u64::MAX - 6, Writer::External);
        assert_eq!(t.memory_bytes(), 2 * PAGE * 8);
        assert_eq!(
            runs(&t, 0, gib),
            vec![
                (0, 5, Writer::External),
                (5, 1, st(2, 1)),
                (6, gib - 6, Writer::External)
            ]
        );
        assert_eq!(runs(&t, far - 8, 24), vec![(0, 24, Writer::External)]);
    }

    #[test]
    fn pages_are_crossed_and_top_of_memory_is_cut() {
        let mut t = LastWriter::new();
        t.write(4090, 12, st(7, 3));
        assert_eq!(
            runs(&t, 4088, 16),
            vec![
                (0, 2, Writer::External),
                (2, 12, st(7, 3)),
                (14, 2, Writer::External)
            ]
        );
        t.write(u64::MAX - 1, 10, st(1, 1));
        assert_eq!(
            runs(&t, u64::MAX - 2, 10),
            vec![(0, 1, Writer::External), (1, 1, st(1, 1))]
        );
    }

    #[test]
    fn packing_round_trips_at_the_limits() {
        for w in [
            Writer::External,
            st(0, 1),
            st(MAX_ID, MAX_INSTANCE),
            st(5, 1 << 39),
        ] {
            assert_eq!(unpack(pack(w)), w);
        }
    }

    proptest! {
        /// Against a plain byte array: after any sequence of writes (stores and clobbers, some
        /// wider than every page written), every byte's writer is the last write covering it,
        /// and runs are maximal, over pages written and not.
        #[test]
        fn matches_a_byte_array(ops in proptest::collection::vec((0u64..9000, 0u64..300, 0u32..5), 1..60),
                                probe in (0u64..9000, 1u64..12000)) {
            let mut t = LastWriter::new();
            let mut sim = vec![Writer::External; 30000];
            for (k, &(addr, size, id)) in ops.iter().enumerate() {
                let (w, size) = match id {
                    3 => (Writer::External, size),
                    4 => (Writer::External, size * 40),
                    _ => (st(id, k as u64 + 1), size),
                };
                t.write(addr, size, w);
                for b in addr..(addr + size).min(30000) {
                    sim[b as usize] = w;
                }
            }
            let (addr, size) = probe;
            let mut expanded = Vec::new();
            let mut last: Option<Writer> = None;
            for (o, l, w) in runs(&t, addr, size) {
                prop_assert!(l > 0);
                prop_assert_ne!(Some(w), last, "runs must be maximal");
                last = Some(w);
                prop_assert_eq!(o, expanded.len() as u64);
                expanded.extend(std::iter::repeat_n(w, l as usize));
            }
            let want: Vec<_> = (addr..addr + size).map(|b| sim.get(b as usize).copied().unwrap_or(Writer::External)).collect();
            // The fast path answers exactly when the range is in one page with one writer.
            let one_page = addr / 4096 == (addr + size - 1) / 4096;
            let uniform = want.iter().all(|&w| w == want[0]);
            prop_assert_eq!(t.read_uniform(addr, size), (one_page && uniform).then_some(want[0]));
            prop_assert_eq!(expanded, want);
        }
    }
}
