//! The filtering phase (Tallam and Gupta §3.1): which (store, load) pairs a run exercised, and
//! the class of each (§2.1–2.3, Definitions 1–4), observed dynamically:
//!
//! | class | cost of its check in the collection run | observed when |
//! |---|---|---|
//! | fully free (Def. 1) | none: the control flow trace alone recovers it | the store and the load each accessed one address, the same, and every byte the load ever read was last written by this store |
//! | partially free (Def. 2) | none for the occurrences the CF recovers | the store and the load each accessed one address, the same, but the load sometimes read bytes of another writer |
//! | last-instance (Def. 3), fixed-cost | one address comparison per execution of the load | the store accessed one address (every execution overwrites it, so only its last instance can reach a load) |
//! | any-instance (Def. 4), variable-cost | a search of the store's address buffer | the store accessed several addresses |
//!
//! The report is computed from a `trace-addr` recording (the filtering run's information is
//! exactly what the address trace holds), or by the `ewpp-filter` runtime, and saved as a
//! versioned, checksummed file that names the program's memory database by its CRC-32, so a
//! collection build can refuse a report of another program. A process of several modules (an
//! executable and its shared libraries) numbers their instructions in one id space; its
//! report also lists each module's CRC-32 and range ([`ReportModule`]), so the collection
//! build of each module finds its own instructions, and the collection run maps the pairs to
//! its own numbering whatever the order its modules registered in.
//!
//! # File layout (version 2)
//!
//! `WPP-DEPF` (8 bytes), `u32` version, `u32` length `n`, `n` bytes of postcard
//! [`FilterReport`], `u32` CRC-32 of those bytes; integers little-endian.

use crate::at::{Access, Run};
use crate::lastwriter::Writer;
use crate::memdb::MemoryDb;
use crate::recover::{RecoverError, Recovery};
use rustc_hash::{FxHashMap, FxHashSet};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The classes of Definitions 1–4.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Class {
    /// Definition 1 (no-cost).
    FullyFree,
    /// Definition 2 (no-cost where the CF recovers it).
    PartiallyFree,
    /// Definition 3 (fixed-cost check).
    LastInstance,
    /// Definition 4 (variable-cost check).
    AnyInstance,
}

impl Class {
    /// All classes, in the order of Table VIII.
    pub const ALL: [Class; 4] = [
        Class::FullyFree,
        Class::PartiallyFree,
        Class::LastInstance,
        Class::AnyInstance,
    ];
}

/// One exercised (store, load) pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pair {
    /// The store's memory-instruction id.
    pub store: u32,
    /// The load's.
    pub load: u32,
    /// Its class.
    pub class: Class,
    /// Dynamic occurrences in the filtering run.
    pub occurrences: u64,
}

/// One module of the filtering run's process: its memory instructions took the ids
/// `first..first + instructions`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReportModule {
    /// The module's [`program_crc`].
    pub crc: u32,
    /// Its first instruction's id in the report.
    pub first: u32,
    /// How many memory instructions it has.
    pub instructions: u32,
}

/// The filtering run's result: the input of a collection build.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FilterReport {
    /// The program's [`program_crc`] (of a process of several modules, of the merged
    /// database its recording started with).
    pub program_crc: u32,
    /// The process's modules when there were several, by `first`, each CRC once; empty for
    /// one module, whose CRC is `program_crc` and whose ids are the report's.
    pub modules: Vec<ReportModule>,
    /// Exercised pairs, by (store, load).
    pub pairs: Vec<Pair>,
}

/// One address an instruction accessed, or several.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Addresses {
    One(u64, u64),
    Many,
}

fn note(map: &mut FxHashMap<u32, Addresses>, a: &Access) {
    map.entry(a.id)
        .and_modify(|s| {
            if *s != Addresses::One(a.addr, a.size) {
                *s = Addresses::Many;
            }
        })
        .or_insert(Addresses::One(a.addr, a.size));
}

/// Classifies every pair a recording exercised.
pub fn classify<T: Into<Run>, E>(
    db: &MemoryDb,
    runs: impl IntoIterator<Item = Result<T, E>>,
) -> Result<FilterReport, RecoverError>
where
    RecoverError: From<E>,
{
    let mut c = Classifier::new(db);
    for run in runs {
        for a in run?.into().accesses {
            c.add(a)?;
        }
    }
    Ok(c.finish())
}

/// The filtering phase as a stream: accesses in, the report at the end (what `classify` does
/// to a recording, and the `ewpp-filter` runtime to the program's accesses as they run).
pub struct Classifier<'a> {
    db: &'a MemoryDb,
    recovery: Recovery<'a>,
    addrs: FxHashMap<u32, Addresses>,
    occurrences: FxHashMap<(u32, u32), u64>,
    /// Per load: every writer its bytes ever had (None: external).
    writers: FxHashMap<u32, FxHashSet<Option<u32>>>,
}

