//! The runtime's private heap: every allocation of the runtime's Rust code (trace buffers,
//! profile tables, the online compressor's grammar) comes from memory mapped for the runtime
//! alone, never from the program's `malloc`.
//!
//! # Why
//!
//! An instrumented program must take exactly the paths it takes natively, and some programs
//! branch on heap addresses: SQLite tests whether a pointer lies in its lookaside buffer with
//! `p >= start && p < end`, so a block below the buffer and one above it take different
//! branches. With the system allocator the runtime's buffers land in the program's heap at
//! points that differ by mode (a buffer fills after a mode-dependent number of events, and
//! glibc's adaptive mmap threshold moves 128 KiB blocks between `mmap` and the heap), so the
//! program's own blocks end up in different relative places in each mode and the recordings of
//! two modes stop describing the same run. With this heap, the program's `malloc` sees the same
//! calls in every mode; the only allocations glibc still makes for the runtime happen at fixed
//! points (the first event, thread start, exit).
//!
//! # Design
//!
//! Small blocks come from a TLSF allocator ([`rlsf::FlexTlsf`]: constant-time, no per-size
//! caches) whose pools are anonymous mappings of at least [`POOL_BYTES`]. Blocks of
//! [`LARGE_BYTES`] or more get a mapping each: `realloc` moves them with `mremap` (the online
//! compressor's arenas grow without copying) and freeing unmaps them, so a grown-and-freed
//! arena does not stay behind as a dead pool. One mutex guards the TLSF state; it is held
//! across `fork()` (`pthread_atfork`) so a child never inherits it locked by a thread that
//! does not exist there.

use std::alloc::{GlobalAlloc, Layout};
use std::cell::UnsafeCell;
use std::ptr::{self, NonNull};

/// Blocks of at least this many bytes get a mapping of their own.
pub const LARGE_BYTES: usize = 256 << 10;

/// The smallest pool the TLSF allocator maps at a time.
pub const POOL_BYTES: usize = 1 << 20;

/// Mappings are made in whole pages; 4 KiB pages are assumed only for rounding lengths, which
/// the kernel rounds up to its own page size anyway.
const PAGE: usize = 4096;

/// The runtime's global allocator (see the module docs).
pub struct Heap {
    small: UnsafeCell<Tlsf>,
}

type Tlsf = rlsf::FlexTlsf<Pools, usize, usize, { usize::BITS as usize }, { usize::BITS as usize }>;

// SAFETY: `small` is only touched with `LOCK` held.
unsafe impl Sync for Heap {}

/// Guards [`Heap::small`]. A pthread mutex (not `std::sync::Mutex`) so that `pthread_atfork`
/// handlers can hold it across `fork()`.
static mut LOCK: libc::pthread_mutex_t = libc::PTHREAD_MUTEX_INITIALIZER;

impl Heap {
    /// An empty heap; memory is mapped on first use.
    pub const fn new() -> Heap {
        Heap {
            small: UnsafeCell::new(Tlsf::new(Pools)),
        }
    }

    /// Runs `f` on the TLSF state with the lock held.
    fn with_small<R>(&self, f: impl FnOnce(&mut Tlsf) -> R) -> R {
        // SAFETY: the lock serializes every access to `small`.
        unsafe {
            libc::pthread_mutex_lock(ptr::addr_of_mut!(LOCK));
            let r = f(&mut *self.small.get());
            libc::pthread_mutex_unlock(ptr::addr_of_mut!(LOCK));
            r
        }
    }
}

impl Default for Heap {
    fn default() -> Heap {
        Heap::new()
    }
}

/// Whether a block of this layout gets its own mapping (mappings are page-aligned).
fn is_large(layout: Layout) -> bool {
    layout.size() >= LARGE_BYTES && layout.align() <= PAGE
}

fn pages(bytes: usize) -> usize {
    bytes.div_ceil(PAGE) * PAGE
}

