//! Peak heap measurement for `wpp compress`'s report: the system allocator wrapped to count live
//! bytes and their high-water mark; and huge pages for large blocks.
//!
//! Blocks of 2 MiB or more are mapped apart, aligned and advised as transparent huge pages
//! (`MADV_HUGEPAGE`; most distributions enable them only where advised; [`huge`]). The
//! compressors' digram tables and node arenas are read at random, a cache miss per lookup, and
//! with 4 KiB pages nearly every miss is a TLB miss too: with huge pages SEQUITUR took 10–14 %
//! less CPU on one thread, 5–8 % on two (high-entropy and zlib path traces; BENCHMARKS.md,
//! "Huge pages for the compressors' tables").
//!
//! The cost is two relaxed atomic operations per allocation; the compressors allocate only when
//! their tables grow, never per event, so this is not measurable in throughput. A measurement
//! is the peak of live bytes during a run minus those live before it ([`start`], [`peak_since`]),
//! so buffers held across runs (the best `.wpp` so far) do not count. Heap only: stacks and
//! memory-mapped trace files are not included.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

/// The system allocator (large blocks: [`huge`]), counting live and peak bytes.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

#[inline]
fn grew(by: usize) {
    let live = LIVE.fetch_add(by, Relaxed) + by;
    PEAK.fetch_max(live, Relaxed);
}

/// Blocks this large are mapped by [`huge`] on their own: the size of a huge page (x86-64, and
/// aarch64 with 4 KiB pages).
const HUGE: usize = 2 << 20;

/// Whether a block of `layout` is a large one, mapped by [`huge`] rather than by `System`: a
/// function of the caller's layout alone, so that `dealloc` and `realloc` find the block where
/// `alloc` put it.
fn is_huge(layout: Layout) -> bool {
    layout.size() >= HUGE && layout.align() <= HUGE
}

/// Large blocks: anonymous mappings aligned to [`HUGE`] and advised as huge pages, that grow by
/// moving their pages (`mremap`), not by copying, so a table that doubles needs no second
/// copy of itself (the reason `DigramTable::rebuild` grows in place).
mod huge {
    use super::HUGE;

    fn len(size: usize) -> usize {
        size.next_multiple_of(HUGE)
    }

    /// `len` bytes of address space at a `HUGE` boundary, with protection `prot`, or null.
    fn reserve(len: usize, prot: libc::c_int) -> *mut u8 {
        let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS;
        // SAFETY: a fresh anonymous mapping aliases nothing.
        let raw = unsafe { libc::mmap(std::ptr::null_mut(), len + HUGE, prot, flags, -1, 0) };
        if raw == libc::MAP_FAILED {
            return std::ptr::null_mut();
        }
        let raw = raw as usize;
        let start = raw.next_multiple_of(HUGE);
        // SAFETY: the head and the tail around `[start, start + len)` are ours and unused.
        unsafe {
            if start > raw {
                libc::munmap(raw as *mut libc::c_void, start - raw);
            }
            libc::munmap((start + len) as *mut libc::c_void, raw + HUGE - start);
        }
        start as *mut u8
    }

    fn advise(ptr: *mut u8, len: usize) -> *mut u8 {
        // SAFETY: `madvise` changes how the kernel backs these pages of ours, not their
        // contents. Without huge pages here it fails and nothing changes.
        unsafe { libc::madvise(ptr.cast(), len, libc::MADV_HUGEPAGE) };
        ptr
    }

    /// A zeroed block of at least `size` bytes, or null.
    pub(super) fn alloc(size: usize) -> *mut u8 {
        let p = reserve(len(size), libc::PROT_READ | libc::PROT_WRITE);
        if p.is_null() {
            return p;
        }
        advise(p, len(size))
    }

    /// Frees a block of `size` bytes from [`alloc`] or [`realloc`].
    ///
    /// # Safety
    /// `ptr` is such a block, no longer used.
    pub(super) unsafe fn dealloc(ptr: *mut u8, size: usize) {
        // SAFETY: the block's mapping is exactly `len(size)` bytes at `ptr`.
        unsafe { libc::munmap(ptr.cast(), len(size)) };
    }