impl<'a> Classifier<'a> {
    /// A classifier for the program `db`.
    pub fn new(db: &'a MemoryDb) -> Self {
        Classifier {
            db,
            recovery: Recovery::new(db),
            addrs: FxHashMap::default(),
            occurrences: FxHashMap::default(),
            writers: FxHashMap::default(),
        }
    }

    /// Takes the next access.
    pub fn add(&mut self, a: Access) -> Result<(), RecoverError> {
        note(&mut self.addrs, &a);
        let (_, deps) = self.recovery.step(a)?;
        for d in deps {
            let store = match d.store {
                Writer::Store(s) => Some(s.id),
                Writer::External => None,
            };
            self.writers.entry(d.load.id).or_default().insert(store);
            if let Some(s) = store {
                *self.occurrences.entry((s, d.load.id)).or_default() += 1;
            }
        }
        Ok(())
    }

    /// The report: every exercised pair with its class (Definitions 1–4).
    pub fn finish(self) -> FilterReport {
        let (addrs, writers) = (&self.addrs, &self.writers);
        let mut pairs: Vec<Pair> = self
            .occurrences
            .into_iter()
            .map(|((store, load), occurrences)| {
                let class = match (addrs[&store], addrs[&load]) {
                    (Addresses::One(x, n), Addresses::One(y, m)) if x <= y && y + m <= x + n => {
                        if writers[&load].len() == 1 {
                            Class::FullyFree
                        } else {
                            Class::PartiallyFree
                        }
                    }
                    (Addresses::One(..), _) => Class::LastInstance,
                    (Addresses::Many, _) => Class::AnyInstance,
                };
                Pair {
                    store,
                    load,
                    class,
                    occurrences,
                }
            })
            .collect();
        pairs.sort_by_key(|p| (p.store, p.load));
        let program_crc = program_crc(self.db);
        FilterReport {
            program_crc,
            modules: Vec::new(),
            pairs,
        }
    }
}

/// The CRC-32 a report uses to name its program: of its memory instructions and its
/// functions' names, not of its source files' paths, so that the same sources built in another
/// directory (or named `./s.c` rather than `s.c`) are the same program.
pub fn program_crc(db: &MemoryDb) -> u32 {
    let names: Vec<&str> = db
        .program
        .functions
        .iter()
        .map(|f| f.name.as_str())
        .collect();
    crc32fast::hash(&postcard::to_allocvec(&(&db.instructions, names)).unwrap_or_default())
}

/// One row of Table VIII: pairs and dynamic occurrences per class.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Distribution {
    /// Static pairs per class (in [`Class::ALL`] order).
    pub pairs: [u64; 4],
    /// Dynamic occurrences per class.
    pub occurrences: [u64; 4],
}

impl FilterReport {
    /// The report's modules: [`FilterReport::modules`], or the one module the report names
    /// by `program_crc`.
    pub fn module_ranges(&self) -> Vec<ReportModule> {
        match self.modules.is_empty() {
            true => vec![ReportModule {
                crc: self.program_crc,
                first: 0,
                instructions: u32::MAX,
            }],
            false => self.modules.clone(),
        }
    }

    /// The pairs whose load is in the module named `crc`, numbered for a process whose
    /// modules' first instructions are `first` (by CRC): the collection run's share of this
    /// module's report. A pair whose store is in a module the process lacks is left out: it
    /// cannot occur.
    pub fn pairs_of_module(&self, crc: u32, first: &FxHashMap<u32, u32>) -> Vec<Pair> {
        let ranges = self.module_ranges();
        let at = |id: u32| {
            let r = ranges[ranges.partition_point(|r| r.first <= id).checked_sub(1)?];
            let local = id.checked_sub(r.first)?;
            (local < r.instructions).then_some((r.crc, local))
        };
        let process_id = |id: u32| {
            let (crc, local) = at(id)?;
            first.get(&crc)?.checked_add(local).map(|id| (crc, id))
        };
        self.pairs
            .iter()
            .filter_map(|p| {
                let (load_module, load) = process_id(p.load)?;
                let (_, store) = process_id(p.store)?;
                (load_module == crc).then_some(Pair { store, load, ..*p })
            })
            .collect()
    }

