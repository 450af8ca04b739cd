//! Ball–Larus path profiling at run time (`bl` mode; PPP §5's baseline).
//!
//! Instrumented code counts most paths itself: a function with at most
//! [`abi::BL_ARRAY_MAX`] paths increments `counters[r]` inline, where `r` is its path register.
//! Functions with more paths call [`__wpp_rt_bl_hash`], which counts in a hash table keyed by
//! (function, path). `main` calls [`__wpp_rt_bl_init`] first, handing over the table of counter
//! arrays; at exit (or on a fatal signal) the arrays and the hash table become a
//! [`ProfileFile`] at `WPP_OUT` (default `PROGRAM.PID.blprof`).
//!
//! **Shared libraries** (issue 12 item 2) register their own tables from a constructor
//! ([`__wpp_rt_bl_register_v1`]) with a function id base from the process's module table
//! (`dso.rs`; the executable's functions come first); the profile holds every table's counts,
//! named as in the merged program database. A library unloaded by `dlclose` hands over its
//! counts first ([`__wpp_rt_profile_unregister_v1`]).
//!
//! Counters are plain increments unless the module can start threads, where the instrumenter
//! makes them atomic (`wpp cc --counters`). Paths run before `main` (static constructors) are
//! counted in the arrays and appear; hash-table paths before `main` appear as well. The file
//! format is [`wpp_abi::profile`]'s.
//!
//! **Snapshots.** Every `WPP_FLUSH_SECONDS` (default 1 s) a background thread writes the
//! counts so far as a whole profile (to a temporary file renamed over the output, so the file
//! on disk is always a whole profile): a `SIGKILL`ed run leaves the profile of everything up to
//! its last snapshot, which every reader takes as it is (issue 14). Counters are read while
//! the program runs, so a snapshot may miss the increments of the moment it is taken; the
//! profile written at exit is exact.

use crate::abi::{self, EmbeddedProgram};
use rustc_hash::FxHashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Mutex, OnceLock};
use wpp_abi::profile::{ProfileFile, RunInfo};
use wpp_paths::profile::PppFunctionProfile;
use wpp_paths::{BlProfile, PppProfile};

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
    /// The first registered module's program: the profile's program when no shared library
    /// registered (else the process's merged one, [`crate::dso`]).
    program: EmbeddedProgram,
    hash: Mutex<FxHashMap<(u32, u64), u64>>,
    done: AtomicBool,
    /// The program's arguments (`/proc/self/cmdline`), for the profile's [`RunInfo`].
    command_line: Vec<String>,
}

/// [`EXIT_STATUS`] before the process exits.
const NO_STATUS: i64 = -1;

/// The status the process exits with, once `exit` (or `_exit`) has been called.
static EXIT_STATUS: AtomicI64 = AtomicI64::new(NO_STATUS);

/// Notes the status the process is exiting with (as its parent will see it: the low 8 bits).
pub(crate) fn note_exit_status(status: libc::c_int) {
    EXIT_STATUS.store(i64::from(status & 0xff), Ordering::Release);
}

/// The run so far: its command line, its exit status once it is exiting, and its id.
fn run_info(bl: &Bl) -> RunInfo {
    let status = EXIT_STATUS.load(Ordering::Acquire);
    RunInfo {
        command_line: bl.command_line.clone(),
        exit_status: (status != NO_STATUS).then_some(status as i32),
        id: Some(run_id()),
    }
}

/// This process's run id ([`RunInfo::id`]), chosen at its first profile write: random, so two
/// runs never share one, and chosen again in a forked child, whose pid differs. Called under
/// the writing lock only (so never across a `fork`).
fn run_id() -> u128 {
    static CHOSEN: Mutex<Option<(u32, u128)>> = Mutex::new(None);
    let pid = std::process::id();
    let mut chosen = crate::lock(&CHOSEN);
    match *chosen {
        Some((p, id)) if p == pid => id,
        _ => {
            let id = random_u128(pid);
            *chosen = Some((pid, id));
            id
        }
    }
}

