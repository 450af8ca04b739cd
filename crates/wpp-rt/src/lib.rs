//! The wpp recording runtime, linked as a static library into programs built by `wpp cc`, and
//! as `libwpp_rt.so` into instrumented shared libraries (one runtime per process: [`module`]).
//!
//! # Design
//!
//! Instrumented code appends 64-bit event words to a thread-local buffer inline (see [`abi`]);
//! this runtime is entered only when a buffer is full, for a thread's first event, and to repair
//! the shadow stack after `longjmp` or an exception. The cost per event in the program is
//! therefore two loads, a compare and two stores; the runtime's cost is per *buffer*
//! ([`abi::BUF_CAP`] events): it swaps the full buffer for an empty one (no copy) and hands it
//! to a background thread. Nothing is allocated per event.
//!
//! * **Threads** (Larus §2: one stream per thread). A thread registers on its first event: it
//!   gets a dense [`wpp_trace::ThreadId`] in registration order (the main thread is normally 0),
//!   a slot in the registry holding the addresses of its buffer, index and depth, and a pthread
//!   key whose destructor flushes the buffer when the thread ends. Every consumed buffer is
//!   tagged with its thread, so output streams are per thread.
//! * **Output.** [`sink`] turns consumed buffers into a raw chunked trace (`wpp_trace::file`
//!   binary format, zstd-compressed chunks) on a background thread fed through [`handoff`],
//!   written with `write(2)` while the program runs, so the program runs at raw-recording
//!   speed in every mode. With `WPP_RAW=1` that trace is the recording; by default it is the
//!   *spool* of a `.wpp` that the [`finisher`] builds after the run without holding the
//!   program's exit (a detached process; `WPP_FINISH=wait` finishes before exiting).
//! * **Flushing.** A timer thread hands every thread's partial buffer to the writer each
//!   `WPP_FLUSH_SECONDS` (default 1 s) and has it written (`peek`: the thread keeps its buffer),
//!   and the writer writes whatever it holds whenever its queue runs empty, so a `SIGKILL`ed
//!   run leaves a readable trace (or spool) holding every event up to the last flush; the
//!   reader reports its missing end marker as a truncation, and `wpp compress` finishes a spool.
//! * **Memory.** Everything the runtime allocates comes from its own heap ([`heap`]), never
//!   from the program's `malloc`, and program threads never block in std channels (which
//!   allocate there): the program's heap layout is the same recorded and native, so programs
//!   that branch on heap addresses take the same paths.
//! * **Termination.** At exit, after the program's `atexit` handlers, C++ static destructors
//!   and the executable's destructor functions (`exe.c`'s destructor runs last of them,
//!   [`wpp_rt_fini`]), the runtime consumes every live thread's buffer, then *marks open frames* by appending one `Leave` per frame still on the
//!   thread's shadow stack — so `exit()` from deep frames, `abort()` and fatal signals (SIGSEGV,
//!   SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM, SIGINT, whose handlers do the same and then
//!   re-raise with the default action) leave a balanced trace. `_exit`, `_Exit` and the `exec`
//!   family (`execve`, `execv`, `execvp`, `execvpe`, `fexecve`; `execl`, `execlp`, `execle`
//!   in `execl.c` call the `v` forms) run no `atexit` handlers, so
//!   the runtime defines them (it is linked into the executable, whose definitions take
//!   precedence over libc's): each ends the recording the same way, then exits with the
//!   `exit_group` system call or calls libc's function (`dlsym(RTLD_NEXT, …)`). After a fatal
//!   signal the finisher does not run (forking in a signal handler could deadlock): the spool
//!   stays for `wpp compress`. Events produced after the end (in a shared library's
//!   destructors when the runtime is linked statically, in other TLS destructors of an ending
//!   thread, after a failed `exec`) are not recorded.
//! * **Memory dependences.** `trace-addr` and `ewpp-filter` programs also fill an address
//!   buffer, written or classified by [`addr`]; `ewpp` programs append their accesses to the
//!   event buffer, and the sink turns them into dependence checks as it hands each buffer to
//!   the trace writer (`ewpp`, private).
//! * **fork.** Both processes go on recording (see `mod fork`): the child writes its own file
//!   (its pid in the name), whose stream starts with one `Enter` per frame open at the fork, so
//!   it is balanced and holds exactly what the child executed.
//!
//! Environment: `WPP_OUT` names the output file (`%p` is replaced by the process id; default
//! `PROGRAM.PID.wpp`, `.trace` with `WPP_RAW=1`, `.blprof`/`.pppprof` for profiles; in a forked
//! child a `WPP_OUT` without `%p` gets `.PID` before its extension, and a name another
//! recording holds is not taken: [`sink::output_path`]). `WPP_QUIET=1` says
//! nothing on stderr but errors; by default one line names the output (`recorded to PATH`, in
//! every mode: the trace, the `bl`/`ppp` profile, the `ewpp-filter` report); `WPP_QUIET=0`
//! prints a summary (events, spool bytes, the finisher's report). `WPP_COMPRESS` chooses the
//! finisher's compressor (`phrase` by default, `sequitur`, … see [`finisher`]),
//! `WPP_COMPRESS_THREADS` its threads (default: the available cores), `WPP_FINISH`
//! how it runs (`detach`, `wait`), `WPP_FLUSH_SECONDS` the flush interval, `WPP_ZSTD_LEVEL`
//! the raw chunks' zstd level (default 1, `0` stores them plain; see [`sink`]). Output errors
//! are reported when recording starts (the file is created then) with the path and the OS
//! cause; the program runs on unrecorded.
//!
//! Not supported: `vfork` children that call the wrappers above are detected (their pid
//! differs from the recording's) and leave the parent's recording alone. Path profiles (`bl`,
//! `ppp`) are written at exit, `_exit`, `exec` and fatal signals, and snapshotted every
//! `WPP_FLUSH_SECONDS`, so a `SIGKILL`ed profiling run leaves its last snapshot. An image that
//! `exec`s an instrumented program keeps its pid: with the default names the new image's
//! recording gets `.1`, `.2`, …; with a `WPP_OUT` without `%p` it replaces the old one's.