    /// Table VIII: the distribution per function (of the load) and in total.
    pub fn distribution(&self, db: &MemoryDb) -> (BTreeMap<String, Distribution>, Distribution) {
        let mut per: BTreeMap<String, Distribution> = BTreeMap::new();
        let mut total = Distribution::default();
        for p in &self.pairs {
            let c = Class::ALL
                .iter()
                .position(|&c| c == p.class)
                .expect("class");
            let f = db
                .get(p.load)
                .and_then(|i| db.program.functions.get(i.function as usize))
                .map_or_else(|| "?".to_string(), |f| f.name.clone());
            for d in [per.entry(f).or_default(), &mut total] {
                d.pairs[c] += 1;
                d.occurrences[c] += p.occurrences;
            }
        }
        (per, total)
    }

    /// Encodes the report file.
    pub fn to_bytes(&self) -> Vec<u8> {
        let body = postcard::to_allocvec(self).expect("plain data encodes");
        let mut out = Vec::with_capacity(body.len() + 20);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&(body.len() as u32).to_le_bytes());
        out.extend_from_slice(&body);
        out.extend_from_slice(&crc32fast::hash(&body).to_le_bytes());
        out
    }

    /// Decodes a report file; `path` names it in errors.
    pub fn from_bytes(bytes: &[u8], path: &str) -> Result<FilterReport, crate::at::AtError> {
        let err = |offset: u64, message: String| crate::at::AtError::Format {
            path: path.to_string(),
            offset,
            message,
        };
        let u32_at = |at: usize| -> Result<u32, crate::at::AtError> {
            bytes
                .get(at..at + 4)
                .map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")))
                .ok_or_else(|| err(at as u64, "truncated dependence report".into()))
        };
        if bytes.get(..8) != Some(&MAGIC[..]) {
            return Err(err(0, "not a dependence report (bad magic)".into()));
        }
        let version = u32_at(8)?;
        if version != VERSION {
            return Err(err(
                8,
                format!(
                    "report version {version} (this wpp reads {VERSION}): make it again with \
                     this wpp"
                ),
            ));
        }
        let len = u32_at(12)? as usize;
        let body = bytes
            .get(16..16usize.saturating_add(len))
            .ok_or_else(|| err(16, format!("truncated: the report body of {len} bytes")))?;
        if u32_at(16 + len)? != crc32fast::hash(body) {
            return Err(err(16, "report checksum mismatch".into()));
        }
        if bytes.len() != 20 + len {
            return Err(err(20 + len as u64, "bytes after the report".into()));
        }
        let (report, rest): (FilterReport, _) = postcard::take_from_bytes(body)
            .map_err(|e| err(16, format!("cannot decode the report: {e}")))?;
        if !rest.is_empty() {
            let at = (16 + len - rest.len()) as u64;
            return Err(err(at, "bytes after the report's last pair".into()));
        }
        // The ranges must be in order and apart: pairs are looked up among them by id.
        let apart = report.modules.windows(2).all(|w| {
            let end = u64::from(w[0].first) + u64::from(w[0].instructions);
            end <= u64::from(w[1].first)
        });
        if !apart {
            return Err(err(
                16,
                "the report's module ranges overlap or are out of order".into(),
            ));
        }
        let mut crcs: Vec<u32> = report.modules.iter().map(|m| m.crc).collect();
        crcs.sort_unstable();
        if let Some(w) = crcs.windows(2).find(|w| w[0] == w[1]) {
            let message = format!("the report names module {:#010x} twice", w[0]);
            return Err(err(16, message));
        }
        Ok(report)
    }
}

