//! Dependence recovery from an address trace (Tallam and Gupta §5, Figure 22 and the hash
//! table described after it, made byte-granular by [`LastWriter`]): replay the accesses in
//! order; a store (or a modelled library write) sets the last writer of its bytes; a load
//! depends on the last writer of each byte it reads.

use crate::at::Access;
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
    /// Distinct static (store, load) pairs exercised.
    pub pairs: u64,
}

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
    table: LastWriter,
    instances: Vec<u64>,
    /// Static (store, load) pairs seen (`None`: external).
    pairs: FxHashSet<(Option<u32>, u32)>,
    /// Per load: the store (id + 1, 0: external) of its pair inserted last, which most
    /// dependences repeat (spares the set a lookup per dependence).
    last_pair: Vec<u32>,
    stats: Stats,
    index: u64,
    writers: Vec<Dependence>,
    /// The current load's writers by writer, once there are more than [`SCAN_WRITERS`].
    by_writer: FxHashMap<Writer, usize>,
}

/// Up to this many writers per load, a load's writers are found by a scan.
const SCAN_WRITERS: usize = 16;

impl<'a> Recovery<'a> {
    /// A recovery over the instructions of `db`.
    pub fn new(db: &'a MemoryDb) -> Self {
        Recovery {
            db,
            table: LastWriter::new(),
            instances: vec![0; db.instructions.len()],
            pairs: FxHashSet::default(),
            last_pair: vec![u32::MAX; db.instructions.len()],
            stats: Stats::default(),
            index: 0,
            writers: Vec::new(),
            by_writer: FxHashMap::default(),
        }
    }

    /// Replays one access; returns the instance it is, and for a load its dependences (in
    /// the order of the load's bytes, one per distinct writer).
    pub fn step(&mut self, a: Access) -> Result<(Instance, &[Dependence]), RecoverError> {
        let index = self.index;
        self.index += 1;
        let count = self.db.instructions.len();
        let kind = match self.db.get(a.id) {
            Some(i) if a.id <= lastwriter::MAX_ID => i.kind,
            _ => {
                return Err(RecoverError::UnknownId {
                    index,
                    id: a.id,
                    count,
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
        let inst = Instance { id: a.id, n: *n };
        self.writers.clear();
        match kind {
            AccessKind::Store => {
                self.stats.stores += 1;
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
                Some(i) => writers[i].bytes += len,
                None => {
                    if !by_writer.is_empty() {
                        by_writer.insert(w, writers.len());
                    }
                    writers.push(Dependence {
                        load: inst,
                        store: w,
                        offset,
                        bytes: len,
                    })
                }
            }
        });
        if writers.len() > 1 {
            self.stats.multi_writer_loads += 1;
        }
        for d in writers.iter() {
            let store = match d.store {
                Writer::External => {
                    self.stats.external += 1;
                    None
                }
                Writer::Store(s) => {
                    self.stats.dependences += 1;
                    Some(s.id)
                }
            };
            let key = store.map_or(0, |s| s + 1);
            if std::mem::replace(&mut self.last_pair[inst.id as usize], key) != key {
                self.pairs.insert((store, inst.id));
            }
        }
    }

    /// The counts so far.
    pub fn stats(&self) -> Stats {
        Stats {
            pairs: self.pairs.iter().filter(|(s, _)| s.is_some()).count() as u64,
            ..self.stats.clone()
        }
    }

    /// Executions of each instruction so far (by id).
    pub fn instances(&self) -> &[u64] {
        &self.instances
    }
}

/// Recovers every dependence of a stream of accesses, calling `on_dep` for each.
pub fn recover<E>(
    db: &MemoryDb,
    chunks: impl IntoIterator<Item = Result<Vec<Access>, E>>,
    mut on_dep: impl FnMut(&Dependence),
) -> Result<Stats, RecoverError>
where
    RecoverError: From<E>,
{
    let mut r = Recovery::new(db);
    for chunk in chunks {
        for a in chunk? {
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
