//! The address trace of `trace-addr` programs (see `wpp_abi`'s "Address trace buffer"): the
//! instrumented code appends `id, address, size` triples to a thread-local buffer inline and
//! calls [`__wpp_rt_at_flush_v1`] when it is full; this module writes each full buffer as one
//! chunk of a `wpp_deps::at` file and ends the file at exit.
//!
//! One thread is recorded: the address trace has no global order across threads, so a load
//! whose last writer ran on another thread could not be told apart from a wrong edge. The
//! instrumenter refuses programs that refer to a thread-starting function; if a second thread
//! accesses memory anyway (a thread started out of the module's sight), the file is ended
//! with an abandon record naming the problem, which every reader reports as an error, and
//! nothing more is recorded.
//!
//! Output: `WPP_AT_OUT` (`%p` is the process id), else `WPP_OUT` with `.at` appended, else
//! `PROGRAM.PID.at`. A forked child writes nothing (as for the block trace). Chunks are
//! written by the program thread itself, so after `kill -9` every chunk written so far is
//! readable (the reader reports the missing end record).

use crate::abi::AT_BUF_CAP;
use std::fs::File;
use std::io::BufWriter;
use std::path::PathBuf;
use std::sync::Mutex;
use wpp_deps::at::{Access, AtWriter};

enum State {
    /// Not started yet.
    Idle,
    /// Recording the thread `owner`, whose buffer is `words` (installed in its `__wpp_abuf`).
    Active {
        out: AtWriter<BufWriter<File>>,
        owner: libc::pthread_t,
        abuf: *mut *mut u64,
        aidx: *mut u32,
        words: Vec<u64>,
    },
    /// Ended (exit, abandon, fork child, or the file could not be opened): accesses are
    /// dropped.
    Over,
}

// SAFETY: the pointers are the owner thread's TLS addresses, used only while holding the lock,
// by the owner or by the exit path.
unsafe impl Send for State {}

static STATE: Mutex<State> = Mutex::new(State::Idle);

/// Where threads that are not recorded write their accesses: never read.
struct Hole(std::cell::UnsafeCell<[u64; AT_BUF_CAP as usize]>);
// SAFETY: Rust code never reads or writes the hole; racing stores of unread words are harmless.
unsafe impl Sync for Hole {}
static HOLE: Hole = Hole(std::cell::UnsafeCell::new([0; AT_BUF_CAP as usize]));

fn output_path() -> PathBuf {
    let pid = std::process::id().to_string();
    if let Some(p) = std::env::var_os("WPP_AT_OUT") {
        return PathBuf::from(p.to_string_lossy().replace("%p", &pid));
    }
    if let Some(p) = std::env::var_os("WPP_OUT") {
        return PathBuf::from(format!("{}.at", p.to_string_lossy().replace("%p", &pid)));
    }
    let program = std::env::current_exe()
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "program".into());
    PathBuf::from(format!("{program}.{pid}.at"))
}

fn lock() -> std::sync::MutexGuard<'static, State> {
    STATE.lock().unwrap_or_else(|e| e.into_inner())
}

/// The accesses in the first `len` words of a buffer.
fn accesses(words: &[u64], len: usize) -> impl Iterator<Item = Access> + '_ {
    words[..len.min(words.len())]
        .chunks_exact(3)
        .map(|w| Access {
            id: w[0] as u32,
            addr: w[1],
            size: w[2],
        })
}

fn start(db: &[u8], abuf: *mut *mut u64, aidx: *mut u32) -> State {
    let path = output_path();
    let out = File::create(&path).and_then(|f| AtWriter::new(BufWriter::new(f), db));
    let out = match out {
        Ok(o) => o,
        Err(e) => {
            eprintln!(
                "wpp-rt: cannot write the address trace {}: {e}",
                path.display()
            );
            return State::Over;
        }
    };
    // SAFETY: registering plain extern "C" functions.
    unsafe {
        libc::atexit(at_exit);
        libc::pthread_atfork(None, None, Some(after_fork_in_child));
    }
    let mut words = vec![0u64; AT_BUF_CAP as usize];
    // SAFETY: `abuf`/`aidx` are the calling thread's globals (the ABI).
    unsafe {
        *abuf = words.as_mut_ptr();
        *aidx = 0;
    }
    State::Active {
        out,
        // SAFETY: no preconditions.
        owner: unsafe { libc::pthread_self() },
        abuf,
        aidx,
        words,
    }
}