/// The report file's first 8 bytes.
pub const MAGIC: &[u8; 8] = b"WPP-DEPF";
/// The report layout version (2: [`FilterReport::modules`]).
pub const VERSION: u32 = 2;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memdb::{AccessKind, MemInstr};

    fn db(kinds: &[AccessKind]) -> MemoryDb {
        MemoryDb {
            version: 1,
            program: Default::default(),
            instructions: kinds
                .iter()
                .map(|&kind| MemInstr {
                    function: 0,
                    block: 0,
                    line: 1,
                    column: 0,
                    file: crate::memdb::NO_FILE,
                    kind,
                    what: String::new(),
                })
                .collect(),
            files: Vec::new(),
        }
    }

    fn acc(id: u32, addr: u64, size: u64) -> Access {
        Access { id, addr, size }
    }

    /// One case per class, worked out by hand from Definitions 1–4.
    #[test]
    fn classes_by_hand() {
        use AccessKind::{Load, Store};
        // 0: store to X only; 1: load of X only (fully free).
        // 2: store to X as well, 3: load of X that also reads 2's value (partially free with 0).
        // 4: load of varying addresses reading 0's X once (last-instance).
        // 5: store to varying addresses, 6: load reading them (any-instance).
        let d = db(&[Store, Load, Store, Load, Load, Store, Load]);
        let t = vec![
            acc(0, 100, 4),
            acc(1, 100, 4),
            acc(3, 100, 4),
            acc(4, 100, 4),
            acc(4, 200, 4),
            acc(2, 100, 4),
            acc(3, 100, 4),
            acc(5, 300, 4),
            acc(5, 304, 4),
            acc(6, 300, 4),
            acc(6, 304, 4),
        ];
        let r = classify(&d, [Ok::<_, std::convert::Infallible>(t)]).unwrap();
        let got: Vec<_> = r
            .pairs
            .iter()
            .map(|p| (p.store, p.load, p.class, p.occurrences))
            .collect();
        assert_eq!(
            got,
            vec![
                (0, 1, Class::FullyFree, 1),
                (0, 3, Class::PartiallyFree, 1),
                (0, 4, Class::LastInstance, 1),
                (2, 3, Class::PartiallyFree, 1),
                (5, 6, Class::AnyInstance, 2),
            ]
        );
        let (_, total) = r.distribution(&d);
        assert_eq!(total.pairs, [1, 2, 1, 1]);
        assert_eq!(total.occurrences, [1, 2, 1, 2]);
    }

    /// Two modules, A (ids 0..3 in the filtering run) and B (3..5), registered in the other
    /// order by the collection run (B 0..2, A 2..5); a third module C is absent from it.
    #[test]
    fn pairs_map_to_the_collection_runs_modules() {
        let (a, b, c) = (0xa, 0xb, 0xc);
        let module = |crc, first, instructions| ReportModule {
            crc,
            first,
            instructions,
        };
        let pair = |store, load| Pair {
            store,
            load,
            class: Class::AnyInstance,
            occurrences: 1,
        };
        let r = FilterReport {
            program_crc: 1,
            modules: vec![module(a, 0, 3), module(b, 3, 2), module(c, 5, 1)],
            pairs: vec![pair(1, 3), pair(4, 2), pair(0, 1), pair(5, 0), pair(0, 5)],
        };
        let first = FxHashMap::from_iter([(b, 0), (a, 2)]);
        let ids = |crc| -> Vec<(u32, u32)> {
            let p = r.pairs_of_module(crc, &first);
            p.iter().map(|p| (p.store, p.load)).collect()
        };
        // A's loads: 2 (store B's 1, now 1) and 1 (store A's 0, now 2); C's store is gone.
        assert_eq!(ids(a), [(1, 4), (2, 3)]);
        // B's load 0 (3 before) reads A's store 1 (now 3).
        assert_eq!(ids(b), [(3, 0)]);
        assert_eq!(ids(c), []);
        // One module: the report's ids, shifted to where the module starts.
        let one = FilterReport {
            program_crc: a,
            modules: Vec::new(),
            pairs: vec![pair(0, 2)],
        };
        let p = one.pairs_of_module(a, &first);
        assert_eq!((p[0].store, p[0].load), (2, 4));
    }

    #[test]
    fn report_round_trips_and_rejects_damage() {
        let r = FilterReport {
            program_crc: 7,
            modules: vec![ReportModule {
                crc: 8,
                first: 3,
                instructions: 4,
            }],
            pairs: vec![Pair {
                store: 1,
                load: 2,
                class: Class::AnyInstance,
                occurrences: 9,
            }],
        };
        let b = r.to_bytes();
        assert_eq!(FilterReport::from_bytes(&b, "r").unwrap(), r);
        let overlapping = FilterReport {
            modules: vec![r.modules[0], r.modules[0]],
            ..r.clone()
        };
        let e = FilterReport::from_bytes(&overlapping.to_bytes(), "r").unwrap_err();
        assert!(e.to_string().contains("module ranges overlap"), "{e}");
        // A byte after the last pair, inside a body whose length and CRC say so (fuzzing).
        let mut body = postcard::to_allocvec(&r).unwrap();
        body.push(0);
        let mut long = [&MAGIC[..], &VERSION.to_le_bytes()].concat();
        long.extend_from_slice(&(body.len() as u32).to_le_bytes());
        long.extend_from_slice(&body);
        long.extend_from_slice(&crc32fast::hash(&body).to_le_bytes());
        let e = FilterReport::from_bytes(&long, "r")
            .unwrap_err()
            .to_string();
        let at = format!("byte offset {}", 16 + body.len() - 1);
        assert!(
            e.contains("after the report's last pair") && e.contains(&at),
            "{e}"
        );
        for cut in 0..b.len() {
            let e = FilterReport::from_bytes(&b[..cut], "r")
                .unwrap_err()
                .to_string();
            assert!(e.contains("byte offset"), "{e}");
        }
        for i in 0..b.len() {
            let mut c = b.clone();
            c[i] ^= 0x10;
            assert!(FilterReport::from_bytes(&c, "r").is_err(), "flip at {i}");
        }
    }
}