#![deny(missing_docs)]

/// The contract with instrumented code, shared with the instrumenter and the tools.
pub use wpp_abi as abi;

pub mod addr;
mod dso;
mod ewpp;
pub mod finisher;
pub mod handoff;
pub mod heap;
pub mod module;
pub mod profile;
mod signals;
pub mod sink;
pub mod varint;

use abi::{EmbeddedProgram, BUF_CAP};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock};

/// A registered thread: where its buffer address, index and depth live.
#[derive(Clone, Copy, Debug)]
struct Slot {
    buf: *mut *mut u64,
    idx: *mut u32,
    depth: *mut u32,
    alive: bool,
}

// SAFETY: the pointers are only dereferenced by the owning thread, or by the exit path while
// holding the registry lock (the documented best-effort read of other threads' buffers).
unsafe impl Send for Slot {}

/// The output and, per thread, how many words of its current buffer were already handed to
/// it by a periodic flush ([`peek`]) or before a `fork`.
struct Out {
    sink: sink::Sink,
    peeked: Vec<u32>,
}

impl Out {
    /// Words of thread `t`'s buffer already consumed, reset to 0 (the buffer is being handed
    /// off or drained).
    fn take_peeked(&mut self, t: u32) -> u32 {
        self.peeked.get_mut(t as usize).map_or(0, std::mem::take)
    }

    fn set_peeked(&mut self, t: u32, n: u32) {
        let t = t as usize;
        if self.peeked.len() <= t {
            self.peeked.resize(t + 1, 0);
        }
        self.peeked[t] = n;
    }
}

/// How much the runtime says on stderr (`WPP_QUIET`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Verbosity {
    /// `WPP_QUIET=1`: errors only.
    Quiet,
    /// Default: one line naming the output.
    Where,
    /// `WPP_QUIET=0`: a summary (events, bytes, the finisher's report).
    Summary,
}

fn verbosity() -> Verbosity {
    match std::env::var("WPP_QUIET").as_deref() {
        Ok("0") => Verbosity::Summary,
        Ok("") | Err(_) => Verbosity::Where,
        Ok(_) => Verbosity::Quiet,
    }
}

/// Says on stderr where a recording that is not a trace (a path profile, a filtering report)
/// was written, as a trace's end does ([`finish`]): `recorded to PATH` by default, `summary`
/// (which names the file too) with `WPP_QUIET=0`, nothing with `WPP_QUIET=1`.
pub(crate) fn say_recorded(path: &std::path::Path, summary: impl FnOnce() -> String) {
    match verbosity() {
        Verbosity::Summary => eprintln!("wpp-rt: {}", summary()),
        Verbosity::Where => eprintln!("wpp-rt: recorded to {}", path.display()),
        Verbosity::Quiet => {}
    }
}

/// Says on stderr that a forked child is not recorded, and why (unless `WPP_QUIET=1`).
pub(crate) fn say_child_unrecorded(why: &str) {
    if verbosity() != Verbosity::Quiet {
        eprintln!(
            "wpp-rt: forked child {}: not recorded ({why})",
            std::process::id()
        );
    }
}

/// The process-wide runtime state.
struct Runtime {
    sink: Mutex<Out>,
    threads: Mutex<Vec<Slot>>,
    finished: AtomicBool,
    verbosity: Verbosity,
    key: libc::pthread_key_t,
    /// The program database, for the recording a forked child starts.
    program: EmbeddedProgram,
    /// The process the state belongs to: a `vfork` child (which shares it) must not touch it.
    pid: AtomicU32,
}

/// Every allocation of the runtime comes from its private heap (see [`heap`]).
#[global_allocator]
static HEAP: heap::Heap = heap::Heap::new();

static RUNTIME: OnceLock<Option<Runtime>> = OnceLock::new();

/// Per-thread registration: `u32::MAX` = not registered, else the thread id.
const UNREGISTERED: u32 = u32::MAX;
/// The thread's id after its wpp state was torn down.
const RETIRED: u32 = u32::MAX - 1;

thread_local! {
    static TID: Cell<u32> = const { Cell::new(UNREGISTERED) };
    /// The `Vec` behind this thread's `__wpp_buf` (pointer, capacity; its length is always
    /// `BUF_CAP`), owned by the thread while it writes into it. A destructor-free cell: Rust's
    /// TLS destructors may run before `thread_exit`, which drains and frees the buffer.
    static OWN: Cell<(*mut u64, usize)> = const { Cell::new((std::ptr::null_mut(), 0)) };
}

