//! Shared libraries registering with the process's runtime (`wpp_abi`, *Shared libraries*):
//! the [`module::Modules`] table of the process, and the program database a recording starts
//! with.
//!
//! The libraries a program is linked with register from their first constructor, before
//! `main`, so the trace's header carries them. A library `dlopen`ed after the recording
//! started registers the same way; the runtime then hands the trace writer the grown database,
//! which it writes as a *program chunk* (`wpp_trace::file::binary::CODEC_PROGRAM`) before any
//! event of the library, and readers of the file take the last one. A library is refused (runs
//! unrecorded, saying why; its probes check [`abi::REFUSED_BASE`]) when it was built for
//! another mode than the process records in.
//!
//! `trace-addr` libraries register their memory instructions too
//! ([`__wpp_rt_register_memory_v1`]): the address trace starts with the process's merged
//! memory database, and a library registered after its first flush hands the grown one to
//! the address trace's writer (`addr::grown`), again before any access of the library (a
//! reload, which gets its range back, adds nothing).
//!
//! In `ewpp` and `ewpp-filter`, whose checks and classifier are built over the process's
//! memory instructions when recording starts, a library loaded after that is refused.
//!
//! A process with no registered library takes the old path: the program database is the one
//! the first flush passes, and the recording is what it was before modules existed.
//!
//! Lock order: this table's lock, then the address trace's (`addr.rs`), never the reverse.

use crate::abi::{self, EmbeddedProgram, Mode};
use crate::module::{Bases, Modules};
use std::sync::Mutex;
use wpp_trace::FunctionId;

/// The process's modules, and whether the recording and the address trace have started
/// (later registrations are announced to them).
struct Process {
    modules: Modules,
    started: bool,
    memory_started: bool,
}

static PROCESS: Mutex<Process> = Mutex::new(Process {
    modules: Modules::new(),
    started: false,
    memory_started: false,
});

extern "C" {
    /// The executable's program database when it is instrumented (a weak reference, `exe.c`).
    fn wpp_rt_executable_db(len: *mut u64) -> *const u8;
    /// The executable's memory database when it is instrumented for `trace-addr` (`exe.c`).
    fn wpp_rt_executable_memory_db(len: *mut u64) -> *const u8;
}

/// Starts the address trace through `start`, which gets the process's merged memory database
/// (postcard) when modules registered memory instructions, `None` for a single module (whose
/// own database, the flushed one, is the process's). Later registrations are announced to it.
pub(crate) fn start_memory<T>(start: impl FnOnce(Option<MergedMemory>) -> T) -> T {
    let mut p = crate::lock(&PROCESS);
    p.memory_started = true;
    let merged = p.modules.has_memory().then(|| MergedMemory {
        db: encoded(&p.modules.merged_memory()),
        modules: p.modules.report_modules(),
    });
    start(merged)
}

/// The process's memory instructions when modules registered them.
pub(crate) struct MergedMemory {
    /// The merged memory database (postcard).
    pub db: Vec<u8>,
    /// The modules' ranges in it, as a filtering run's report names them.
    pub modules: Vec<wpp_deps::filter::ReportModule>,
}

fn encoded(db: &wpp_deps::MemoryDb) -> Vec<u8> {
    postcard::to_allocvec(db).expect("a memory database encodes")
}

/// The program database the recording starts with, `flushed` being the one the first flush
/// passed; no module registers after this.
pub(crate) fn start(flushed: &[u8]) -> Option<EmbeddedProgram> {
    let mut p = crate::lock(&PROCESS);
    p.started = true;
    let mut program = match p.modules.is_empty() {
        true => crate::embedded(flushed)?,
        false => p.modules.merged_program(),
    };
    crate::ewpp::attach(&mut program);
    Some(program)
}

/// The program as it stands now, for a forked child's recording; `None` without modules.
pub(crate) fn current() -> Option<EmbeddedProgram> {
    let p = crate::lock(&PROCESS);
    (!p.modules.is_empty()).then(|| p.modules.merged_program())
}

/// [`current`] without waiting: `None` also when the table is busy (a fatal signal's handler
/// must not block on a lock the interrupted code may hold).
pub(crate) fn try_current() -> Option<EmbeddedProgram> {
    let p = PROCESS.try_lock().ok()?;
    (!p.modules.is_empty()).then(|| p.modules.merged_program())
}

/// Registers a profiling library's module (`bl`, `ppp`: their counts are read at the end, so
/// a library may arrive at any time); its base, or why it is not profiled.
pub(crate) fn register_module(db: &[u8]) -> Result<FunctionId, String> {
    register(&mut crate::lock(&PROCESS), db, None).map(|b| b.function)
}

/// Marks the module at `base` unloaded (its ids stay reserved; a reload gets them back).
pub(crate) fn unload(base: FunctionId) {
    crate::lock(&PROCESS).modules.unload(base);
}

/// The file name of the module that holds `addr`.
fn module_name(addr: *const u8) -> String {
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: `addr` points into a loaded module; `info` is a valid out-pointer.
    let found = unsafe { libc::dladdr(addr.cast(), &mut info) } != 0;
    if !found || info.dli_fname.is_null() {
        return "?".into();
    }
    // SAFETY: dladdr returns a NUL-terminated path owned by the loader.
    let path = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) }.to_string_lossy();
    path.rsplit('/').next().unwrap_or(&path).to_owned()
}

/// Decodes a module's memory database.
fn memory_db(bytes: &[u8], name: &str) -> Result<wpp_deps::MemoryDb, String> {
    postcard::from_bytes(bytes).map_err(|e| format!("{name}'s memory database is unreadable: {e}"))
}

