//! Ball–Larus path profiling at run time (`bl` mode; PPP §5's baseline).
//!
//! Instrumented code counts most paths itself: a function with at most
//! [`abi::BL_ARRAY_MAX`] paths increments `counters[r]` inline, where `r` is its path register.
//! Functions with more paths call [`__wpp_rt_bl_hash`], which counts in a hash table keyed by
//! (function, path). `main` calls [`__wpp_rt_bl_init`] first, handing over the table of counter
//! arrays; at exit (or on a fatal signal) the arrays and the hash table become a
//! [`ProfileFile`] at `WPP_OUT` (default `PROGRAM.PID.blprof`).
//!
//! Counters are plain (non-atomic) increments, as in the classic profiler: concurrent threads
//! may lose counts in the same function. Paths run before `main` (static constructors) are
//! counted in the arrays and appear; hash-table paths before `main` appear as well.
//!
//! # File format
//!
//! `WPPRPROF` (8 bytes), a version byte (1), then postcard of [`ProfileFile`]: the embedded
//! program (names, CFGs with their cut points) and the Ball–Larus profile (function name →
//! path id → count), so a profile is self-contained.

use crate::abi::{self, EmbeddedProgram};
use rustc_hash::FxHashMap;
use std::sync::{Mutex, OnceLock};
use wpp_paths::profile::PppFunctionProfile;
use wpp_paths::{BlProfile, PppProfile};

/// The magic of a run-time profile file.
pub const MAGIC: &[u8; 8] = b"WPPRPROF";
/// The layout version.
pub const VERSION: u8 = 1;

/// A profile written by an instrumented program.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ProfileFile {
    /// What the program was instrumented with.
    pub program: EmbeddedProgram,
    /// Ball–Larus counts, by function name (`bl` mode).
    pub bl: BlProfile,
    /// Preferential path counts (`ppp` mode): per function, counts of the interesting paths
    /// (identified by Ball–Larus id) and the exact counts of the uninteresting ones.
    pub ppp: Option<PppProfile>,
}

/// Errors reading a profile file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProfileError {
    /// Not a profile file.
    #[error("not a wpp run-time profile (bad magic)")]
    BadMagic,
    /// Another version.
    #[error("unsupported profile version {0} (this build reads {VERSION})")]
    Version(u8),
    /// The body does not decode.
    #[error("malformed profile: {0}")]
    Malformed(String),
    /// Profiles that cannot be merged: of different programs, modes or PPP plans.
    #[error("cannot merge: {0}")]
    Mismatch(String),
}

impl ProfileFile {
    /// Encodes the file.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        out.push(VERSION);
        out.extend(postcard::to_allocvec(self).expect("serializable"));
        out
    }

    /// Decodes the file.
    pub fn from_bytes(bytes: &[u8]) -> Result<ProfileFile, ProfileError> {
        if bytes.len() < 9 || &bytes[..8] != MAGIC {
            return Err(ProfileError::BadMagic);
        }
        if bytes[8] != VERSION {
            return Err(ProfileError::Version(bytes[8]));
        }
        postcard::from_bytes(&bytes[9..]).map_err(|e| ProfileError::Malformed(e.to_string()))
    }

    /// Adds `other`'s counts to this profile (saturating), e.g. the profiles the processes of
    /// one program left. Both must come from the same instrumented program (the same embedded
    /// program database, so path ids mean the same paths) and the same mode; in `ppp` mode a
    /// function's interesting set must also be the same.
    pub fn merge(&mut self, other: &ProfileFile) -> Result<(), ProfileError> {
        if self.program.mode != other.program.mode {
            return Err(ProfileError::Mismatch(format!(
                "a {} profile and a {} profile",
                self.program.mode.name(),
                other.program.mode.name()
            )));
        }
        if self.program != other.program {
            return Err(ProfileError::Mismatch(program_difference(
                &self.program,
                &other.program,
            )));
        }
        self.bl.merge(&other.bl);
        match (&mut self.ppp, &other.ppp) {
            (Some(a), Some(b)) => a
                .merge(b)
                .map_err(|e| ProfileError::Mismatch(e.to_string())),
            (None, None) => Ok(()),
            _ => Err(ProfileError::Mismatch(
                "one profile has PPP counts and the other has not".into(),
            )),
        }
    }
}