/// Where events of threads that are not recorded go (a retired thread's late events, or every
/// event when the runtime could not start): written by instrumented code, never read.
struct Hole(std::cell::UnsafeCell<[u64; BUF_CAP as usize]>);
// SAFETY: Rust code never reads or writes the hole; instrumented code only stores into it, and
// racing stores of words nobody reads are harmless.
unsafe impl Sync for Hole {}
static HOLE: Hole = Hole(std::cell::UnsafeCell::new([0; BUF_CAP as usize]));

fn hole() -> *mut u64 {
    HOLE.0.get().cast()
}

/// Makes `v` the calling thread's buffer: `*buf` points to it, `OWN` owns it.
///
/// # Safety
/// `buf` must be the calling thread's `__wpp_buf`, and `OWN` empty.
unsafe fn install(buf: *mut *mut u64, mut v: Vec<u64>) {
    v.resize(BUF_CAP as usize, 0);
    let mut v = std::mem::ManuallyDrop::new(v);
    OWN.with(|c| c.set((v.as_mut_ptr(), v.capacity())));
    // SAFETY: guaranteed by the caller.
    unsafe { *buf = v.as_mut_ptr() };
}

/// Takes the calling thread's buffer out of `OWN`, holding its first `len` words.
fn take_own(len: u32) -> Option<Vec<u64>> {
    let (p, cap) = OWN.with(|c| c.replace((std::ptr::null_mut(), 0)));
    // SAFETY: `p` and `cap` come from a `ManuallyDrop<Vec<u64>>` of length BUF_CAP (see
    // `install`), so its first `len ≤ BUF_CAP` words are initialized.
    (!p.is_null()).then(|| unsafe { Vec::from_raw_parts(p, len.min(BUF_CAP) as usize, cap) })
}

/// Hands the calling thread's full buffer (its first `*idx` words) to the sink and installs an
/// empty one in its place. The sink lock is held throughout, so [`peek`] (which holds it too)
/// never sees the new buffer with the old index.
///
/// # Safety
/// `buf` and `idx` must be the calling thread's `__wpp_buf` and `__wpp_idx`.
unsafe fn hand_off(rt: &Runtime, t: u32, buf: *mut *mut u64, idx: *mut u32) {
    let mut out = lock(&rt.sink);
    // SAFETY: guaranteed by the caller.
    unsafe {
        let Some(full) = take_own(*idx) else {
            *buf = hole();
            *idx = 0;
            return;
        };
        let peeked = out.take_peeked(t) as usize;
        let empty = if rt.finished.load(Ordering::Acquire) {
            full // recording is over: drop the events
        } else if peeked > 0 {
            // Part of the buffer is already written: copy the rest, keep the vector.
            out.sink.consume(t, &full[peeked.min(full.len())..], 0);
            full
        } else {
            out.sink.swap(t, full)
        };
        install(buf, empty);
        *idx = 0;
    }
}

/// The buffer a signal interrupted, set aside while the program's handler runs
/// ([`signals`]).
pub(crate) struct Interrupted {
    tid: u32,
    buf: *mut u64,
    idx: u32,
    own: (*mut u64, usize),
}

/// The block and address buffers a signal interrupted ([`enter_handler`]).
pub(crate) struct Handling {
    events: Option<Interrupted>,
    accesses: Option<addr::Interrupted>,
}

/// Before a program's signal handler: hands the events (and accesses) before the signal over
/// and gives the thread fresh buffers for the handler's, keeping the interrupted ones as they
/// are.
pub(crate) fn enter_handler() -> Handling {
    with_signals_blocked(|| Handling {
        events: enter_events(),
        accesses: addr::enter_handler(),
    })
}

/// After the handler: hands its events and accesses over and puts the interrupted buffers
/// back.
pub(crate) fn leave_handler(h: Handling) {
    with_signals_blocked(|| {
        if let Some(i) = h.events {
            leave_events(i);
        }
        if let Some(i) = h.accesses {
            addr::leave_handler(i);
        }
    })
}

/// [`enter_handler`] for the block buffer; `None` when the thread records no events.
fn enter_events() -> Option<Interrupted> {
    let tid = TID.with(Cell::get);
    let Some(Some(rt)) = RUNTIME.get() else {
        return None;
    };
    if tid >= RETIRED || rt.finished.load(Ordering::Acquire) {
        return None;
    }
    let slot = lock(&rt.threads)[tid as usize];
    let mut out = lock(&rt.sink);
    // SAFETY: the slot's variables belong to the calling thread, which the signal
    // interrupted outside the runtime (the runtime blocks signals while it works).
    unsafe {
        let (buf, idx) = (*slot.buf, *slot.idx);
        let peeked = (out.take_peeked(tid)).min(idx) as usize;
        if buf != hole() {
            let before = std::slice::from_raw_parts(buf, idx.min(BUF_CAP) as usize);
            out.sink
                .consume(tid, &before[peeked.min(before.len())..], 0);
        }
        let own = OWN.with(|c| c.replace((std::ptr::null_mut(), 0)));
        install(slot.buf, Vec::new());
        *slot.idx = 0;
        Some(Interrupted { tid, buf, idx, own })
    }
}