/// A fresh zeroed mapping of `bytes` (rounded up to pages), or null.
fn map(bytes: usize) -> *mut u8 {
    // SAFETY: an anonymous private mapping at an address of the kernel's choice.
    let p = unsafe {
        libc::mmap(
            ptr::null_mut(),
            pages(bytes),
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        ptr::null_mut()
    } else {
        p.cast()
    }
}

unsafe impl GlobalAlloc for Heap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if is_large(layout) {
            return map(layout.size());
        }
        self.with_small(|t| t.allocate(layout))
            .map_or(ptr::null_mut(), NonNull::as_ptr)
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if is_large(layout) {
            return map(layout.size()); // fresh anonymous pages are zero
        }
        let p = self.alloc(layout);
        if !p.is_null() {
            ptr::write_bytes(p, 0, layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        if is_large(layout) {
            libc::munmap(p.cast(), pages(layout.size()));
        } else if let Some(p) = NonNull::new(p) {
            self.with_small(|t| t.deallocate(p, layout.align()));
        }
    }

    unsafe fn realloc(&self, p: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let new_layout = Layout::from_size_align_unchecked(new_size, layout.align());
        match (is_large(layout), is_large(new_layout)) {
            (true, true) => {
                let q = libc::mremap(
                    p.cast(),
                    pages(layout.size()),
                    pages(new_size),
                    libc::MREMAP_MAYMOVE,
                );
                if q == libc::MAP_FAILED {
                    ptr::null_mut()
                } else {
                    q.cast()
                }
            }
            (false, false) => match NonNull::new(p) {
                Some(p) => self
                    .with_small(|t| t.reallocate(p, new_layout))
                    .map_or(ptr::null_mut(), NonNull::as_ptr),
                None => ptr::null_mut(),
            },
            _ => {
                // Crossing the threshold: copy between the two kinds of block.
                let q = self.alloc(new_layout);
                if !q.is_null() {
                    ptr::copy_nonoverlapping(p, q, layout.size().min(new_size));
                    self.dealloc(p, layout);
                }
                q
            }
        }
    }
}

/// Where the TLSF allocator gets its pools: anonymous mappings, never returned (TLSF reuses
/// freed space; large blocks do not come from pools).
struct Pools;

// SAFETY: `alloc` returns fresh mappings that nothing else uses.
unsafe impl rlsf::FlexSource for Pools {
    unsafe fn alloc(&mut self, min_size: usize) -> Option<NonNull<[u8]>> {
        static HOLD_ACROSS_FORK: std::sync::Once = std::sync::Once::new();
        HOLD_ACROSS_FORK.call_once(hold_across_fork);
        let bytes = pages(min_size.max(POOL_BYTES));
        let p = NonNull::new(map(bytes))?;
        Some(NonNull::slice_from_raw_parts(p, bytes))
    }

    fn min_align(&self) -> usize {
        PAGE
    }
}

/// Makes `fork()` take the heap's lock first and release it in both processes, so the child's
/// copy of the heap is consistent and unlocked. Registered when the first pool is mapped (with
/// the lock held, which `pthread_atfork` does not need).
fn hold_across_fork() {
    extern "C" fn lock() {
        // SAFETY: a process-wide static mutex.
        unsafe { libc::pthread_mutex_lock(ptr::addr_of_mut!(LOCK)) };
    }
    extern "C" fn unlock() {
        // SAFETY: called in the parent by the thread that locked it in `lock`, and in the child
        // by that thread's copy.
        unsafe { libc::pthread_mutex_unlock(ptr::addr_of_mut!(LOCK)) };
    }
    // SAFETY: registering plain functions.
    unsafe { libc::pthread_atfork(Some(lock), Some(unlock), Some(unlock)) };
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A live block: its layout and the byte pattern it was filled with.
    struct Live {
        p: *mut u8,
        layout: Layout,
        fill: u8,
    }

    fn check(b: &Live) {
        let bytes = unsafe { std::slice::from_raw_parts(b.p, b.layout.size()) };
        assert!(bytes.iter().all(|&x| x == b.fill), "block contents changed");
        assert_eq!(b.p as usize % b.layout.align(), 0, "misaligned block");
    }

    #[derive(Debug, Clone)]
    enum Op {
        Alloc { size: usize, align_log2: u32 },
        Free(usize),
        Grow(usize, usize),
    }

    fn op() -> impl Strategy<Value = Op> {
        // sizes straddle LARGE_BYTES so every realloc crossing is exercised
        let size = prop_oneof![1usize..512, 1usize..(2 * LARGE_BYTES), Just(LARGE_BYTES)];
        prop_oneof![
            (size.clone(), 0u32..13).prop_map(|(size, align_log2)| Op::Alloc { size, align_log2 }),
            any::<usize>().prop_map(Op::Free),
            (any::<usize>(), size).prop_map(|(i, s)| Op::Grow(i, s)),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// Oracle: every live block keeps its contents and alignment whatever happens to the
        /// others (allocations, frees and reallocations across the large-block threshold),
        /// and no two live blocks overlap.
        #[test]
        fn blocks_keep_their_contents(ops in proptest::collection::vec(op(), 1..60)) {
            let heap = Heap::new();
            let mut live: Vec<Live> = Vec::new();
            for (n, op) in ops.into_iter().enumerate() {
                let fill = n as u8;
                match op {
                    Op::Alloc { size, align_log2 } => unsafe {
                        let layout = Layout::from_size_align(size, 1 << align_log2).unwrap();
                        let p = heap.alloc(layout);
                        prop_assert!(!p.is_null());
                        ptr::write_bytes(p, fill, size);
                        live.push(Live { p, layout, fill });
                    },
                    Op::Free(i) if !live.is_empty() => unsafe {
                        let b = live.swap_remove(i % live.len());
                        check(&b);
                        heap.dealloc(b.p, b.layout);
                    },
                    Op::Grow(i, size) if !live.is_empty() => unsafe {
                        let i = i % live.len();
                        let b = &mut live[i];
                        check(b);
                        let p = heap.realloc(b.p, b.layout, size);
                        prop_assert!(!p.is_null());
                        let kept = b.layout.size().min(size);
                        let old = std::slice::from_raw_parts(p, kept);
                        prop_assert!(old.iter().all(|&x| x == b.fill), "realloc lost bytes");
                        ptr::write_bytes(p, fill, size);
                        *b = Live { p, layout: Layout::from_size_align(size, b.layout.align()).unwrap(), fill };
                    },
                    _ => {}
                }
            }
            let mut spans: Vec<(usize, usize)> =
                live.iter().map(|b| (b.p as usize, b.p as usize + b.layout.size())).collect();
            spans.sort_unstable();
            for w in spans.windows(2) {
                prop_assert!(w[0].1 <= w[1].0, "live blocks overlap");
            }
            for b in live {
                check(&b);
                unsafe { heap.dealloc(b.p, b.layout) };
            }
        }
    }

    #[test]
    fn large_zeroed_blocks_are_zero() {
        let heap = Heap::new();
        let layout = Layout::from_size_align(LARGE_BYTES * 3, 8).unwrap();
        unsafe {
            let p = heap.alloc_zeroed(layout);
            assert!(std::slice::from_raw_parts(p, layout.size())
                .iter()
                .all(|&x| x == 0));
            heap.dealloc(p, layout);
        }
    }
}