/// 128 random bits from the kernel; if it cannot give them, the time and pid.
fn random_u128(pid: u32) -> u128 {
    let mut bytes = [0u8; 16];
    // SAFETY: `bytes` is writable for its length.
    let n = unsafe { libc::getrandom(bytes.as_mut_ptr().cast(), bytes.len(), 0) };
    if n == bytes.len() as isize {
        return u128::from_le_bytes(bytes);
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    now ^ (u128::from(pid) << 96) | 1
}

/// The process's arguments; none if `/proc` cannot say.
fn command_line() -> Vec<String> {
    let bytes = std::fs::read("/proc/self/cmdline").unwrap_or_default();
    let args = bytes.strip_suffix(&[0]).unwrap_or(&bytes);
    if args.is_empty() {
        return Vec::new();
    }
    args.split(|&b| b == 0)
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect()
}

/// A module's counter table: the executable's (base 0) or a shared library's.
struct Registered {
    table: Table,
    functions: u32,
    base: u32,
}

// SAFETY: as for `Bl`: the table is the module's constant table.
unsafe impl Send for Registered {}

/// Every module's table, in registration order.
static TABLES: Mutex<Vec<Registered>> = Mutex::new(Vec::new());

/// The counts of libraries unloaded (`dlclose`) so far, taken from their tables before those
/// were unmapped.
static RETIRED: Mutex<Option<(BlProfile, PppProfile)>> = Mutex::new(None);

#[derive(Clone, Copy)]
enum Table {
    Bl(*const CounterSlot),
    Ppp(*const PppSlot),
}

// SAFETY: `table` points to the module's constant table, valid for the process lifetime.
unsafe impl Send for Bl {}
// SAFETY: as above; the counters it points to are only read (by snapshots and at exit).
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

/// Called by a shared library's first constructor in `bl` mode (see [`abi::SYM_BL_REGISTER`]).
///
/// # Safety
/// As [`__wpp_rt_bl_init`]; `base` must point to the library's base.
#[no_mangle]
pub unsafe extern "C" fn __wpp_rt_bl_register_v1(
    table: *const CounterSlot,
    functions: u32,
    db: *const u8,
    db_len: u64,
    base: *mut u32,
) {
    // SAFETY: forwarded from the caller.
    unsafe { register(Table::Bl(table), functions, db, db_len, base) }
}

/// Called by a shared library's first constructor in `ppp` mode.
///
/// # Safety
/// As [`__wpp_rt_ppp_init`]; `base` must point to the library's base.
#[no_mangle]
pub unsafe extern "C" fn __wpp_rt_ppp_register_v1(
    table: *const PppSlot,
    functions: u32,
    db: *const u8,
    db_len: u64,
    base: *mut u32,
) {
    // SAFETY: forwarded from the caller.
    unsafe { register(Table::Ppp(table), functions, db, db_len, base) }
}

/// # Safety
/// See [`__wpp_rt_bl_register_v1`].
unsafe fn register(table: Table, functions: u32, db: *const u8, db_len: u64, base: *mut u32) {
    // SAFETY: guaranteed by the caller.
    let bytes = unsafe { std::slice::from_raw_parts(db, db_len as usize) };
    let word = match crate::dso::register_module(bytes) {
        Ok(b) => {
            crate::lock(&TABLES).push(Registered {
                table,
                functions,
                base: b.0,
            });
            // SAFETY: guaranteed by the caller.
            unsafe { start(db, db_len) };
            b.0
        }
        Err(why) => {
            eprintln!("wpp-rt: {why}; it runs unprofiled");
            abi::REFUSED_PROFILE_BASE
        }
    };
    // SAFETY: guaranteed by the caller.
    unsafe { *base = word };
}

/// Called by a profiling library's last destructor (see [`abi::SYM_PROFILE_UNREGISTER`]): its
/// counts so far are kept, its table forgotten, its ids reserved for a reload.
///
/// # Safety
/// `base` must be the library's base, as a register call set it; its table must still be
/// mapped.
#[no_mangle]
pub unsafe extern "C" fn __wpp_rt_profile_unregister_v1(base: *mut u32) {
    // SAFETY: guaranteed by the caller.
    let b = unsafe { std::ptr::replace(base, abi::REFUSED_PROFILE_BASE) };
    let r = {
        let mut tables = crate::lock(&TABLES);
        match tables.iter().position(|r| r.base == b) {
            Some(i) => tables.remove(i),
            None => return,
        }
    };
    let Some(program) = crate::dso::current() else {
        return;
    };
    let mut retired = crate::lock(&RETIRED);
    let (bl, ppp) = retired.get_or_insert_with(Default::default);
    for f in 0..r.functions {
        if let Some(func) = program.program.functions.get((r.base + f) as usize) {
            let mut one = PppProfile::default();
            // SAFETY: the table is still mapped (guaranteed by the caller).
            unsafe { read_slot(r.table, f as usize, &func.name, bl, &mut one) };
            let _ = ppp.merge(&one);
        }
    }
    crate::dso::unload(wpp_trace::FunctionId(b));
}

/// # Safety
/// See [`__wpp_rt_bl_init`] and [`__wpp_rt_ppp_init`].
unsafe fn init(table: Table, functions: u32, db: *const u8, db_len: u64) {
    crate::lock(&TABLES).push(Registered {
        table,
        functions,
        base: 0,
    });
    // SAFETY: guaranteed by the caller.
    unsafe { start(db, db_len) }
}

/// Starts profiling on the first module's table: the exit handler, the snapshots.
///
/// # Safety
/// `db` must point to `db_len` bytes.
unsafe fn start(db: *const u8, db_len: u64) {
    let mut first = false;
    BL.get_or_init(|| {
        first = true;
        // SAFETY: guaranteed by the caller.
        let bytes = unsafe { std::slice::from_raw_parts(db, db_len as usize) };
        let program = match abi::read_embedded(bytes) {
            Ok(p) if p.version == abi::EMBEDDED_VERSION => p,
            _ => {
                eprintln!("wpp-rt: cannot decode the embedded program database; not profiling");
                return None;
            }
        };
        let early = EARLY_HASH.lock().unwrap_or_else(|e| e.into_inner()).take();
        // SAFETY: registering plain extern "C" functions.
        unsafe {
            at_exit_with_status();
            libc::pthread_atfork(Some(fork_prepare), Some(fork_parent), Some(fork_child));
        }
        crate::install_signal_handlers();
        start_snapshots();
        Some(Bl {
            program,
            hash: Mutex::new(early.unwrap_or_default()),
            done: AtomicBool::new(false),
            command_line: command_line(),
        })
    });
    if let (true, Some(Some(bl))) = (first, BL.get()) {
        first_snapshot(bl);
    }
}

/// Writes the first snapshot as recording starts, so an output that cannot be written is
/// reported then, once, and nothing more is attempted (the program runs on unprofiled).
fn first_snapshot(bl: &Bl) {
    let _writing = Writing::lock();
    if !write(bl, true) {
        bl.done.store(true, Ordering::Release);
    }
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

#[cfg(all(target_os = "linux", target_env = "gnu"))]
extern "C" {
    /// glibc's `atexit` that is told the exit status.
    fn on_exit(
        function: extern "C" fn(libc::c_int, *mut libc::c_void),
        arg: *mut libc::c_void,
    ) -> libc::c_int;
}

/// Notes the exit status where libc says it (glibc's `on_exit`); the profile is written after
/// the program's exit work (`wpp_rt_fini`).
///
/// # Safety
/// Registers a handler with libc, as `atexit` does.
unsafe fn at_exit_with_status() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: a plain extern "C" function that ignores its argument.
    unsafe {
        on_exit(bl_on_exit, std::ptr::null_mut());
    }
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
extern "C" fn bl_on_exit(status: libc::c_int, _arg: *mut libc::c_void) {
    note_exit_status(status);
}

/// Held while a profile is being written, so a snapshot and the final profile never
/// interleave, and across `fork` (so the child never inherits it taken, nor the counts' hash
/// table locked by a snapshot: the snapshot thread does not exist in the child). A flag rather
/// than a `Mutex`, because the child must be able to release what the parent's thread took.
static WRITING: AtomicBool = AtomicBool::new(false);

/// [`WRITING`] taken; released when dropped.
struct Writing;

impl Writing {
    fn try_lock() -> Option<Writing> {
        WRITING
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .ok()
            .map(|_| Writing)
    }

    fn lock() -> Writing {
        loop {
            if let Some(w) = Writing::try_lock() {
                return w;
            }
            std::thread::sleep(std::time::Duration::from_micros(100));
        }
    }
}

impl Drop for Writing {
    fn drop(&mut self) {
        WRITING.store(false, Ordering::Release);
    }
}

/// `pthread_atfork` handlers: no snapshot runs across a `fork`.
extern "C" fn fork_prepare() {
    std::mem::forget(Writing::lock());
}

extern "C" fn fork_parent() {
    WRITING.store(false, Ordering::Release);
}

extern "C" fn fork_child() {
    WRITING.store(false, Ordering::Release);
    crate::sink::mark_forked();
}

/// Starts the thread that writes a snapshot every flush interval until the profile is final.
fn start_snapshots() {
    let interval = crate::flush_interval();
    let spawned = crate::with_signals_blocked(|| {
        std::thread::Builder::new()
            .name("wpp-profile-snapshots".into())
            .spawn(move || loop {
                std::thread::sleep(interval);
                let Some(Some(bl)) = BL.get() else { continue };
                let _writing = Writing::lock();
                // After a failed snapshot (reported) only the profile at exit is attempted.
                if bl.done.load(Ordering::Acquire) || !write(bl, true) {
                    return;
                }
            })
    });
    if let Err(e) = spawned {
        eprintln!("wpp-rt: cannot start the profile snapshots ({e}); profiling without them");
    }
}

/// Writes the profile once (at exit, or from a fatal-signal handler with `blocking = false`).
pub(crate) fn finish_profile(blocking: bool) {
    let Some(Some(bl)) = BL.get() else { return };
    let writing = if blocking {
        Some(Writing::lock())
    } else {
        Writing::try_lock()
    };
    if bl.done.swap(true, Ordering::AcqRel) {
        return;
    }
    // A signal that interrupts a snapshot leaves that snapshot's file (the rename is atomic).
    if writing.is_some() {
        write(bl, blocking);
    }
}

/// The profile's output path, chosen once per process: every snapshot rewrites it (chosen
/// again, the default name would move aside from the last snapshot, `sink::output_path`);
/// a forked child, whose pid differs, chooses its own. Called under the writing lock only.
fn profile_path(extension: &str) -> std::path::PathBuf {
    static CHOSEN: std::sync::Mutex<Option<(u32, std::path::PathBuf)>> =
        std::sync::Mutex::new(None);
    let pid = std::process::id();
    let mut chosen = crate::lock(&CHOSEN);
    match &*chosen {
        Some((p, path)) if *p == pid => path.clone(),
        _ => {
            let path = crate::sink::output_path(extension);
            *chosen = Some((pid, path.clone()));
            path
        }
    }
}

/// Writes the counts so far to the output, through a temporary file renamed over it
/// ([`wpp_trace::output`]); whether it could (the failure is reported).
fn write(bl: &Bl, blocking: bool) -> bool {
    let file = counts(bl, blocking);
    let is_ppp = file.ppp.is_some();
    let path = profile_path(if is_ppp { "pppprof" } else { "blprof" });
    let tmp = wpp_trace::output::staging_path(&path, ".tmp");
    let written = std::fs::write(&tmp, file.to_bytes())
        .and_then(|()| wpp_trace::output::replace(&tmp, &path));
    if let Err(e) = &written {
        eprintln!("wpp-rt: cannot write {}: {e}", path.display());
        let _ = std::fs::remove_file(&tmp);
    } else if bl.done.load(Ordering::Acquire) {
        crate::say_recorded(&path, || {
            format!("wrote the path profile to {}", path.display())
        });
    }
    written.is_ok()
}

/// The profile of the counts so far: every registered module's table, each function named as
/// in the process's program (a shared library's function `f` is `base + f`).
fn counts(bl: &Bl, blocking: bool) -> ProfileFile {
    let merged = match blocking {
        true => crate::dso::current(),
        false => crate::dso::try_current(),
    };
    let program = merged.unwrap_or_else(|| bl.program.clone());
    let is_ppp = program.mode == abi::Mode::Ppp;
    let mut profile = BlProfile::default();
    let mut ppp = PppProfile::default();
    let names: Vec<&str> = program
        .program
        .functions
        .iter()
        .map(|f| f.name.as_str())
        .collect();
    let tables = match blocking {
        true => Some(crate::lock(&TABLES)),
        false => TABLES.try_lock().ok(),
    };
    for r in tables.iter().flat_map(|t| t.iter()) {
        for f in 0..r.functions {
            let Some(&name) = names.get((r.base + f) as usize) else {
                continue;
            };
            // SAFETY: the table has `functions` slots (see `__wpp_rt_bl_init`).
            unsafe { read_slot(r.table, f as usize, name, &mut profile, &mut ppp) };
        }
    }
    let retired = match blocking {
        true => Some(crate::lock(&RETIRED)),
        false => RETIRED.try_lock().ok(),
    };
    if let Some((r_bl, r_ppp)) = retired.as_deref().and_then(Option::as_ref) {
        profile.merge(r_bl);
        // The same tables (a library reloaded) count the same paths: plans never differ.
        let _ = ppp.merge(r_ppp);
    }
    let hash = if blocking {
        Some(bl.hash.lock().unwrap_or_else(|e| e.into_inner()))
    } else {
        bl.hash.try_lock().ok()
    };
    for (&(f, id), &c) in hash.iter().flat_map(|h| h.iter()) {
        // Ids past every function: a refused library's (`abi::REFUSED_PROFILE_BASE`).
        let Some(&name) = names.get(f as usize) else {
            continue;
        };
        match is_ppp {
            false => profile.record(name, wpp_paths::PathId(id), c),
            true => {
                let fp = ppp.functions.entry(name.to_owned()).or_default();
                *fp.uninteresting.entry(id).or_default() += c;
            }
        }
    }
    ProfileFile {
        program,
        bl: profile,
        ppp: is_ppp.then_some(ppp),
        run: Some(run_info(bl)),
    }
}

/// Adds slot `f` of a module's table to the profile, under `name`.
///
/// # Safety
/// The table must hold more than `f` slots, with arrays as [`CounterSlot`] and [`PppSlot`]
/// say.
unsafe fn read_slot(
    table: Table,
    f: usize,
    name: &str,
    profile: &mut BlProfile,
    ppp: &mut PppProfile,
) {
    match table {
        Table::Bl(table) => {
            // SAFETY: guaranteed by the caller.
            let slot = unsafe { *table.add(f) };
            if slot.counters.is_null() {
                return;
            }
            for id in 0..slot.len {
                // SAFETY: the array holds `len` counters.
                let c = unsafe { std::ptr::read_volatile(slot.counters.add(id as usize)) };
                if c > 0 {
                    profile.record(name, wpp_paths::PathId(id), c);
                }
            }
        }
        Table::Ppp(table) => {
            // SAFETY: guaranteed by the caller.
            let slot = unsafe { *table.add(f) };
            if slot.counts.is_null() {
                return;
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
            ppp.functions.insert(name.to_owned(), fp);
        }
    }
}