/// [`leave_handler`] for the block buffer: its events up to the signal marked as handed over.
fn leave_events(i: Interrupted) {
    let Some(Some(rt)) = RUNTIME.get() else {
        return;
    };
    let slot = lock(&rt.threads)[i.tid as usize];
    let mut out = lock(&rt.sink);
    // SAFETY: as in `enter_handler`; `i` holds what it took from this thread.
    unsafe {
        let peeked = out.take_peeked(i.tid) as usize;
        if let Some(events) = take_own(*slot.idx) {
            if !rt.finished.load(Ordering::Acquire) {
                out.sink
                    .consume(i.tid, &events[peeked.min(events.len())..], 0);
            }
        }
        OWN.with(|c| c.set(i.own));
        *slot.buf = i.buf;
        *slot.idx = i.idx;
        out.set_peeked(i.tid, i.idx);
    }
}

fn embedded(bytes: &[u8]) -> Option<EmbeddedProgram> {
    match abi::read_embedded(bytes) {
        Ok(mut p) if p.version == abi::EMBEDDED_VERSION => {
            p.attach_cfgs();
            Some(p)
        }
        Ok(p) => {
            eprintln!(
                "wpp-rt: program database version {} (this runtime reads {}); not recording",
                p.version,
                abi::EMBEDDED_VERSION
            );
            None
        }
        Err(e) => {
            eprintln!("wpp-rt: cannot decode the embedded program database ({e}); not recording");
            None
        }
    }
}

/// The runtime, initialized from the embedded program database `db` on first use.
fn runtime(db: &[u8]) -> Option<&'static Runtime> {
    RUNTIME
        .get_or_init(|| {
            let program = dso::start(db)?;
            let sink = match sink::Sink::open(&program) {
                Ok(s) => s,
                Err(e) => {
                    eprintln!("wpp-rt: {e}; not recording");
                    return None;
                }
            };
            let mut key: libc::pthread_key_t = 0;
            // SAFETY: `key` is a valid out-pointer; the destructor has the required signature.
            unsafe { libc::pthread_key_create(&mut key, Some(thread_exit)) };
            // SAFETY: registering plain extern "C" functions.
            unsafe {
                libc::pthread_atfork(
                    Some(fork::prepare),
                    Some(fork::in_parent),
                    Some(fork::in_child),
                );
            }
            install_signal_handlers();
            start_flush_timer();
            if program.mode == abi::Mode::TraceAddr {
                addr::prepare();
            }
            Some(Runtime {
                sink: Mutex::new(Out {
                    sink,
                    peeked: Vec::new(),
                }),
                threads: Mutex::new(Vec::new()),
                finished: AtomicBool::new(false),
                verbosity: verbosity(),
                key,
                program,
                pid: AtomicU32::new(std::process::id()),
            })
        })
        .as_ref()
}

/// Called by instrumented code when the thread's buffer is full (or on its first event).
///
/// # Safety
/// `buf`, `idx` and `depth` must be the calling thread's `__wpp_buf`, `__wpp_idx` and
/// `__wpp_depth`, and `db` must point to `db_len` bytes, the module's `__wpp_program_db`
/// (see [`abi`]).
#[no_mangle]
pub unsafe extern "C" fn __wpp_rt_flush_v2(
    buf: *mut *mut u64,
    idx: *mut u32,
    depth: *mut u32,
    db: *const u8,
    db_len: u64,
) {
    // SAFETY: guaranteed by the caller.
    with_signals_blocked(|| unsafe { flush(buf, idx, depth, db, db_len) })
}

/// [`__wpp_rt_flush_v2`]'s work, with signals blocked.
///
/// # Safety
/// As for [`__wpp_rt_flush_v2`].
unsafe fn flush(buf: *mut *mut u64, idx: *mut u32, depth: *mut u32, db: *const u8, db_len: u64) {
    let tid = TID.with(Cell::get);
    let rt = match RUNTIME.get() {
        Some(rt) => rt.as_ref(),
        // SAFETY: guaranteed by the caller.
        None => runtime(unsafe { std::slice::from_raw_parts(db, db_len as usize) }),
    };
    let Some(rt) = rt else {
        // Not recording: keep the program running, drop events.
        // SAFETY: `buf` and `idx` are the calling thread's variables.
        unsafe {
            *buf = hole();
            *idx = 0;
        }
        return;
    };
    match tid {
        UNREGISTERED => {
            let mut threads = lock(&rt.threads);
            let t = threads.len() as u32;
            threads.push(Slot {
                buf,
                idx,
                depth,
                alive: true,
            });
            drop(threads);
            TID.with(|c| c.set(t));
            // SAFETY: the key was created at init; the value is only used as a non-null tag.
            unsafe { libc::pthread_setspecific(rt.key, (t as usize + 1) as *const libc::c_void) };
            // SAFETY: the caller's variables; `OWN` is empty before registration.
            unsafe {
                install(buf, Vec::new());
                *idx = 0;
            }
        }
        // SAFETY: the caller's variables (a retired thread's events go to the hole).
        RETIRED => unsafe {
            *buf = hole();
            *idx = 0;
        },
        // SAFETY: the caller's variables.
        t => unsafe { hand_off(rt, t, buf, idx) },
    }
}

/// Called by instrumented code after a `setjmp` returns again or in a landing pad, when the
/// thread's depth differs from `saved`: appends one `Leave` per abandoned frame.
#[no_mangle]
pub extern "C" fn __wpp_rt_unwind(saved: u32) {
    with_signals_blocked(|| unwind(saved));
}

