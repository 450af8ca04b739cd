//! The wpp recording runtime, linked as a static library into programs built by `wpp cc`.
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
//! * **Output.** [`sink`] turns consumed buffers into the output, on a background thread fed
//!   through [`handoff`]: a raw chunked trace (`wpp_trace::file` binary format, encoded and
//!   written with `write(2)` while the program runs, so that after `kill -9` every chunk
//!   written so far is readable) or, by default, an online `.wpp` ([`online`]).
//! * **Memory.** Everything the runtime allocates comes from its own heap ([`heap`]), never
//!   from the program's `malloc`, and program threads never block in std channels (which
//!   allocate there): the program's heap layout is the same recorded and native, so programs
//!   that branch on heap addresses take the same paths.
//! * **Termination.** An `atexit` handler (registered at the first event) consumes every live
//!   thread's buffer, then *marks open frames* by appending one `Leave` per frame still on the
//!   thread's shadow stack — so `exit()` from deep frames, `abort()` and fatal signals (SIGSEGV,
//!   SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM, SIGINT, whose handlers do the same and then
//!   re-raise with the default action) leave a balanced trace. Events produced after that (in
//!   atexit handlers that run later, or in other TLS destructors of an ending thread) are not
//!   recorded.
//!
//! Environment: `WPP_OUT` names the output file (`%p` is replaced by the process id; default
//! `PROGRAM.PID.wpp`, `.trace` with `WPP_RAW=1`, `.blprof`/`.pppprof` for profiles),
//! `WPP_QUIET=0` prints a one-line summary on stderr at exit, `WPP_COMPRESS` chooses the online
//! compressor (`phrase` by default, `sequitur`, … see [`online`]), `WPP_RAW=1` records a raw
//! trace instead, whose chunks are zstd-compressed at level `WPP_ZSTD_LEVEL` (default 1, `0`
//! stores them plain; see [`sink`]).
//!
//! A child of `fork()` is not recorded (only the parent's run is). Not supported: `vfork`, and
//! signals that kill without a handler
//! (`SIGKILL`: the trace ends at the last whole chunk, without the end marker).

#![deny(missing_docs)]

/// The contract with instrumented code, shared with the instrumenter and the tools.
pub use wpp_abi as abi;

pub mod addr;
pub mod handoff;
pub mod heap;
pub mod online;
pub mod profile;
pub mod sink;
pub mod varint;

use abi::{EmbeddedProgram, BUF_CAP};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};
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

/// The process-wide runtime state.
struct Runtime {
    sink: Mutex<sink::Sink>,
    threads: Mutex<Vec<Slot>>,
    finished: AtomicBool,
    quiet: bool,
    key: libc::pthread_key_t,
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
/// empty one in its place.
///
/// # Safety
/// `buf` and `idx` must be the calling thread's `__wpp_buf` and `__wpp_idx`.
unsafe fn hand_off(rt: &Runtime, t: u32, buf: *mut *mut u64, idx: *mut u32) {
    // SAFETY: guaranteed by the caller.
    unsafe {
        let Some(full) = take_own(*idx) else {
            *buf = hole();
            *idx = 0;
            return;
        };
        let empty = if rt.finished.load(Ordering::Acquire) {
            full // recording is over: drop the events
        } else {
            lock(&rt.sink).swap(t, full)
        };
        install(buf, empty);
        *idx = 0;
    }
}

fn embedded(bytes: &[u8]) -> Option<EmbeddedProgram> {
    match postcard::from_bytes::<EmbeddedProgram>(bytes) {
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
            let program = embedded(db)?;
            let sink = match sink::Sink::open(program) {
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
                libc::atexit(at_exit);
                libc::pthread_atfork(None, None, Some(after_fork_in_child));
            }
            install_signal_handlers();
            Some(Runtime {
                sink: Mutex::new(sink),
                threads: Mutex::new(Vec::new()),
                finished: AtomicBool::new(false),
                quiet: std::env::var("WPP_QUIET").map(|v| v != "0").unwrap_or(true),
                key,
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

/// Consumes what a thread has buffered and marks its open frames.
///
/// # Safety
/// The slot's pointers must be valid (the thread is alive, or is the caller).
unsafe fn drain(sink: &mut sink::Sink, t: u32, slot: &Slot) {
    // SAFETY: guaranteed by the caller; volatile because another thread may still be running.
    unsafe {
        let n = std::ptr::read_volatile(slot.idx).min(BUF_CAP) as usize;
        let buf = std::ptr::read_volatile(slot.buf);
        let words = if buf.is_null() || buf == hole() {
            &[]
        } else {
            std::slice::from_raw_parts(buf, n)
        };
        let open = std::ptr::read_volatile(slot.depth);
        sink.consume(t, words, open);
        *slot.idx = 0;
        *slot.depth = 0;
    }
}

/// pthread key destructor: the thread is ending.
extern "C" fn thread_exit(_value: *mut libc::c_void) {
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
        let mut sink = lock(&rt.sink);
        // SAFETY: this is the thread's own slot and its TLS is still live.
        unsafe { drain(&mut sink, t, &slot) };
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

/// Finishes the output: every live thread's buffer, open frames marked, end marker.
fn finish(rt: &Runtime, blocking: bool) {
    if rt.finished.swap(true, Ordering::AcqRel) {
        return;
    }
    let (threads, sink) = if blocking {
        (lock(&rt.threads), lock(&rt.sink))
    } else {
        match (rt.threads.try_lock(), rt.sink.try_lock()) {
            (Ok(t), Ok(s)) => (t, s),
            _ => return,
        }
    };
    let mut sink = sink;
    for (t, slot) in threads.iter().enumerate() {
        if slot.alive {
            // SAFETY: live threads' TLS stays mapped while the process exits (best effort for
            // threads still running; see the module docs).
            unsafe { drain(&mut sink, t as u32, slot) };
        }
    }
    match sink.finish() {
        Ok(summary) if !rt.quiet => eprintln!("wpp-rt: {summary}"),
        Ok(_) => {}
        Err(e) => eprintln!("wpp-rt: {e}"),
    }
}

/// A child of `fork()` has the runtime's state but not its background thread: it stops
/// recording (its events are dropped; its `exit` writes nothing), so it neither blocks on a
/// hand-off queue nobody drains nor writes into the parent's output.
extern "C" fn after_fork_in_child() {
    if let Some(Some(rt)) = RUNTIME.get() {
        rt.finished.store(true, Ordering::Release);
    }
}

extern "C" fn at_exit() {
    if let Some(Some(rt)) = RUNTIME.get() {
        finish(rt, true);
    }
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
    if let Some(Some(rt)) = RUNTIME.get() {
        // Not async-signal-safe in general; locks are only tried so a signal arriving while
        // the runtime holds them loses the tail instead of deadlocking.
        finish(rt, false);
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
            libc::sigaction(sig, &act, std::ptr::null_mut());
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