/// What differs between two embedded programs, for the merge error.
fn program_difference(a: &EmbeddedProgram, b: &EmbeddedProgram) -> String {
    let (fa, fb) = (&a.program.functions, &b.program.functions);
    if fa.len() != fb.len() {
        return format!(
            "profiles of different programs ({} and {} functions)",
            fa.len(),
            fb.len()
        );
    }
    match fa.iter().zip(fb).position(|(x, y)| x.name != y.name) {
        Some(i) => format!(
            "profiles of different programs (function {i} is `{}` in one, `{}` in the other)",
            fa[i].name, fb[i].name
        ),
        None => "profiles of different builds of a program (their CFGs or source locations differ)"
            .into(),
    }
}

/// One entry of the PPP table the instrumented module passes.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PppSlot {
    /// Counters indexed by PPP id, or null.
    pub counts: *mut u64,
    /// Ball–Larus id per PPP id (`u64::MAX` in holes), or null.
    pub ids: *const u64,
    /// Length of both arrays.
    pub interval: u64,
    /// 1 when both arrays are indexed by the Ball–Larus id instead (a function with few
    /// paths, counted like `bl`): `ids[r]` is `r` for an interesting path and `u64::MAX` for
    /// the others, whose counts are uninteresting executions. 0 for PPP-indexed arrays.
    pub bl_indexed: u64,
}

/// One entry of the counter table the instrumented module passes.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CounterSlot {
    /// The function's counter array, or null when it uses the hash table.
    pub counters: *mut u64,
    /// Its path count.
    pub len: u64,
}

struct Bl {
    program: EmbeddedProgram,
    table: Table,
    functions: u32,
    hash: Mutex<FxHashMap<(u32, u64), u64>>,
    done: std::sync::atomic::AtomicBool,
}

#[derive(Clone, Copy)]
enum Table {
    Bl(*const CounterSlot),
    Ppp(*const PppSlot),
}

// SAFETY: `table` points to the module's constant table, valid for the process lifetime.
unsafe impl Send for Bl {}
// SAFETY: as above; the counters it points to are only read at exit.
unsafe impl Sync for Bl {}

static BL: OnceLock<Option<Bl>> = OnceLock::new();
static EARLY_HASH: Mutex<Option<FxHashMap<(u32, u64), u64>>> = Mutex::new(None);

/// Called at the top of `main` in `bl` mode.
///
/// # Safety
/// `table` must point to `functions` [`CounterSlot`]s whose arrays hold `len` counters each
/// and live for the rest of the process, and `db` to `db_len` bytes (see [`abi`]).
#[no_mangle]
pub unsafe extern "C" fn __wpp_rt_bl_init(
    table: *const CounterSlot,
    functions: u32,
    db: *const u8,
    db_len: u64,
) {
    // SAFETY: forwarded from the caller.
    unsafe { init(Table::Bl(table), functions, db, db_len) }
}

/// Called at the top of `main` in `ppp` mode.
///
/// # Safety
/// `table` must point to `functions` [`PppSlot`]s whose arrays hold `interval` entries each
/// and live for the rest of the process, and `db` to `db_len` bytes (see [`abi`]).
#[no_mangle]
pub unsafe extern "C" fn __wpp_rt_ppp_init(
    table: *const PppSlot,
    functions: u32,
    db: *const u8,
    db_len: u64,
) {
    // SAFETY: forwarded from the caller.
    unsafe { init(Table::Ppp(table), functions, db, db_len) }
}

/// An uninteresting path (or any path of a function without counter arrays) ran.
#[no_mangle]
pub extern "C" fn __wpp_rt_ppp_miss(function: u32, path: u64) {
    __wpp_rt_bl_hash(function, path)
}

/// # Safety
/// See [`__wpp_rt_bl_init`] and [`__wpp_rt_ppp_init`].
unsafe fn init(table: Table, functions: u32, db: *const u8, db_len: u64) {
    BL.get_or_init(|| {
        // SAFETY: guaranteed by the caller.
        let bytes = unsafe { std::slice::from_raw_parts(db, db_len as usize) };
        let program = match postcard::from_bytes::<EmbeddedProgram>(bytes) {
            Ok(p) if p.version == abi::EMBEDDED_VERSION => p,
            _ => {
                eprintln!("wpp-rt: cannot decode the embedded program database; not profiling");
                return None;
            }
        };
        let early = EARLY_HASH.lock().unwrap_or_else(|e| e.into_inner()).take();
        // SAFETY: registering a plain extern "C" function.
        unsafe { libc::atexit(bl_exit) };
        crate::install_signal_handlers();
        Some(Bl {
            program,
            table,
            functions,
            hash: Mutex::new(early.unwrap_or_default()),
            done: std::sync::atomic::AtomicBool::new(false),
        })
    });
}