/// [`__wpp_rt_unwind`]'s work, with signals blocked.
fn unwind(saved: u32) {
    let tid = TID.with(Cell::get);
    let Some(Some(rt)) = RUNTIME.get() else {
        return;
    };
    if tid >= RETIRED {
        return;
    }
    let slot = lock(&rt.threads)[tid as usize];
    // SAFETY: the slot belongs to the calling thread, whose TLS is live.
    unsafe {
        let depth = *slot.depth;
        for _ in saved..depth {
            if *slot.idx >= BUF_CAP {
                hand_off(rt, tid, slot.buf, slot.idx);
            }
            *(*slot.buf).add(*slot.idx as usize) = abi::LEAVE_WORD;
            *slot.idx += 1;
        }
        *slot.depth = saved;
    }
}

/// Consumes what a thread has buffered (past what [`peek`] already took) and marks its open
/// frames.
///
/// # Safety
/// The slot's pointers must be valid (the thread is alive, or is the caller).
unsafe fn drain(out: &mut Out, t: u32, slot: &Slot) {
    // SAFETY: guaranteed by the caller; volatile because another thread may still be running.
    unsafe {
        let words = unconsumed(out, t, slot);
        let open = std::ptr::read_volatile(slot.depth);
        out.sink.consume(t, words, open);
        out.take_peeked(t);
        *slot.idx = 0;
        *slot.depth = 0;
    }
}

/// The words of a thread's current buffer not yet handed to the sink.
///
/// # Safety
/// As [`drain`]; the sink lock (`out`) must be held, so the buffer is not being swapped.
unsafe fn unconsumed<'a>(out: &Out, t: u32, slot: &Slot) -> &'a [u64] {
    // SAFETY: guaranteed by the caller; volatile because the thread may be running.
    unsafe {
        let n = std::ptr::read_volatile(slot.idx).min(BUF_CAP) as usize;
        let buf = std::ptr::read_volatile(slot.buf);
        let from = out.peeked.get(t as usize).map_or(0, |&p| p as usize).min(n);
        if buf.is_null() || buf == hole() {
            &[]
        } else {
            std::slice::from_raw_parts(buf.add(from), n - from)
        }
    }
}

/// Hands the words a thread has appended since its last hand-off (or peek) to the sink
/// without taking its buffer, so that they reach the file even if the thread's buffer does
/// not fill for a long time. The thread keeps appending; its next hand-off starts after them.
///
/// Reading another running thread's buffer is a benign race on x86-64, where its stores
/// become visible in program order (the word before the index that covers it).
///
/// # Safety
/// As [`drain`].
unsafe fn peek(out: &mut Out, t: u32, slot: &Slot) {
    // SAFETY: guaranteed by the caller.
    unsafe {
        let words = unconsumed(out, t, slot);
        if !words.is_empty() {
            out.sink.consume(t, words, 0);
            // `words` end at the index `unconsumed` read; the thread may have moved on since.
            let done = out.peeked.get(t as usize).copied().unwrap_or(0) + words.len() as u32;
            out.set_peeked(t, done);
        }
    }
}

/// The environment variable that sets the flush interval in seconds.
pub const FLUSH_SECONDS_VAR: &str = "WPP_FLUSH_SECONDS";

/// The flush interval when [`FLUSH_SECONDS_VAR`] is unset or not a positive number.
pub const DEFAULT_FLUSH_SECONDS: f64 = 1.0;

pub(crate) fn flush_interval() -> std::time::Duration {
    let secs = std::env::var(FLUSH_SECONDS_VAR)
        .ok()
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0)
        .unwrap_or(DEFAULT_FLUSH_SECONDS);
    std::time::Duration::from_secs_f64(secs.max(0.001))
}

/// Starts the thread that, every flush interval, hands every live thread's partial buffer to
/// the sink ([`peek`]) and has the writer write it out: a killed program loses at most the
/// last interval's events (plus what the writer had not yet written).
fn start_flush_timer() {
    let interval = flush_interval();
    let spawned = with_signals_blocked(|| {
        std::thread::Builder::new()
            .name("wpp-flush".into())
            .spawn(move || loop {
                std::thread::sleep(interval);
                let Some(Some(rt)) = RUNTIME.get() else {
                    continue;
                };
                if rt.finished.load(Ordering::Acquire) || !flush_all(rt) {
                    return;
                }
                addr::flush_all();
            })
    });
    if let Err(e) = spawned {
        eprintln!("wpp-rt: cannot start the flush timer ({e}); recording without it");
    }
}

/// Peeks every live thread and syncs the writer; `false` once recording is over or this
/// process is not the recording one (a `vfork` child).
fn flush_all(rt: &Runtime) -> bool {
    let threads = lock(&rt.threads);
    let mut out = lock(&rt.sink);
    if rt.finished.load(Ordering::Acquire) {
        return false;
    }
    for (t, slot) in threads.iter().enumerate() {
        if slot.alive {
            // SAFETY: live threads' slots stay valid while the registry lock is held (a thread
            // ending takes it to retire its slot).
            unsafe { peek(&mut out, t as u32, slot) };
        }
    }
    out.sink.sync();
    true
}

/// pthread key destructor: the thread is ending.
extern "C" fn thread_exit(_value: *mut libc::c_void) {
    with_signals_blocked(end_thread);
}