/// Writes the calling thread's full address-trace buffer. See the module docs.
///
/// # Safety
/// `abuf` and `aidx` must be the calling thread's `__wpp_abuf` and `__wpp_aidx`, and `db` must
/// point to `db_len` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn __wpp_rt_at_flush_v1(
    abuf: *mut *mut u64,
    aidx: *mut u32,
    db: *const u8,
    db_len: u64,
) {
    let mut st = lock();
    // SAFETY: no preconditions.
    let me = unsafe { libc::pthread_self() };
    match &mut *st {
        State::Idle => {
            // SAFETY: guaranteed by the caller.
            let db = unsafe { std::slice::from_raw_parts(db, db_len as usize) };
            *st = start(db, abuf, aidx);
            if matches!(*st, State::Active { .. }) {
                return;
            }
        }
        // SAFETY: no preconditions.
        State::Active { owner, .. } if unsafe { libc::pthread_equal(*owner, me) } == 0 => {
            let State::Active { out, .. } = std::mem::replace(&mut *st, State::Over) else {
                unreachable!()
            };
            let msg = "a second thread accessed memory; trace-addr records single-threaded \
                       programs only (cross-thread dependences need a global order of accesses)";
            eprintln!("wpp-rt: {msg}; the address trace stops here");
            let _ = out.abandon(msg);
        }
        State::Active {
            out,
            words,
            owner: _,
            ..
        } => {
            // SAFETY: `aidx` is the owner's index (checked above).
            let len = unsafe { *aidx } as usize;
            if let Err(e) = out.chunk(accesses(words, len)) {
                eprintln!("wpp-rt: cannot write the address trace: {e}; it stops here");
                *st = State::Over;
            } else {
                // SAFETY: as above.
                unsafe { *aidx = 0 };
                return;
            }
        }
        State::Over => {}
    }
    // Not recording this thread (any more): its accesses go to the hole.
    // SAFETY: guaranteed by the caller.
    unsafe {
        *abuf = HOLE.0.get().cast();
        *aidx = 0;
    }
}

/// Writes the owner's last buffer and the end record (at exit).
extern "C" fn at_exit() {
    end();
}

/// Writes the owner's last buffer and the end record, once: at exit, and from the `_exit` and
/// `exec` wrappers, which end the process image without running `atexit` handlers.
pub(crate) fn end() {
    let mut st = lock();
    if let State::Active {
        mut out,
        abuf,
        aidx,
        words,
        ..
    } = std::mem::replace(&mut *st, State::Over)
    {
        // SAFETY: the owner's TLS globals; at exit they are still mapped (exit runs on some
        // thread of the process, and TLS blocks are freed only when their thread ends, which
        // for the owner would have gone through here first only if it called exit).
        let len = unsafe { *aidx } as usize;
        let r = out
            .chunk(accesses(&words, len))
            .and_then(|_| out.finish().map(drop));
        if let Err(e) = r {
            eprintln!("wpp-rt: cannot write the address trace: {e}");
        }
        // SAFETY: as above; later accesses (other exit handlers) go to the hole.
        unsafe {
            *abuf = HOLE.0.get().cast();
            *aidx = 0;
        }
    }
}

/// A forked child does not write the parent's address trace.
extern "C" fn after_fork_in_child() {
    let mut st = lock();
    if let State::Active { out, .. } = std::mem::replace(&mut *st, State::Over) {
        // Forgotten, the writer neither flushes its buffered bytes nor ends the file.
        std::mem::forget(out);
    }
}