/// Registers the module whose database is `db` and whose memory database is `memory`
/// (`trace-addr`); its bases, or why it runs unrecorded.
fn register(p: &mut Process, db: &[u8], memory: Option<&[u8]>) -> Result<Bases, String> {
    let name = module_name(db.as_ptr());
    if p.modules.is_empty() {
        let mut len = 0;
        // SAFETY: the helper returns null or the executable's database of `len` bytes.
        let exe = unsafe { wpp_rt_executable_db(&mut len) };
        if !exe.is_null() {
            // SAFETY: as above.
            let bytes = unsafe { std::slice::from_raw_parts(exe, len as usize) };
            let program =
                crate::embedded(bytes).ok_or("the executable's database is unreadable")?;
            let exe_name = module_name(exe);
            // SAFETY: as above, for the memory database.
            let memory = unsafe { wpp_rt_executable_memory_db(&mut len) };
            let memory = match memory.is_null() {
                true => None,
                // SAFETY: as above.
                false => Some(memory_db(
                    unsafe { std::slice::from_raw_parts(memory, len as usize) },
                    &exe_name,
                )?),
            };
            p.modules
                .register(&exe_name, bytes, program, memory)
                .map_err(|e| e.to_string())?;
        }
    }
    let program = crate::embedded(db).ok_or_else(|| format!("{name}'s database is unreadable"))?;
    let fixed = match program.mode {
        Mode::Ewpp => p.started,
        Mode::EwppFilter => p.memory_started,
        _ => false,
    };
    if fixed {
        return Err(format!(
            "{name} was loaded after the recording started, and {} records the libraries \
             loaded before it only (the checks' tables are fixed then): its accesses are not \
             checked, and a load of bytes it wrote is attributed to the earlier store there",
            program.mode.name()
        ));
    }
    let memory = memory.map(|m| memory_db(m, &name)).transpose()?;
    let memory_ids = p.modules.memory_ids();
    let bases = p
        .modules
        .register(&name, db, program, memory)
        .map_err(|e| e.to_string())?;
    if p.started {
        announce(p.modules.merged());
    }
    // A reload gets its range back: the address trace's database already describes it.
    if p.memory_started && p.modules.memory_ids() > memory_ids {
        crate::addr::grown(&encoded(&p.modules.merged_memory()));
    }
    Ok(bases)
}

/// Hands the grown database to a running recording's writer, ahead of the library's events:
/// they can only be produced after its constructor returns, and so reach the writer later.
fn announce(program: wpp_trace::ProgramDb) {
    let Some(Some(rt)) = crate::RUNTIME.get() else {
        return;
    };
    if !rt.finished.load(std::sync::atomic::Ordering::Acquire) {
        crate::lock(&rt.sink).sink.program(program);
    }
}

/// Called by an instrumented shared library's first constructor (see [`abi::SYM_REGISTER`]).
///
/// # Safety
/// `db` must point to the library's `db_len`-byte program database and `base` to its base.
#[no_mangle]
pub unsafe extern "C" fn __wpp_rt_register_v1(db: *const u8, db_len: u64, base: *mut u64) {
    // SAFETY: guaranteed by the caller.
    let db = unsafe { std::slice::from_raw_parts(db, db_len as usize) };
    let registered = crate::with_signals_blocked(|| register(&mut crate::lock(&PROCESS), db, None));
    let word = match registered {
        Ok(b) => abi::enter_word(b.function.0),
        Err(why) => {
            eprintln!("wpp-rt: {why}; it runs unrecorded");
            abi::REFUSED_BASE
        }
    };
    // SAFETY: guaranteed by the caller.
    unsafe { *base = word };
}

/// Called by a `trace-addr` library's first constructor (see [`abi::SYM_REGISTER_MEMORY`]):
/// registers its functions and its memory instructions.
///
/// # Safety
/// As [`__wpp_rt_register_v1`]; `memory_db` must point to the library's `memory_db_len`-byte
/// memory database and `memory_base` to its memory base.
#[no_mangle]
pub unsafe extern "C" fn __wpp_rt_register_memory_v1(
    db: *const u8,
    db_len: u64,
    base: *mut u64,
    memory_db: *const u8,
    memory_db_len: u64,
    memory_base: *mut u64,
) {
    // SAFETY: guaranteed by the caller.
    let (db, memory) = unsafe {
        (
            std::slice::from_raw_parts(db, db_len as usize),
            std::slice::from_raw_parts(memory_db, memory_db_len as usize),
        )
    };
    let registered =
        crate::with_signals_blocked(|| register(&mut crate::lock(&PROCESS), db, Some(memory)));
    let words = match registered {
        Ok(b) => (
            abi::enter_word(b.function.0),
            b.memory.map_or(abi::REFUSED_BASE, u64::from),
        ),
        Err(why) => {
            eprintln!("wpp-rt: {why}; it runs unrecorded");
            (abi::REFUSED_BASE, abi::REFUSED_BASE)
        }
    };
    // SAFETY: guaranteed by the caller.
    unsafe { (*base, *memory_base) = words };
}

/// Called by an instrumented shared library's last destructor (`dlclose`, or exit): its ids
/// stay reserved, and a reload of the same library before recording starts gets them back.
///
/// # Safety
/// `base` must be the library's base, as [`__wpp_rt_register_v1`] set it.
#[no_mangle]
pub unsafe extern "C" fn __wpp_rt_unregister_v1(base: *mut u64) {
    // SAFETY: guaranteed by the caller.
    let word = unsafe { std::ptr::replace(base, abi::REFUSED_BASE) };
    if word != abi::REFUSED_BASE {
        crate::with_signals_blocked(|| unload(FunctionId((word >> abi::TAG_BITS) as u32)));
    }
}
