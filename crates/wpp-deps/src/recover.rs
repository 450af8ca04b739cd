//! Dependence recovery from an address trace (Tallam and Gupta §5, Figure 22 and the hash
//! table described after it, made byte-granular by [`LastWriter`]): replay the accesses in
//! order; a store (or a modelled library write) sets the last writer of its bytes; a load
//! depends on the last writer of each byte it reads.
//!
//! Beyond the paper, the accesses of several threads are replayed in the one order their
//! sequence numbers give (`crate::at`): instances count per instruction over all threads, and
//! each dependence names the load's thread and the store's, so a cross-thread dependence is
//! reported as such. The store's thread is not kept per byte: per store instruction, the
//! instances at which its thread changed (one entry for a store that runs on one thread), looked
//! up by binary search.

use crate::at::{Access, Run};
use crate::lastwriter::{self, Instance, LastWriter, Writer};
use crate::memdb::{AccessKind, MemoryDb};
use rustc_hash::{FxHashMap, FxHashSet};
use serde::Serialize;

/// One dynamic memory dependence: `load` read `bytes` bytes whose last writer is `store`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct Dependence {
    /// The load instance.
    pub load: Instance,
    /// The last writer of those bytes.
    pub store: Writer,
    /// The offset of the first such byte from the load's address.
    pub offset: u64,
    /// How many of the load's bytes this writer wrote.
    pub bytes: u64,
    /// One past the offset of the last such byte: `end - offset == bytes` when they are
    /// contiguous, else other writers' bytes lie between them.
    pub end: u64,
    /// Which of the load's first 64 bytes this writer wrote (bit `i`: offset `i`), so the
    /// bytes of a load up to 64 bytes wide are known exactly ([`Dependence::pieces`]).
    pub mask: u64,
    /// The load's thread.
    pub thread: u32,
    /// The store's thread (`None`: external).
    pub store_thread: Option<u32>,
}

impl Dependence {
    /// The writer's bytes as maximal `(offset, len)` runs, if known exactly (`end` ≤ 64).
    pub fn pieces(&self) -> Option<Vec<(u64, u64)>> {
        if self.end > 64 {
            return None;
        }
        Some(mask_runs(self.mask).collect())
    }
}

/// The bytes a mask of a load's first 64 holds, as maximal `(offset, len)` runs in order.
pub(crate) fn mask_runs(mut mask: u64) -> impl Iterator<Item = (u64, u64)> {
    std::iter::from_fn(move || {
        if mask == 0 {
            return None;
        }
        let at = u64::from(mask.trailing_zeros());
        let len = u64::from((mask >> at).trailing_ones());
        mask &= !byte_mask(at, len);
        Some((at, len))
    })
}

/// The bits of bytes `offset..offset + len` among a load's first 64.
pub(crate) fn byte_mask(offset: u64, len: u64) -> u64 {
    let (lo, hi) = (offset.min(64), offset.saturating_add(len).min(64));
    ((1u128 << hi) - (1u128 << lo)) as u64
}

/// Counts of a recovery (`wpp deps stats`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Stats {
    /// Load instances.
    pub loads: u64,
    /// Store instances.
    pub stores: u64,
    /// Modelled library writes (allocations, `read(2)`).
    pub clobbers: u64,
    /// Dynamic dependences on a store of the program.
    pub dependences: u64,
    /// Dynamic dependences on bytes written outside the program.
    pub external: u64,
    /// Loads whose bytes come from more than one writer.
    pub multi_writer_loads: u64,
    /// Distinct static (store, load) pairs exercised (0 unless counted:
    /// [`Recovery::counting_pairs`]).
    pub pairs: u64,
    /// Threads that accessed memory.
    pub threads: u32,
    /// Dependences whose store ran on another thread than the load.
    pub cross_thread: u64,
}

/// The widest store or load a recovery takes: 1 GiB, whose last writers take 8 GiB of table
/// (a clobber, which only clears the table, may be of any size). Wider ones are refused rather
/// than exhausting memory on a damaged or hostile address trace.
pub const MAX_ACCESS_BYTES: u64 = 1 << 30;

/// Why a recovery failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RecoverError {
    /// The AT could not be read.
    #[error(transparent)]
    At(#[from] crate::at::AtError),
    /// An access names an instruction the memory database does not have.
    #[error("access {index} names memory instruction {id}, but the program has {count}")]
    UnknownId {
        /// The access's position in the trace (from 0).
        index: u64,
        /// Its id.
        id: u32,
        /// How many instructions the database has.
        count: usize,
    },
    /// An access of a second thread where one thread's are expected (the eCF).
    #[error(
        "thread {thread} accessed memory: an eCF is built from a single-threaded program's \
         address trace"
    )]
    OtherThread {
        /// The thread.
        thread: u32,
    },
    /// A store or load wider than the last-writer table takes ([`MAX_ACCESS_BYTES`]).
    #[error(
        "access {index}: instruction {id} accesses {size} bytes at once, more than the {max} \
         a dependence recovery takes (its table holds 8 bytes per byte written)"
    )]
    TooLarge {
        /// The access's position.
        index: u64,
        /// Its id.
        id: u32,
        /// Its size.
        size: u64,
        /// The limit.
        max: u64,
    },
    /// A counter outgrew what the last-writer table packs.
    #[error("access {index}: instruction {id} ran more than {max} times (the table's limit)")]
    TooManyInstances {
        /// The access's position.
        index: u64,
        /// Its id.
        id: u32,
        /// The limit.
        max: u64,
    },
}