/// Ends the calling thread's recording ([`thread_exit`]).
fn end_thread() {
    let Some(Some(rt)) = RUNTIME.get() else {
        return;
    };
    let t = TID.with(Cell::get);
    if t >= RETIRED {
        return;
    }
    TID.with(|c| c.set(RETIRED));
    let mut threads = lock(&rt.threads);
    let slot = threads[t as usize];
    threads[t as usize].alive = false;
    if !rt.finished.load(Ordering::Acquire) {
        let mut out = lock(&rt.sink);
        // SAFETY: this is the thread's own slot and its TLS is still live.
        unsafe { drain(&mut out, t, &slot) };
    }
    drop(threads);
    // Later events of this thread (other TLS destructors) are dropped: they go to the hole.
    drop(take_own(0));
    // SAFETY: own TLS.
    unsafe {
        *slot.buf = hole();
        *slot.idx = 0;
    }
}

/// Finishes the output: every live thread's buffer, open frames marked, end marker; then,
/// for a `.wpp`, the finisher (unless `ending` is a signal).
fn finish(rt: &Runtime, blocking: bool, ending: sink::Ending) {
    if rt.finished.swap(true, Ordering::AcqRel) {
        return;
    }
    let (threads, out) = if blocking {
        (lock(&rt.threads), lock(&rt.sink))
    } else {
        match (rt.threads.try_lock(), rt.sink.try_lock()) {
            (Ok(t), Ok(s)) => (t, s),
            _ => return,
        }
    };
    let mut out = out;
    for (t, slot) in threads.iter().enumerate() {
        if slot.alive {
            // SAFETY: live threads' TLS stays mapped while the process exits (best effort for
            // threads still running; see the module docs).
            unsafe { drain(&mut out, t as u32, slot) };
        }
    }
    let destination = out.sink.said(ending);
    match out.sink.finish(ending, rt.verbosity == Verbosity::Summary) {
        Ok(summary) if rt.verbosity == Verbosity::Summary => eprintln!("wpp-rt: {summary}"),
        Ok(_) if rt.verbosity == Verbosity::Where => {
            eprintln!("wpp-rt: recorded to {destination}")
        }
        Ok(_) => {}
        Err(e) => eprintln!("wpp-rt: {e}"),
    }
}

/// Ends every recording of this process before it ends or replaces its image: the trace (and
/// its finisher), the address trace and a path profile. Not in a `vfork` child, which shares
/// the parent's memory: there the parent's recording goes on.
fn end_recording() {
    with_signals_blocked(|| {
        if let Some(Some(rt)) = RUNTIME.get() {
            if rt.pid.load(Ordering::Acquire) != std::process::id() {
                return;
            }
            finish(rt, true, sink::Ending::Normal);
        }
        addr::end();
        profile::finish_profile(true);
    })
}

/// Ends the process without running `atexit` handlers or flushing stdio (what libc's `_exit`
/// does; used by the wrappers below and the finisher's processes).
pub(crate) fn raw_exit(status: libc::c_int) -> ! {
    // SAFETY: `exit_group` does not return.
    unsafe { libc::syscall(libc::SYS_exit_group, status as libc::c_long) };
    unreachable!("exit_group returned")
}

/// `_exit` of instrumented programs (the runtime is linked into the executable, so this
/// definition takes precedence over libc's): ends the recording, which `atexit` would not,
/// then exits as libc's `_exit` does.
#[no_mangle]
pub extern "C" fn _exit(status: libc::c_int) -> ! {
    profile::note_exit_status(status);
    end_recording();
    raw_exit(status)
}

/// `_Exit`: the same as [`_exit`].
#[no_mangle]
pub extern "C" fn _Exit(status: libc::c_int) -> ! {
    _exit(status)
}

/// The wrappers of the `exec` family: the recording is ended (written, and its finisher
/// started) before the new image replaces this one; then libc's function runs. Should `exec`
/// fail, the program goes on unrecorded.
mod exec {
    use libc::{c_char, c_int};