/// Counts one execution of `path` of `function` (functions with many paths).
#[no_mangle]
pub extern "C" fn __wpp_rt_bl_hash(function: u32, path: u64) {
    match BL.get() {
        Some(Some(bl)) => {
            let mut h = bl.hash.lock().unwrap_or_else(|e| e.into_inner());
            *h.entry((function, path)).or_default() += 1;
        }
        Some(None) => {}
        None => {
            // Before `main` (static constructors): keep the counts until init.
            let mut g = EARLY_HASH.lock().unwrap_or_else(|e| e.into_inner());
            *g.get_or_insert_with(FxHashMap::default)
                .entry((function, path))
                .or_default() += 1;
        }
    }
}

extern "C" fn bl_exit() {
    finish_profile(true);
}

/// Writes the profile once (at exit, or from a fatal-signal handler with `blocking = false`).
pub(crate) fn finish_profile(blocking: bool) {
    let Some(Some(bl)) = BL.get() else { return };
    if bl.done.swap(true, std::sync::atomic::Ordering::AcqRel) {
        return;
    }
    let mut profile = BlProfile::default();
    let mut ppp = PppProfile::default();
    let names: Vec<&str> = bl
        .program
        .program
        .functions
        .iter()
        .map(|f| f.name.as_str())
        .collect();
    let name = |f: usize| names.get(f).copied().unwrap_or("?");
    for f in 0..bl.functions as usize {
        match bl.table {
            Table::Bl(table) => {
                // SAFETY: the table has `functions` slots (see `__wpp_rt_bl_init`).
                let slot = unsafe { *table.add(f) };
                if slot.counters.is_null() {
                    continue;
                }
                for id in 0..slot.len {
                    // SAFETY: the array holds `len` counters.
                    let c = unsafe { std::ptr::read_volatile(slot.counters.add(id as usize)) };
                    if c > 0 {
                        profile.record(name(f), wpp_paths::PathId(id), c);
                    }
                }
            }
            Table::Ppp(table) => {
                // SAFETY: the table has `functions` slots (see `__wpp_rt_ppp_init`).
                let slot = unsafe { *table.add(f) };
                if slot.counts.is_null() {
                    continue;
                }
                let mut fp = PppFunctionProfile::default();
                for q in 0..slot.interval as usize {
                    // SAFETY: both arrays hold `interval` entries.
                    let (id, c) = unsafe {
                        (
                            *slot.ids.add(q),
                            std::ptr::read_volatile(slot.counts.add(q)),
                        )
                    };
                    if id != u64::MAX {
                        fp.interesting.push(id);
                        fp.counts.push(c);
                    } else if slot.bl_indexed != 0 && c > 0 {
                        fp.uninteresting.insert(q as u64, c);
                    }
                }
                ppp.functions.insert(name(f).to_owned(), fp);
            }
        }
    }
    let hash = if blocking {
        Some(bl.hash.lock().unwrap_or_else(|e| e.into_inner()))
    } else {
        bl.hash.try_lock().ok()
    };
    if let Some(h) = hash {
        for (&(f, id), &c) in h.iter() {
            match bl.table {
                Table::Bl(_) => profile.record(name(f as usize), wpp_paths::PathId(id), c),
                Table::Ppp(_) => {
                    let fp = ppp
                        .functions
                        .entry(name(f as usize).to_owned())
                        .or_default();
                    *fp.uninteresting.entry(id).or_default() += c;
                }
            }
        }
    }
    let is_ppp = matches!(bl.table, Table::Ppp(_));
    let file = ProfileFile {
        program: bl.program.clone(),
        bl: profile,
        ppp: is_ppp.then_some(ppp),
    };
    let path = crate::sink::output_path(if is_ppp { "pppprof" } else { "blprof" });
    if let Err(e) = std::fs::write(&path, file.to_bytes()) {
        eprintln!("wpp-rt: cannot write {}: {e}", path.display());
    } else if std::env::var("WPP_QUIET").is_ok_and(|v| v == "0") {
        eprintln!("wpp-rt: wrote the path profile to {}", path.display());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use abi::Mode;
    use proptest::prelude::*;
    use std::collections::BTreeMap;
    use wpp_paths::PathId;

    const NAMES: [&str; 3] = ["main", "f", "g"];

    fn program(mode: Mode, names: &[&str]) -> EmbeddedProgram {
        EmbeddedProgram {
            version: abi::EMBEDDED_VERSION,
            mode,
            program: wpp_trace::ProgramDb {
                functions: names
                    .iter()
                    .map(|n| wpp_trace::Function {
                        name: (*n).into(),
                        ..Default::default()
                    })
                    .collect(),
            },
            cfgs: Vec::new(),
        }
    }

    /// A `bl` profile of `records` (function index, path id, count).
    fn bl_file(records: &[(usize, u64, u64)]) -> ProfileFile {
        let mut bl = BlProfile::default();
        for &(f, id, c) in records {
            bl.record(NAMES[f], PathId(id), c);
        }
        ProfileFile {
            program: program(Mode::Bl, &NAMES),
            bl,
            ppp: None,
        }
    }

    /// A `ppp` profile with interesting paths 0..4 of `f` and the given counts.
    fn ppp_file(counts: &[u64], uninteresting: &[(u64, u64)]) -> ProfileFile {
        let mut ppp = PppProfile::default();
        ppp.functions.insert(
            "f".into(),
            PppFunctionProfile {
                interesting: (0..counts.len() as u64).collect(),
                counts: counts.to_vec(),
                uninteresting: uninteresting.iter().copied().collect(),
            },
        );
        ProfileFile {
            program: program(Mode::Ppp, &NAMES),
            bl: BlProfile::default(),
            ppp: Some(ppp),
        }
    }

    proptest! {
        /// Merged counts equal the per-path sums over every input (a map built by hand), and
        /// the merged file survives its encoding.
        #[test]
        fn bl_merge_sums_counts(
            files in prop::collection::vec(
                prop::collection::vec((0..3usize, 0..20u64, 1..1000u64), 0..30), 1..6)
        ) {
            let mut sum: BTreeMap<(usize, u64), u64> = BTreeMap::new();
            for &(f, id, c) in files.iter().flatten() {
                *sum.entry((f, id)).or_default() += c;
            }
            let mut merged = bl_file(&files[0]);
            for r in &files[1..] {
                merged.merge(&bl_file(r)).unwrap();
            }
            let mut got = BTreeMap::new();
            for (f, paths) in &merged.bl.functions {
                let fi = NAMES.iter().position(|n| n == f).unwrap();
                for (&id, &c) in paths {
                    got.insert((fi, id), c);
                }
            }
            prop_assert_eq!(got, sum);
            prop_assert_eq!(ProfileFile::from_bytes(&merged.to_bytes()).unwrap(), merged);
        }

        #[test]
        fn ppp_merge_sums_counts(
            a in prop::collection::vec(0..100u64, 4),
            b in prop::collection::vec(0..100u64, 4),
            ua in prop::collection::vec((10..15u64, 1..9u64), 0..4),
            ub in prop::collection::vec((10..15u64, 1..9u64), 0..4),
        ) {
            let ua: BTreeMap<u64, u64> = ua.into_iter().collect();
            let ub: BTreeMap<u64, u64> = ub.into_iter().collect();
            let mut merged = ppp_file(&a, &ua.iter().map(|(&k, &v)| (k, v)).collect::<Vec<_>>());
            merged
                .merge(&ppp_file(&b, &ub.iter().map(|(&k, &v)| (k, v)).collect::<Vec<_>>()))
                .unwrap();
            let f = &merged.ppp.as_ref().unwrap().functions["f"];
            let want: Vec<u64> = a.iter().zip(&b).map(|(x, y)| x + y).collect();
            prop_assert_eq!(&f.counts, &want);
            for id in 10..15 {
                let w = ua.get(&id).copied().unwrap_or(0) + ub.get(&id).copied().unwrap_or(0);
                prop_assert_eq!(f.uninteresting.get(&id).copied().unwrap_or(0), w);
            }
        }
    }

    fn mismatch(a: &ProfileFile, b: &ProfileFile) -> String {
        match a.clone().merge(b) {
            Err(ProfileError::Mismatch(m)) => m,
            other => panic!("expected a mismatch, got {other:?}"),
        }
    }

    #[test]
    fn merge_rejects_other_programs_modes_and_plans() {
        let a = bl_file(&[(0, 1, 1)]);
        let mut other = a.clone();
        other.program = program(Mode::Bl, &["main", "f", "h"]);
        assert!(mismatch(&a, &other).contains("function 2 is `g` in one, `h` in the other"));
        other.program = program(Mode::Bl, &["main"]);
        assert!(mismatch(&a, &other).contains("(3 and 1 functions)"));
        assert!(mismatch(&a, &ppp_file(&[1], &[])).contains("a bl profile and a ppp profile"));
        let mut plan = ppp_file(&[1, 2], &[]);
        plan.ppp
            .as_mut()
            .unwrap()
            .functions
            .get_mut("f")
            .unwrap()
            .interesting = vec![0, 7];
        assert!(mismatch(&ppp_file(&[1, 2], &[]), &plan).contains("different plans"));
    }
}