/// The replay state: the last-writer table and each instruction's execution count.
pub struct Recovery<'a> {
    db: &'a MemoryDb,
    /// Each instruction's kind (the database's entries are large: one cache line each).
    kinds: Vec<AccessKind>,
    table: LastWriter,
    instances: Vec<u64>,
    /// Static (store, load) pairs seen (`None`: external), when counted ([`Self::counting_pairs`]).
    pairs: Option<FxHashSet<(Option<u32>, u32)>>,
    /// Per load: the stores (id + 1, 0: external) of its two pairs inserted last, the latest
    /// first, which most dependences repeat (spares the set a lookup per dependence; two, for
    /// a load that alternates between two stores).
    last_pair: Vec<[u32; 2]>,
    stats: Stats,
    index: u64,
    writers: Vec<Dependence>,
    /// The current load's writers by writer, once there are more than [`SCAN_WRITERS`].
    by_writer: FxHashMap<Writer, usize>,
    /// The thread whose accesses are being replayed.
    thread: u32,
    /// Per store instruction: (first instance, thread) each time its thread changed.
    store_threads: Vec<Vec<(u64, u32)>>,
    /// Per store instruction: the thread of its latest instance ([`NONE`] before it ran).
    /// Until some store runs on a second thread (`several`), this answers for every instance
    /// without reaching into `store_threads`.
    store_thread: Vec<u32>,
    /// Whether some store ran on several threads.
    several: bool,
}

/// [`Recovery`]'s `store_thread` of a store that has not run.
const NONE: u32 = u32::MAX;

/// Up to this many writers per load, a load's writers are found by a scan.
const SCAN_WRITERS: usize = 16;

impl<'a> Recovery<'a> {
    /// A recovery over the instructions of `db`, which does not count pairs (its
    /// [`stats`](Self::stats) say 0): the collection and the filter keep their own.
    pub fn new(db: &'a MemoryDb) -> Self {
        Recovery {
            db,
            kinds: db.instructions.iter().map(|i| i.kind).collect(),
            table: LastWriter::new(),
            instances: vec![0; db.instructions.len()],
            pairs: None,
            last_pair: vec![[u32::MAX; 2]; db.instructions.len()],
            stats: Stats {
                threads: 1,
                ..Stats::default()
            },
            index: 0,
            writers: Vec::new(),
            by_writer: FxHashMap::default(),
            thread: 0,
            store_threads: vec![Vec::new(); db.instructions.len()],
            store_thread: vec![NONE; db.instructions.len()],
            several: false,
        }
    }

    /// A recovery that counts the distinct static pairs exercised (`wpp deps stats`).
    pub fn counting_pairs(db: &'a MemoryDb) -> Self {
        Recovery {
            pairs: Some(FxHashSet::default()),
            ..Recovery::new(db)
        }
    }

    /// Replays the following accesses as thread `thread`'s.
    pub fn set_thread(&mut self, thread: u32) {
        self.thread = thread;
        self.stats.threads = self.stats.threads.max(thread + 1);
    }

    /// The thread that ran store instance `s`.
    fn thread_of(&self, s: Instance) -> u32 {
        if !self.several {
            return self.store_thread[s.id as usize];
        }
        let runs = &self.store_threads[s.id as usize];
        let i = runs.partition_point(|&(first, _)| first <= s.n);
        runs[i - 1].1
    }

    /// Replays one access; returns the instance it is, and for a load its dependences (in
    /// the order of the load's bytes, one per distinct writer).
    ///
    /// Inlined so that its caller's `Access` stays in registers: passed by value, the collection
    /// (`wpp_rt::ewpp`) stored its 4-byte id and reloaded it as 8 bytes with the padding, a
    /// store-forwarding stall that was 13 % of the checks' samples (zlib, `perf annotate`).
    #[inline]
    pub fn step(&mut self, a: Access) -> Result<(Instance, &[Dependence]), RecoverError> {
        let index = self.index;
        self.index += 1;
        let kind = match self.kinds.get(a.id as usize) {
            Some(&kind) if a.id <= lastwriter::MAX_ID => kind,
            _ => {
                return Err(RecoverError::UnknownId {
                    index,
                    id: a.id,
                    count: self.db.instructions.len(),
                })
            }
        };
        let n = &mut self.instances[a.id as usize];
        *n += 1;
        if *n > lastwriter::MAX_INSTANCE {
            let max = lastwriter::MAX_INSTANCE;
            return Err(RecoverError::TooManyInstances {
                index,
                id: a.id,
                max,
            });
        }
        if a.size > MAX_ACCESS_BYTES && kind != AccessKind::Clobber {
            return Err(RecoverError::TooLarge {
                index,
                id: a.id,
                size: a.size,
                max: MAX_ACCESS_BYTES,
            });
        }
        let inst = Instance { id: a.id, n: *n };
        self.writers.clear();
        match kind {
            AccessKind::Store => {
                self.stats.stores += 1;
                let latest = &mut self.store_thread[a.id as usize];
                if *latest != self.thread {
                    self.several |= *latest != NONE;
                    *latest = self.thread;
                    self.store_threads[a.id as usize].push((inst.n, self.thread));
                }
                self.table.write(a.addr, a.size, Writer::Store(inst));
            }
            AccessKind::Clobber => {
                self.stats.clobbers += 1;
                self.table.write(a.addr, a.size, Writer::External);
            }
            AccessKind::Load => self.load(inst, a),
        }
        Ok((inst, &self.writers))
    }