    /// libc's definition of `name`, the next one after the executable's.
    fn next(name: &std::ffi::CStr) -> *mut libc::c_void {
        // SAFETY: looking up a symbol by a NUL-terminated name.
        unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) }
    }

    macro_rules! wrap {
        ($(#[$doc:meta])* $name:ident($($arg:ident: $ty:ty),*)) => {
            $(#[$doc])*
            ///
            /// # Safety
            /// As libc's.
            #[no_mangle]
            pub unsafe extern "C" fn $name($($arg: $ty),*) -> c_int {
                super::end_recording();
                let f = next(&std::ffi::CString::new(stringify!($name)).unwrap_or_default());
                if f.is_null() {
                    // SAFETY: setting errno.
                    unsafe { *libc::__errno_location() = libc::ENOSYS };
                    return -1;
                }
                // SAFETY: `f` is libc's function of this signature.
                let f: unsafe extern "C" fn($($ty),*) -> c_int = unsafe { std::mem::transmute(f) };
                // SAFETY: forwarded from the caller.
                unsafe { f($($arg),*) }
            }
        };
    }

    wrap!(
        /// `execve` after ending the recording.
        execve(path: *const c_char, argv: *const *const c_char, envp: *const *const c_char)
    );
    wrap!(
        /// `execv` after ending the recording.
        execv(path: *const c_char, argv: *const *const c_char)
    );
    wrap!(
        /// `execvp` after ending the recording.
        execvp(file: *const c_char, argv: *const *const c_char)
    );
    wrap!(
        /// `execvpe` after ending the recording.
        execvpe(file: *const c_char, argv: *const *const c_char, envp: *const *const c_char)
    );
    wrap!(
        /// `fexecve` after ending the recording.
        fexecve(fd: c_int, argv: *const *const c_char, envp: *const *const c_char)
    );
}

/// `fork()` while recording: both processes go on recording, each into its own file.
///
/// * `prepare` (in the parent, before the fork): takes the registry and sink locks (so the
///   child inherits them consistent, and held by the thread that exists there), hands the
///   forking thread's partial buffer to the sink and waits until the writer has written
///   everything, noting the file's length.
/// * `in_child`: starts a new output named by the child's pid. Its stream for the forking
///   thread starts with one `Enter` per frame open at the fork — the frames are read back from
///   the parent's file up to the noted length (so the child pays for reading the parent's
///   trace so far, once per fork) — so that the child's trace is balanced: the frames it
///   returns from were entered in its trace. Other threads do not exist in the child.
/// * `in_parent`: releases the locks; the parent's recording goes on unchanged.
mod fork {
    use super::*;
    use std::sync::MutexGuard;
    use wpp_trace::{Event, ThreadId};

    /// What `prepare` leaves for the handlers that run after the fork (in the same thread).
    struct Held {
        threads: MutexGuard<'static, Vec<super::Slot>>,
        out: MutexGuard<'static, Out>,
        /// The forking thread, and how many words of its buffer the parent's file holds.
        thread: Option<(u32, u32)>,
        /// The parent's file and its length at the fork.
        parent_file: std::path::PathBuf,
        parent_len: u64,
        /// The forking thread's signal mask before `prepare` blocked its signals: a handler
        /// must not run while the locks are held, up to the fork and after it.
        mask: libc::sigset_t,
    }

    /// [`Held`] between the handlers. Not a thread-local: `fork` may run after the forking
    /// thread's TLS destructors (the finisher forks from an `atexit` handler).
    struct Slot(Option<Held>);
    // SAFETY: only the forking thread stores and takes it (a second forking thread waits in
    // `prepare` for the registry lock the first one holds until its fork is over).
    unsafe impl Send for Slot {}
    static HELD: Mutex<Slot> = Mutex::new(Slot(None));

    fn recording() -> Option<&'static Runtime> {
        match RUNTIME.get() {
            Some(Some(rt)) if !rt.finished.load(Ordering::Acquire) => Some(rt),
            _ => None,
        }
    }

    pub(super) extern "C" fn prepare() {
        let Some(rt) = recording() else { return };
        let mask = block_signals();
        let threads = lock(&rt.threads);
        let mut out = lock(&rt.sink);
        let tid = TID.with(Cell::get);
        let thread = (tid < RETIRED).then(|| {
            let slot = threads[tid as usize];
            // SAFETY: the calling thread's own slot.
            unsafe { peek(&mut out, tid, &slot) };
            (tid, out.peeked.get(tid as usize).copied().unwrap_or(0))
        });
        let parent_len = out.sink.sync();
        let parent_file = out.sink.path().to_owned();
        lock(&HELD).0 = Some(Held {
            threads,
            out,
            thread,
            parent_file,
            parent_len,
            mask,
        });
    }

    pub(super) extern "C" fn in_parent() {
        let held = lock(&HELD).0.take();
        if let Some(held) = held {
            let mask = held.mask;
            drop(held);
            restore_signals(&mask);
        }
    }

    pub(super) extern "C" fn in_child() {
        let Some(held) = lock(&HELD).0.take() else {
            return;
        };
        let mask = held.mask;
        child(held);
        restore_signals(&mask);
    }

    /// The child's recording ([`in_child`]), with the parent's locks `held`.
    fn child(held: Held) {
        let Some(rt) = recording() else { return };
        let Held {
            mut threads,
            mut out,
            thread,
            parent_file,
            parent_len,
            ..
        } = held;
        rt.pid.store(std::process::id(), Ordering::Release);
        sink::FORKED.store(true, Ordering::Release);
        if rt.program.ewpp.is_some() {
            // See `ewpp`: the child's checks would need the parent's last-writer table.
            // The parent's sink stays in the lock, never used again (its writer thread does
            // not exist here); unlocking it does not drop it.
            rt.finished.store(true, Ordering::Release);
            say_child_unrecorded(
                "an eWPP follows one process's memory; --mode trace-addr records each process",
            );
            return;
        }
        for (t, slot) in threads.iter_mut().enumerate() {
            slot.alive = thread.is_some_and(|(f, _)| f as usize == t);
        }
        let program = dso::current();
        let sink = match sink::Sink::open(program.as_ref().unwrap_or(&rt.program)) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("wpp-rt: forked child: {e}; not recording");
                rt.finished.store(true, Ordering::Release);
                return;
            }
        };
        // The parent's sink talks to a writer thread that does not exist here: forget it.
        std::mem::forget(std::mem::replace(
            &mut *out,
            Out {
                sink,
                peeked: Vec::new(),
            },
        ));
        if let Some((t, done)) = thread {
            out.set_peeked(t, done);
            match open_frames(&parent_file, parent_len, t) {
                Ok(frames) => {
                    let words: Vec<u64> = frames.iter().map(|&f| abi::enter_word(f)).collect();
                    out.sink.consume(t, &words, 0);
                }
                Err(e) => eprintln!(
                    "wpp-rt: forked child: cannot read the open frames from {}: {e}; \
                     its trace starts unbalanced",
                    parent_file.display()
                ),
            }
        }
        drop(out);
        drop(threads);
        start_flush_timer();
    }

    /// The functions open in thread `t` at the end of the first `len` bytes of the trace
    /// `path`, outermost first.
    fn open_frames(path: &std::path::Path, len: u64, t: u32) -> Result<Vec<u32>, String> {
        use std::io::Read;
        let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
        let reader = wpp_trace::file::TraceReader::from_reader(file.take(len))
            .and_then(wpp_paths::trace::decoding)
            .map_err(|e| e.to_string())?;
        let mut reader = reader.allow_truncated(true);
        let mut current = ThreadId(0);
        let mut stack = Vec::new();
        reader
            .for_each_batch(|run| {
                for &e in run {
                    match e {
                        Event::Thread(th) => current = th,
                        Event::Enter(f) if current.0 == t => stack.push(f.0),
                        Event::Leave if current.0 == t => drop(stack.pop()),
                        _ => {}
                    }
                }
            })
            .map_err(|e| e.to_string())?;
        Ok(stack)
    }
}

