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
//! The `ewpp-filter` mode (the filtering phase of Tallam–Gupta §3.1) has the same probes, whose
//! full buffers reach [`__wpp_rt_filter_flush_v1`] instead: no file is written while the
//! program runs; each buffer goes through the filter's classifier (`wpp_deps::filter`), and
//! the report of exercised pairs is written at exit, the input of an `ewpp` build.
//!
//! Output: `WPP_AT_OUT` (`%p` is the process id), else `WPP_OUT` with `.at` appended, else
//! `PROGRAM.PID.at` (`ewpp-filter`: `.depf` instead of `.at`). A forked child writes nothing (as for the block trace). Chunks are
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
        out: Output,
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

/// Where accesses go.
enum Output {
    /// The address trace file.
    Trace(AtWriter<BufWriter<File>>),
    /// `ewpp-filter`: the classifier, and where its report goes at the end.
    Filter(Box<wpp_deps::filter::Classifier<'static>>, PathBuf),
}

impl Output {
    /// Opens the output of `kind` for the program whose memory database is `db`.
    fn open(kind: Kind, db: &[u8]) -> Result<Output, String> {
        let path = output_path(kind);
        let shown = path.display();
        match kind {
            Kind::Trace => File::create(&path)
                .and_then(|f| AtWriter::new(BufWriter::new(f), db))
                .map(Output::Trace)
                .map_err(|e| format!("cannot write the address trace {shown}: {e}")),
            Kind::Filter => {
                let db: wpp_deps::MemoryDb = postcard::from_bytes(db)
                    .map_err(|e| format!("cannot decode the memory database: {e}"))?;
                // Checked now, so an unwritable path is reported when recording starts.
                File::create(&path).map_err(|e| format!("cannot write {shown}: {e}"))?;
                let db: &'static wpp_deps::MemoryDb = Box::leak(Box::new(db));
                let classifier = wpp_deps::filter::Classifier::new(db);
                Ok(Output::Filter(Box::new(classifier), path))
            }
        }
    }

    fn chunk(&mut self, mut accesses: impl Iterator<Item = Access>) -> Result<(), String> {
        match self {
            Output::Trace(w) => w.chunk(accesses).map_err(|e| e.to_string()),
            Output::Filter(c, _) => accesses
                .try_for_each(|a| c.add(a))
                .map_err(|e| e.to_string()),
        }
    }

    fn finish(self) -> Result<(), String> {
        match self {
            Output::Trace(w) => w.finish().map(drop).map_err(|e| e.to_string()),
            Output::Filter(c, path) => std::fs::write(&path, c.finish().to_bytes())
                .map_err(|e| format!("{}: {e}", path.display())),
        }
    }

    fn abandon(self, message: &str) {
        match self {
            Output::Trace(w) => drop(w.abandon(message)),
            Output::Filter(_, path) => drop(std::fs::remove_file(path)),
        }
    }
}

/// Which flush entry point a module calls: its mode.
#[derive(Clone, Copy)]
enum Kind {
    Trace,
    Filter,
}

fn output_path(kind: Kind) -> PathBuf {
    let pid = std::process::id().to_string();
    let ext = match kind {
        Kind::Trace => "at",
        Kind::Filter => "depf",
    };
    if let (Kind::Trace, Some(p)) = (kind, std::env::var_os("WPP_AT_OUT")) {
        return PathBuf::from(p.to_string_lossy().replace("%p", &pid));
    }
    if let Some(p) = std::env::var_os("WPP_OUT") {
        return PathBuf::from(format!("{}.{ext}", p.to_string_lossy().replace("%p", &pid)));
    }
    let program = std::env::current_exe()
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "program".into());
    PathBuf::from(format!("{program}.{pid}.{ext}"))
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

fn start(kind: Kind, db: &[u8], abuf: *mut *mut u64, aidx: *mut u32) -> State {
    let out = match Output::open(kind, db) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("wpp-rt: {e}");
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
    // SAFETY: guaranteed by the caller.
    unsafe { flush(Kind::Trace, abuf, aidx, db, db_len) }
}

/// `ewpp-filter`: classifies the calling thread's full address buffer. See the module docs.
///
/// # Safety
/// As [`__wpp_rt_at_flush_v1`].
#[no_mangle]
pub unsafe extern "C" fn __wpp_rt_filter_flush_v1(
    abuf: *mut *mut u64,
    aidx: *mut u32,
    db: *const u8,
    db_len: u64,
) {
    // SAFETY: guaranteed by the caller.
    unsafe { flush(Kind::Filter, abuf, aidx, db, db_len) }
}

/// # Safety
/// As [`__wpp_rt_at_flush_v1`].
unsafe fn flush(kind: Kind, abuf: *mut *mut u64, aidx: *mut u32, db: *const u8, db_len: u64) {
    let mut st = lock();
    // SAFETY: no preconditions.
    let me = unsafe { libc::pthread_self() };
    match &mut *st {
        State::Idle => {
            // SAFETY: guaranteed by the caller.
            let db = unsafe { std::slice::from_raw_parts(db, db_len as usize) };
            *st = start(kind, db, abuf, aidx);
            if matches!(*st, State::Active { .. }) {
                return;
            }
        }
        // SAFETY: no preconditions.
        State::Active { owner, .. } if unsafe { libc::pthread_equal(*owner, me) } == 0 => {
            let State::Active { out, .. } = std::mem::replace(&mut *st, State::Over) else {
                unreachable!()
            };
            let mode = match kind {
                Kind::Trace => "trace-addr",
                Kind::Filter => "ewpp-filter",
            };
            let msg = format!(
                "a second thread accessed memory; the {mode} mode records single-threaded \
                 programs only (cross-thread dependences need a global order of accesses)"
            );
            eprintln!("wpp-rt: {msg}; the recording of accesses stops here");
            out.abandon(&msg);
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
                eprintln!("wpp-rt: cannot record the accesses: {e}; the recording stops here");
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
        let r = out.chunk(accesses(&words, len)).and_then(|_| out.finish());
        if let Err(e) = r {
            eprintln!("wpp-rt: cannot end the recording of accesses: {e}");
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