    fn load(&mut self, inst: Instance, a: Access) {
        self.stats.loads += 1;
        match self.table.read_uniform(a.addr, a.size) {
            Some(store) => self.writers.push(Dependence {
                load: inst,
                store,
                offset: 0,
                bytes: a.size,
                end: a.size,
                mask: byte_mask(0, a.size),
                thread: 0,
                store_thread: None,
            }),
            None => self.read_writers(inst, a),
        }
        self.note_writers(inst);
    }

    /// The writers of a load's bytes, in the order of its bytes, one entry per writer.
    fn read_writers(&mut self, inst: Instance, a: Access) {
        let (writers, by_writer) = (&mut self.writers, &mut self.by_writer);
        by_writer.clear();
        self.table.read(a.addr, a.size, |offset, len, w| {
            // A few writers: a scan; the many of a block copy: a map (a scan would be quadratic).
            let found = match writers.len() {
                0..=SCAN_WRITERS => writers.iter().position(|d| d.store == w),
                _ => {
                    if by_writer.is_empty() {
                        by_writer.extend(writers.iter().enumerate().map(|(i, d)| (d.store, i)));
                    }
                    by_writer.get(&w).copied()
                }
            };
            match found {
                Some(i) => {
                    let d = &mut writers[i];
                    d.bytes += len;
                    d.end = offset + len;
                    d.mask |= byte_mask(offset, len);
                }
                None => {
                    if !by_writer.is_empty() {
                        by_writer.insert(w, writers.len());
                    }
                    writers.push(Dependence {
                        load: inst,
                        store: w,
                        offset,
                        bytes: len,
                        end: offset + len,
                        mask: byte_mask(offset, len),
                        thread: 0,
                        store_thread: None,
                    })
                }
            }
        });
    }

    /// Completes the current load's writers with their threads, and counts them.
    fn note_writers(&mut self, inst: Instance) {
        if self.writers.len() > 1 {
            self.stats.multi_writer_loads += 1;
        }
        for i in 0..self.writers.len() {
            let store_thread = match self.writers[i].store {
                Writer::Store(s) => Some(self.thread_of(s)),
                Writer::External => None,
            };
            let d = &mut self.writers[i];
            (d.thread, d.store_thread) = (self.thread, store_thread);
            let store = match d.store {
                Writer::External => {
                    self.stats.external += 1;
                    None
                }
                Writer::Store(s) => {
                    self.stats.dependences += 1;
                    self.stats.cross_thread += u64::from(store_thread != Some(self.thread));
                    Some(s.id)
                }
            };
            let Some(pairs) = &mut self.pairs else {
                continue;
            };
            let key = store.map_or(0, |s| s + 1);
            let last = &mut self.last_pair[inst.id as usize];
            if last[0] != key {
                if last[1] != key {
                    pairs.insert((store, inst.id));
                }
                *last = [key, last[0]];
            }
        }
    }

    /// The counts so far.
    pub fn stats(&self) -> Stats {
        Stats {
            pairs: self
                .pairs
                .iter()
                .flatten()
                .filter(|(s, _)| s.is_some())
                .count() as u64,
            ..self.stats.clone()
        }
    }

    /// Executions of each instruction so far (by id).
    pub fn instances(&self) -> &[u64] {
        &self.instances
    }
}

/// Recovers every dependence of a stream of runs of accesses (an [`crate::AtReader`], or
/// chunks of a single thread's accesses), calling `on_dep` for each.
pub fn recover<T: Into<Run>, E>(
    db: &MemoryDb,
    runs: impl IntoIterator<Item = Result<T, E>>,
    mut on_dep: impl FnMut(&Dependence),
) -> Result<Stats, RecoverError>
where
    RecoverError: From<E>,
{
    let mut r = Recovery::counting_pairs(db);
    for run in runs {
        let run: Run = run?.into();
        r.set_thread(run.thread);
        for a in run.accesses {
            let (_, deps) = r.step(a)?;
            deps.iter().for_each(&mut on_dep);
        }
    }
    Ok(r.stats())
}

impl From<std::convert::Infallible> for RecoverError {
    fn from(e: std::convert::Infallible) -> Self {
        match e {}
    }
}