/// Ends every recording at exit: called by `exe.c`'s destructor, after the program's
/// `atexit` handlers, C++ static destructors and its executable's destructors, so their events
/// and accesses are recorded too.
#[no_mangle]
pub extern "C" fn wpp_rt_fini() {
    with_signals_blocked(|| {
        addr::end();
        if let Some(Some(rt)) = RUNTIME.get() {
            finish(rt, true, sink::Ending::Normal);
        }
        profile::finish_profile(true);
    })
}

const FATAL: [libc::c_int; 7] = [
    libc::SIGSEGV,
    libc::SIGBUS,
    libc::SIGFPE,
    libc::SIGILL,
    libc::SIGABRT,
    libc::SIGTERM,
    libc::SIGINT,
];

extern "C" fn on_fatal_signal(sig: libc::c_int) {
    profile::finish_profile(false);
    addr::on_fatal_signal();
    if let Some(Some(rt)) = RUNTIME.get() {
        // Not async-signal-safe in general; locks are only tried so a signal arriving while
        // the runtime holds them loses the tail instead of deadlocking.
        finish(rt, false, sink::Ending::Signal);
    }
    // SAFETY: restoring the default action and re-raising is the standard way to die of the
    // original signal after cleanup.
    unsafe {
        libc::signal(sig, libc::SIG_DFL);
        libc::raise(sig);
    }
}

pub(crate) fn install_signal_handlers() {
    for sig in FATAL {
        // SAFETY: querying and setting dispositions with valid sigaction structs; only signals
        // the program left at their default are taken over.
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(sig, std::ptr::null(), &mut old) != 0
                || old.sa_sigaction != libc::SIG_DFL
            {
                continue;
            }
            let mut act: libc::sigaction = std::mem::zeroed();
            act.sa_sigaction = on_fatal_signal as extern "C" fn(libc::c_int) as usize;
            libc::sigemptyset(&mut act.sa_mask);
            act.sa_flags = libc::SA_RESETHAND;
            // libc's own: the runtime's handler records nothing, so it is not wrapped.
            if let Some(real) = signals::real_sigaction() {
                real(sig, &act, std::ptr::null_mut());
            }
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs `f` with the calling thread's asynchronous signals blocked (a signal sent meanwhile
/// is delivered when `f` returns), and threads `f` spawns keep them blocked for good.
///
/// A program's signal handler may run instrumented code, whose probes call the runtime. On
/// the program's thread that must not happen while the runtime holds its locks or has half
/// swapped the thread's buffer (the handler's probes would wait for the lock the thread
/// holds: a hang); and the runtime's own threads must never run the program's handlers at
/// all. Synchronous signals (a fault) stay unblocked: blocked, they would kill the process
/// without the runtime's fatal-signal handler. Two system calls per buffer of
/// [`BUF_CAP`] events.
pub(crate) fn with_signals_blocked<T>(f: impl FnOnce() -> T) -> T {
    let old = block_signals();
    let out = f();
    restore_signals(&old);
    out
}

/// Blocks the calling thread's asynchronous signals ([`with_signals_blocked`]); returns the
/// mask to restore.
fn block_signals() -> libc::sigset_t {
    // SAFETY: the sets are initialized by sigfillset and pthread_sigmask before use.
    unsafe {
        let mut blocked: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut blocked);
        for sig in [
            libc::SIGSEGV,
            libc::SIGBUS,
            libc::SIGFPE,
            libc::SIGILL,
            libc::SIGTRAP,
            libc::SIGSYS,
        ] {
            libc::sigdelset(&mut blocked, sig);
        }
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::pthread_sigmask(libc::SIG_BLOCK, &blocked, &mut old);
        old
    }
}

/// Restores a mask [`block_signals`] returned.
fn restore_signals(old: &libc::sigset_t) {
    // SAFETY: a mask pthread_sigmask filled.
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, old, std::ptr::null_mut()) };
}