    /// The block at `ptr` of `old` bytes resized to `new` (both large), contents kept, or null
    /// (the old block then stays).
    ///
    /// # Safety
    /// `ptr` is a live block of `old` bytes from [`alloc`] or [`realloc`].
    pub(super) unsafe fn realloc(ptr: *mut u8, old: usize, new: usize) -> *mut u8 {
        let (old, new) = (len(old), len(new));
        if new <= old {
            // SAFETY: the tail beyond `new` is ours and no longer used.
            unsafe { libc::munmap(ptr.add(new).cast(), old - new) };
            return ptr;
        }
        // SAFETY: grows the mapping in place if the address space after it is free.
        let grown = unsafe { libc::mremap(ptr.cast(), old, new, 0) };
        if grown != libc::MAP_FAILED {
            return advise(ptr, new);
        }
        let to = reserve(new, libc::PROT_NONE);
        if to.is_null() {
            return to;
        }
        let flags = libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED;
        // SAFETY: moves our pages onto our fresh reservation `to`, which it replaces.
        let moved = unsafe { libc::mremap(ptr.cast(), old, new, flags, to) };
        if moved == libc::MAP_FAILED {
            // SAFETY: the reservation is ours and unused.
            unsafe { libc::munmap(to.cast(), new) };
            return std::ptr::null_mut();
        }
        advise(to, new)
    }
}

// SAFETY: every block is freed where it was allocated ([`is_huge`]) with its size; the
// counters never influence which memory is returned.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        grew(layout.size());
        match is_huge(layout) {
            true => huge::alloc(layout.size()),
            // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract, which we pass on.
            false => unsafe { System.alloc(layout) },
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        grew(layout.size());
        match is_huge(layout) {
            true => huge::alloc(layout.size()),
            // SAFETY: as for `alloc`.
            false => unsafe { System.alloc_zeroed(layout) },
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Relaxed);
        match is_huge(layout) {
            // SAFETY: a large block comes from `huge` with this size.
            true => unsafe { huge::dealloc(ptr, layout.size()) },
            // SAFETY: a small block comes from `System` with this layout.
            false => unsafe { System.dealloc(ptr, layout) },
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller guarantees `new_size`, with `layout`'s alignment, is a valid layout.
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        let new = match (is_huge(layout), is_huge(new_layout)) {
            // SAFETY: as for `dealloc`; the caller upholds `realloc`'s contract.
            (false, false) => unsafe { System.realloc(ptr, layout, new_size) },
            // SAFETY: as for `dealloc`.
            (true, true) => unsafe { huge::realloc(ptr, layout.size(), new_size) },
            // Across the threshold: a new block, the contents copied, the old one freed (both
            // counted while both are live).
            // SAFETY: as for `alloc`; then both blocks are live and distinct, and `ptr`, the
            // caller's block of `layout`, is no longer used.
            _ => unsafe {
                let new = self.alloc(new_layout);
                if !new.is_null() {
                    std::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size));
                    self.dealloc(ptr, layout);
                }
                return new;
            },
        };
        if !new.is_null() {
            if new_size >= layout.size() {
                grew(new_size - layout.size());
            } else {
                LIVE.fetch_sub(layout.size() - new_size, Relaxed);
            }
        }
        new
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Starts a measurement: resets the high-water mark to the bytes live now and returns them.
pub fn start() -> usize {
    let live = LIVE.load(Relaxed);
    PEAK.store(live, Relaxed);
    live
}

/// The peak of live heap bytes since [`start`] returned `base`, above `base`.
pub fn peak_since(base: usize) -> usize {
    PEAK.load(Relaxed).saturating_sub(base)
}

#[cfg(test)]
mod tests {
    /// A block that grows from small to large (a copy into a huge mapping), grows again while
    /// large (pages moved by `mremap`, in place or not), shrinks while large (its tail
    /// unmapped) and shrinks back to small (a copy out) keeps its contents at every step.
    #[test]
    fn blocks_keep_their_contents_across_the_huge_threshold() {
        let pattern = |i: usize| (i.wrapping_mul(2_654_435_761) >> 7) as u32;
        let mut v: Vec<u32> = (0..200_000).map(pattern).collect();
        // Another large block right after it, so that growing in place can fail.
        let mut neighbours = Vec::new();
        for len in [1 << 20, 3 << 20, 17 << 20, 40 << 20] {
            let filled = v.len();
            v.extend((filled..len).map(pattern));
            neighbours.push(vec![7u8; super::HUGE]);
            assert!(v.iter().enumerate().all(|(i, &x)| x == pattern(i)), "{len}");
        }
        for len in [5 << 20, 1 << 20, 100_000] {
            v.truncate(len);
            v.shrink_to_fit();
            assert!(v.iter().enumerate().all(|(i, &x)| x == pattern(i)), "{len}");
        }
        assert!(neighbours.iter().all(|n| n.iter().all(|&b| b == 7)));
    }
}
