//! The address trace of `trace-addr` programs (see `wpp_abi`'s "Address trace buffer"): the
//! instrumented code appends `id, address, size, sequence number` records to a thread-local
//! buffer inline and calls [`__wpp_rt_at_flush_v1`] when it is full; this module writes each
//! full buffer as one chunk of a `wpp_deps::at` file and ends the file at exit.
//!
//! Every thread that accesses memory is recorded, with a buffer of its own: its first flush
//! registers it (a `'T'` record with the counter's value then, below any sequence number it
//! will take), each full buffer becomes a chunk of that thread, and its end (a pthread key
//! destructor) writes its last chunk and a `'Q'` record. The sequence numbers of
//! [`__wpp_aseq`] order the accesses of all threads; readers merge the chunks by them. At
//! exit the buffers of threads still running are written as they are (best effort, as for the
//! block trace: such a thread may be between taking a number and storing its record).
//!
//! The `ewpp-filter` mode (the filtering phase of Tallam–Gupta §3.1) has the same probes, whose
//! full buffers reach [`__wpp_rt_filter_flush_v1`] instead: no file is written while the
//! program runs; each buffer goes through the filter's classifier (`wpp_deps::filter`), and
//! the report of exercised pairs is written at exit, the input of an `ewpp` build. It
//! classifies in the order of one thread: should a second thread access memory, the report is
//! abandoned with a message naming the problem.
//!
//! Every instrumented module of the process appends to the same per-thread buffer
//! (`wpp_abi`, *Shared libraries*), its ids shifted by its memory base; the file starts with
//! the process's memory database, and a library registered later adds a `'D'` record with
//! the grown one (`grown`, called by `dso.rs` while the library registers). The
//! `ewpp-filter` classifier works on the process's memory database too, and its report lists
//! the modules' ranges in it (`wpp_deps::filter::ReportModule`).
//!
//! Output: `WPP_AT_OUT` (`%p` is the process id), else `WPP_OUT` with `.at` appended (the
//! block trace has `WPP_OUT` itself), else `PROGRAM.PID.at`. `ewpp-filter` writes only its
//! report, so `WPP_OUT` names it as given, like a profile's, else `PROGRAM.PID.depf`. A forked
//! child of `trace-addr` writes its own `.at` beside its block trace. A full buffer is handed to the address trace's own writer thread
//! (`writer`), which encodes, deflates and writes it while the program goes on. The runtime's
//! flush timer also hands over what each thread's buffer holds ([`flush_all`]), and so does a
//! fatal signal, so after `kill -9` the file holds every access up to the last flush interval
//! (what the writer had not yet written is lost), after a fatal signal every access (the
//! reader gives the accesses certainly complete, then reports the missing end record).

use crate::abi::{AT_BUF_CAP, AT_RECORD_WORDS};
use std::cell::Cell;
use std::fs::File;
use std::io::BufWriter;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use wpp_deps::at::{Access, AtWriter, ChunkCoder, CodedChunk};
use wpp_deps::filter::{Classifier, FilterReport, ReportModule};

/// The next access's sequence number, taken by the instrumented code of every thread with one
/// `atomicrmw add` (`wpp_abi::SYM_ASEQ`).
#[no_mangle]
pub static __wpp_aseq: AtomicU64 = AtomicU64::new(0);

enum State {
    /// Not started yet.
    Idle,
    Active(Recorder),
    /// Ended (exit, abandon, fork child, or the file could not be opened): accesses are
    /// dropped.
    Over,
}

/// The recording: its output and every thread's buffer.
struct Recorder {
    out: Output,
    kind: Kind,
    threads: Vec<Slot>,
    /// Whose destructor ends a thread's recording.
    key: libc::pthread_key_t,
}

/// A recorded thread: its TLS buffer variables and the buffer they point to.
struct Slot {
    abuf: *mut *mut u64,
    aidx: *mut u32,
    words: Vec<u64>,
    /// Words at the start of `words` already handed over by a periodic flush ([`peek`]).
    peeked: usize,
    /// Records of signal handlers that ran on this thread since its last hand-off, waiting
    /// for their place among the buffer's ([`Slot::records`]).
    pending: Vec<u64>,
    /// Signal handlers running on the thread (nested ones counted).
    handling: u32,
    alive: bool,
}

impl Slot {
    /// The records of `words[peeked..len]` to hand over, with the pending handlers' records
    /// among them in the order of their sequence numbers. A signal can interrupt a probe
    /// after it took its sequence number and before it wrote its record, which then lands in
    /// the buffer after the handler's records although it ran before them.
    fn records(&mut self, len: usize) -> std::borrow::Cow<'_, [u64]> {
        let len = len.min(self.words.len());
        let peeked = std::mem::take(&mut self.peeked).min(len);
        if self.pending.is_empty() {
            return std::borrow::Cow::Borrowed(&self.words[peeked..len]);
        }
        let words = AT_RECORD_WORDS as usize;
        let mut records: Vec<&[u64]> = self.words[peeked..len]
            .chunks_exact(words)
            .chain(self.pending.chunks_exact(words))
            .collect();
        records.sort_by_key(|r| r[words - 1]);
        let merged = records.concat();
        self.pending.clear();
        std::borrow::Cow::Owned(merged)
    }
}

// SAFETY: the pointers are their threads' TLS addresses, used only while holding the lock, by
// their owner or by the exit path (which the module docs call best effort).
unsafe impl Send for State {}

static STATE: Mutex<State> = Mutex::new(State::Idle);

/// This thread's number in the recording (`UNREGISTERED` before its first flush).
const UNREGISTERED: u32 = u32::MAX;
/// A thread whose recording ended.
const RETIRED: u32 = u32::MAX - 1;

thread_local! {
    static THREAD: Cell<u32> = const { Cell::new(UNREGISTERED) };
}

/// Where threads that are not recorded write their accesses: never read.
struct Hole(std::cell::UnsafeCell<[u64; AT_BUF_CAP as usize]>);
// SAFETY: Rust code never reads or writes the hole; racing stores of unread words are harmless.
unsafe impl Sync for Hole {}
static HOLE: Hole = Hole(std::cell::UnsafeCell::new([0; AT_BUF_CAP as usize]));

mod writer;

/// The writer thread started with the runtime, until the address trace starts.
static PREPARED: Mutex<Option<writer::Writer>> = Mutex::new(None);

fn lock_prepared() -> std::sync::MutexGuard<'static, Option<writer::Writer>> {
    PREPARED.lock().unwrap_or_else(|e| e.into_inner())
}

/// Starts the address trace's writer thread (see `writer`): called when the runtime starts,
/// at the program's first event, in `trace-addr` mode.
pub(crate) fn prepare() {
    match writer::Writer::spawn() {
        Ok(w) => *lock_prepared() = Some(w),
        Err(e) => eprintln!("wpp-rt: cannot start the address trace's writer thread yet ({e})"),
    }
}

/// Where accesses go.
enum Output {
    /// The address trace file, written by its own thread, and its path.
    Trace(writer::Writer, PathBuf),
    /// `ewpp-filter`: the classifier, the modules its report names (none for one), and
    /// where the report goes at the end.
    Filter(Box<Classifier<'static>>, Vec<ReportModule>, PathBuf),
}

impl Output {
    /// Opens the output of `kind` for the program whose memory database is `db`, of
    /// `modules` when there are several.
    fn open(kind: Kind, db: &[u8], modules: &[ReportModule]) -> Result<Output, String> {
        let path = output_path(kind);
        let shown = path.display();
        match kind {
            Kind::Trace => {
                let prepared = lock_prepared().take();
                File::create(&path)
                    .and_then(|f| AtWriter::new(BufWriter::new(f), db))
                    .and_then(|out| {
                        let mut w = prepared.map_or_else(writer::Writer::spawn, Ok)?;
                        w.open(out);
                        Ok(Output::Trace(w, path.clone()))
                    })
                    .map_err(|e| format!("cannot write the address trace {shown}: {e}"))
            }
            Kind::Filter => {
                let db: wpp_deps::MemoryDb = postcard::from_bytes(db)
                    .map_err(|e| format!("cannot decode the memory database: {e}"))?;
                // Checked now, so an unwritable path is reported when recording starts.
                File::create(&path).map_err(|e| format!("cannot write {shown}: {e}"))?;
                let db: &'static wpp_deps::MemoryDb = Box::leak(Box::new(db));
                let classifier = Classifier::new(db);
                Ok(Output::Filter(Box::new(classifier), modules.to_vec(), path))
            }
        }
    }

    fn begin_thread(&mut self, thread: u32) -> Result<(), String> {
        if let Output::Trace(w, _) = self {
            // Below every number the thread takes: it has not taken one yet.
            w.begin_thread(thread, __wpp_aseq.load(Ordering::SeqCst));
        }
        self.failure()
    }

    /// What the writer thread met, as an error.
    fn failure(&self) -> Result<(), String> {
        match self {
            Output::Trace(w, _) => w.failure().map_or(Ok(()), Err),
            Output::Filter(..) => Ok(()),
        }
    }

    /// Writes (or classifies) the first `len` words of the calling thread's full buffer,
    /// `slot`, giving it an empty one.
    ///
    /// # Safety
    /// `slot` must be the calling thread's.
    unsafe fn flush(&mut self, thread: u32, slot: &mut Slot, len: usize) -> Result<(), String> {
        match self {
            // The whole buffer goes to the writer; with handlers' records to merge, a copy.
            Output::Trace(w, _) if slot.pending.is_empty() => {
                let mut full = std::mem::take(&mut slot.words);
                let peeked = std::mem::take(&mut slot.peeked).min(len);
                full.drain(..peeked);
                slot.words = w.swap(thread, full, len - peeked);
                // SAFETY: guaranteed by the caller.
                unsafe { *slot.abuf = slot.words.as_mut_ptr() };
                self.failure()
            }
            _ => {
                let records = slot.records(len);
                self.chunk(thread, &records)
            }
        }
    }

    /// Writes (or classifies) records of thread `thread`.
    fn chunk(&mut self, thread: u32, words: &[u64]) -> Result<(), String> {
        match self {
            Output::Trace(w, _) => {
                w.copy(thread, words);
                self.failure()
            }
            Output::Filter(c, ..) => records(words)
                .try_for_each(|(_, a)| c.add(a))
                .map_err(|e| e.to_string()),
        }
    }

    fn end_thread(&mut self, thread: u32) -> Result<(), String> {
        if let Output::Trace(w, _) = self {
            w.end_thread(thread);
        }
        self.failure()
    }

    fn finish(self) -> Result<(), String> {
        match self {
            Output::Trace(w, path) => {
                w.finish()?;
                crate::say_recorded(&path, || {
                    format!("wrote the address trace to {}", path.display())
                });
                Ok(())
            }
            Output::Filter(c, modules, path) => {
                let report = FilterReport {
                    modules,
                    ..c.finish()
                };
                std::fs::write(&path, report.to_bytes())
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                crate::say_recorded(&path, || {
                    format!(
                        "wrote the filtering report ({} pairs exercised) to {}",
                        report.pairs.len(),
                        path.display()
                    )
                });
                Ok(())
            }
        }
    }

    fn abandon(self, message: &str) {
        match self {
            Output::Trace(w, _) => w.abandon(message),
            Output::Filter(.., path) => drop(std::fs::remove_file(path)),
        }
    }
}

/// The `(sequence number, access)` records of buffer words.
fn records(words: &[u64]) -> impl Iterator<Item = (u64, Access)> + '_ {
    words.chunks_exact(AT_RECORD_WORDS as usize).map(|w| {
        let a = Access {
            id: w[0] as u32,
            addr: w[1],
            size: w[2],
        };
        (w[3], a)
    })
}

/// Which flush entry point a module calls: its mode.
#[derive(Clone, Copy, PartialEq, Eq)]
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
        let p = p.to_string_lossy();
        let mut named = PathBuf::from(p.replace("%p", &pid));
        if kind == Kind::Filter {
            return named;
        }
        // A forked child's goes beside its block trace (`sink::output_path`).
        if kind == Kind::Trace && crate::sink::FORKED.load(Ordering::Acquire) && !p.contains("%p") {
            named = crate::sink::with_before_extension(&named, &pid);
        }
        return PathBuf::from(format!("{}.{ext}", named.display()));
    }
    let program = std::env::current_exe()
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "program".into());
    // An earlier image of this process (an `exec`: same pid) wrote this name: as
    // `sink::output_path`.
    crate::sink::free_path(PathBuf::from(format!("{program}.{pid}.{ext}")), &|p| {
        p.exists()
    })
}

/// The address buffer a signal interrupted, set aside while the program's handler runs
/// (`signals.rs`): the buffer and its index as the interrupted probe left them.
pub(crate) struct Interrupted {
    t: u32,
    words: Vec<u64>,
    aidx: u32,
    /// The buffer's words already handed over.
    peeked: usize,
}

/// Before a program's signal handler: hands the thread's records before the signal over (with
/// earlier handlers' records) and gives it a fresh buffer for the handler's; `None` when the
/// thread records nothing.
pub(crate) fn enter_handler() -> Option<Interrupted> {
    let t = THREAD.with(Cell::get);
    if t >= RETIRED {
        return None;
    }
    let mut st = lock();
    let State::Active(r) = &mut *st else {
        return None;
    };
    let slot = r.threads.get_mut(t as usize).filter(|s| s.alive)?;
    // SAFETY: the slot's TLS variables belong to the calling thread.
    let aidx = unsafe { *slot.aidx };
    // Records before the signal, unless in a handler or with earlier handlers' records
    // waiting: the probe a handler interrupted may not have written its record (an index the
    // optimizer keeps in a register is stored only before the next flush), so everything
    // after it waits for the thread's next hand-off, where the index covers every record.
    if slot.pending.is_empty() && slot.handling == 0 {
        let before = slot.records(aidx as usize);
        if let Err(e) = r.out.chunk(t, &before) {
            stop(&mut st, &e);
            return None;
        }
        slot.peeked = aidx as usize;
    }
    let peeked = std::mem::take(&mut slot.peeked);
    slot.handling += 1;
    let words = std::mem::replace(&mut slot.words, vec![0; AT_BUF_CAP as usize]);
    // SAFETY: as above.
    unsafe {
        *slot.abuf = slot.words.as_mut_ptr();
        *slot.aidx = 0;
    }
    Some(Interrupted {
        t,
        words,
        aidx,
        peeked,
    })
}

/// Ends the recording of accesses after the error `e`.
fn stop(st: &mut State, e: &str) {
    if let State::Active(r) = std::mem::replace(st, State::Over) {
        eprintln!("wpp-rt: {e}; the recording of accesses stops here");
        r.abandon(e);
    }
}

/// After the handler: puts the interrupted buffer back, its records up to the signal marked as
/// handed over, and keeps the handler's records for the thread's next hand-off
/// ([`Slot::records`]).
pub(crate) fn leave_handler(i: Interrupted) {
    let mut st = lock();
    let State::Active(r) = &mut *st else {
        return;
    };
    let Some(slot) = r.threads.get_mut(i.t as usize) else {
        return;
    };
    // SAFETY: the slot's TLS variables belong to the calling thread.
    let len = unsafe { *slot.aidx } as usize;
    let handler = slot.records(len).into_owned();
    slot.words = i.words;
    // SAFETY: as above.
    unsafe {
        *slot.abuf = slot.words.as_mut_ptr();
        *slot.aidx = i.aidx;
    }
    slot.peeked = i.peeked;
    slot.pending.extend_from_slice(&handler);
    slot.handling -= 1;
}

fn lock() -> std::sync::MutexGuard<'static, State> {
    STATE.lock().unwrap_or_else(|e| e.into_inner())
}

fn start(kind: Kind, db: &[u8], modules: &[ReportModule]) -> State {
    let out = match Output::open(kind, db, modules) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("wpp-rt: {e}");
            return State::Over;
        }
    };
    let mut key: libc::pthread_key_t = 0;
    // SAFETY: `key` is a valid out-pointer; the destructor has the required signature.
    unsafe { libc::pthread_key_create(&mut key, Some(thread_exit)) };
    // SAFETY: registering plain extern "C" functions.
    unsafe {
        libc::pthread_atfork(None, None, Some(after_fork_in_child));
    }
    State::Active(Recorder {
        out,
        kind,
        threads: Vec::new(),
        key,
    })
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
    crate::with_signals_blocked(|| unsafe { flush(Kind::Trace, abuf, aidx, db, db_len) })
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
    crate::with_signals_blocked(|| unsafe { flush(Kind::Filter, abuf, aidx, db, db_len) })
}

/// # Safety
/// As [`__wpp_rt_at_flush_v1`].
unsafe fn flush(kind: Kind, abuf: *mut *mut u64, aidx: *mut u32, db: *const u8, db_len: u64) {
    let mut st = lock();
    if let State::Idle = *st {
        // The module table's lock comes first (`dso.rs`).
        drop(st);
        // SAFETY: guaranteed by the caller.
        let flushed = unsafe { std::slice::from_raw_parts(db, db_len as usize) };
        st = crate::dso::start_memory(|merged| {
            let mut st = lock();
            if let State::Idle = *st {
                *st = match &merged {
                    Some(m) => start(kind, &m.db, &m.modules),
                    None => start(kind, flushed, &[]),
                };
            }
            st
        });
    }
    let State::Active(r) = &mut *st else {
        // SAFETY: guaranteed by the caller.
        return unsafe { to_hole(abuf, aidx) };
    };
    let result = match THREAD.with(Cell::get) {
        // SAFETY: guaranteed by the caller.
        UNREGISTERED => unsafe { r.register(abuf, aidx) },
        // SAFETY: as above.
        RETIRED => return unsafe { to_hole(abuf, aidx) },
        t => {
            let slot = &mut r.threads[t as usize];
            // SAFETY: the calling thread's own index and slot.
            let len = unsafe { *aidx } as usize;
            let written = unsafe { r.out.flush(t, slot, len) };
            // SAFETY: as above.
            written.map(|()| unsafe { *aidx = 0 })
        }
    };
    if let Err(e) = result {
        stop(&mut st, &e);
        // SAFETY: guaranteed by the caller.
        unsafe { to_hole(abuf, aidx) };
    }
}

impl Recorder {
    /// Registers the calling thread and gives it a buffer; refuses a second thread in
    /// `ewpp-filter`.
    ///
    /// # Safety
    /// As [`__wpp_rt_at_flush_v1`].
    unsafe fn register(&mut self, abuf: *mut *mut u64, aidx: *mut u32) -> Result<(), String> {
        if let (Kind::Filter, true) = (self.kind, !self.threads.is_empty()) {
            return Err(
                "a second thread accessed memory; the ewpp-filter mode records \
                        single-threaded programs only (its classification follows one \
                        thread's order of accesses; --mode trace-addr records every thread)"
                    .into(),
            );
        }
        let t = self.threads.len() as u32;
        self.out.begin_thread(t)?;
        let mut words = vec![0u64; AT_BUF_CAP as usize];
        // SAFETY: the caller's variables.
        unsafe {
            *abuf = words.as_mut_ptr();
            *aidx = 0;
        }
        self.threads.push(Slot {
            abuf,
            aidx,
            words,
            peeked: 0,
            pending: Vec::new(),
            handling: 0,
            alive: true,
        });
        THREAD.with(|c| c.set(t));
        // SAFETY: the key was created at start; the value is only a non-null tag.
        unsafe { libc::pthread_setspecific(self.key, std::ptr::dangling::<libc::c_void>()) };
        Ok(())
    }

    /// Writes what thread `t`'s buffer holds, and ends the thread when `ending`.
    ///
    /// # Safety
    /// Thread `t`'s TLS must be mapped (its own call, or the best-effort exit path).
    unsafe fn drain(&mut self, t: u32, ending: bool) -> Result<(), String> {
        let slot = &mut self.threads[t as usize];
        if !slot.alive {
            return Ok(());
        }
        // SAFETY: guaranteed by the caller.
        let len = (unsafe { *slot.aidx } as usize).min(slot.words.len());
        slot.alive = !ending;
        let records = slot.records(len).into_owned();
        self.out.chunk(t, &records)?;
        // SAFETY: as above.
        unsafe { *slot.aidx = 0 };
        match ending {
            true => self.out.end_thread(t),
            false => Ok(()),
        }
    }

    /// Copies each live thread's records past its last hand-off to the address trace's
    /// writer (not in `ewpp-filter`, whose report is written at the end). Reading a running
    /// thread's buffer is the benign race of the block trace's `peek` (`lib.rs`): on x86-64 its
    /// stores become visible in program order, the record before the index that covers it.
    ///
    /// A thread in a signal handler, or with handlers' records waiting, hands its records over
    /// itself, once the probe the signal interrupted has written its record ([`Slot::records`]);
    /// but when the process is `dying`, all are taken as they are.
    fn peek_all(&mut self, dying: bool) {
        let Output::Trace(w, _) = &mut self.out else {
            return;
        };
        for (t, slot) in (0u32..).zip(&mut self.threads) {
            let waiting = slot.handling > 0 || !slot.pending.is_empty();
            if !slot.alive || (waiting && !dying) {
                continue;
            }
            // SAFETY: a live thread's TLS index; volatile, since the thread may be running.
            let len = unsafe { std::ptr::read_volatile(slot.aidx) } as usize;
            let len = len.min(slot.words.len());
            if waiting {
                w.copy(t, &slot.records(len));
                slot.peeked = len;
            } else if len > slot.peeked {
                w.copy(t, &slot.words[slot.peeked..len]);
                slot.peeked = len;
            }
        }
    }

    /// Ends the file with `message`. Every buffer is leaked: threads still running may write
    /// into theirs until their next flush finds the recording over.
    fn abandon(mut self, message: &str) {
        let threads = std::mem::take(&mut self.threads);
        std::mem::forget(threads);
        self.out.abandon(message);
    }
}

/// Writes the process's grown memory database `db` (a library registered while the address
/// trace runs): before the library's constructor returns, so ahead of its every access; the
/// chunks other threads write later hold only ids below its range, or its accesses after this.
pub(crate) fn grown(db: &[u8]) {
    let mut st = lock();
    let State::Active(Recorder {
        out: Output::Trace(w, _),
        ..
    }) = &mut *st
    else {
        return;
    };
    w.grown(db);
    if let Some(e) = w.failure() {
        let State::Active(r) = std::mem::replace(&mut *st, State::Over) else {
            unreachable!()
        };
        let e = format!("cannot write the grown memory database: {e}");
        eprintln!("wpp-rt: {e}; the recording of accesses stops here");
        r.abandon(&e);
    }
}

/// Points the calling thread's buffer at the hole.
///
/// # Safety
/// `abuf` and `aidx` must be the calling thread's.
unsafe fn to_hole(abuf: *mut *mut u64, aidx: *mut u32) {
    // SAFETY: guaranteed by the caller.
    unsafe {
        *abuf = HOLE.0.get().cast();
        *aidx = 0;
    }
}

/// pthread key destructor: the thread is ending; its last chunk and end record are written.
extern "C" fn thread_exit(_value: *mut libc::c_void) {
    crate::with_signals_blocked(end_thread);
}

/// Ends the calling thread's address recording ([`thread_exit`]).
fn end_thread() {
    let t = THREAD.with(Cell::get);
    if t >= RETIRED {
        return;
    }
    THREAD.with(|c| c.set(RETIRED));
    let mut st = lock();
    let State::Active(r) = &mut *st else {
        return;
    };
    let (abuf, aidx) = (r.threads[t as usize].abuf, r.threads[t as usize].aidx);
    // SAFETY: the thread's own slot, its TLS still live.
    if let Err(e) = unsafe { r.drain(t, true) } {
        eprintln!("wpp-rt: cannot record the accesses: {e}");
    }
    // Later accesses of this thread (other TLS destructors) go to the hole.
    // SAFETY: own TLS.
    unsafe { to_hole(abuf, aidx) };
}

/// Writes every thread's last buffer and the end record, once: at exit (`wpp_rt_fini`), and
/// from the `_exit` and `exec` wrappers, which end the process image without it.
pub(crate) fn end() {
    let mut st = lock();
    let State::Active(mut r) = std::mem::replace(&mut *st, State::Over) else {
        return;
    };
    let mut result = Ok(());
    for t in 0..r.threads.len() as u32 {
        // SAFETY: live threads' TLS stays mapped while the process exits (best effort for
        // threads still running; see the module docs).
        result = result.and_then(|()| unsafe { r.drain(t, false) });
    }
    // Threads still running write on into their buffers: leaked, never freed under them.
    let threads = std::mem::take(&mut r.threads);
    let me = THREAD.with(Cell::get);
    if let Some(slot) = threads.get(me as usize) {
        // SAFETY: the calling thread's own TLS; its later accesses go to the hole.
        unsafe { to_hole(slot.abuf, slot.aidx) };
    }
    std::mem::forget(threads);
    if let Err(e) = result.and_then(|()| r.out.finish()) {
        eprintln!("wpp-rt: cannot end the recording of accesses: {e}");
    }
}

/// Hands every live thread's records since its last hand-off to the writer, which writes
/// them when its queue runs empty: called by the runtime's flush timer, so that a `kill -9`
/// loses at most the last flush interval's accesses, as for the block trace. The threads keep
/// their buffers and go on appending; their next hand-off starts after what was peeked.
pub(crate) fn flush_all() {
    let mut st = lock();
    if let State::Active(r) = &mut *st {
        r.peek_all(false);
    }
}

/// A fatal signal: hands over what every thread's buffer holds ([`flush_all`]; the dying
/// thread's own is whole, others' best effort) and has the writer write everything handed to
/// it. No end record: the reader reports the truncation. Skipped if the dying thread holds the
/// recorder's lock.
pub(crate) fn on_fatal_signal() {
    let Ok(mut st) = STATE.try_lock() else {
        return;
    };
    if let State::Active(r) = &mut *st {
        r.peek_all(true);
        if let Output::Trace(w, path) = &r.out {
            w.sync(std::time::Duration::from_secs(10));
            crate::say_recorded(path, || {
                format!("the address trace is in {}", path.display())
            });
        }
    }
}

/// A forked child does not write the parent's address trace.
extern "C" fn after_fork_in_child() {
    crate::with_signals_blocked(start_child);
}

/// The child's address recording ([`after_fork_in_child`]).
fn start_child() {
    let mut st = lock();
    let State::Active(r) = std::mem::replace(&mut *st, State::Over) else {
        return;
    };
    let t = THREAD.with(Cell::get);
    let forking = r.threads.get(t as usize).filter(|s| s.alive);
    if let (Kind::Trace, Some(slot)) = (r.kind, forking) {
        // The child records its accesses into a file of its own, started by its next access
        // (its buffer is made to look full): the parent's records in the buffer are the
        // parent's, and bytes written before the fork read as written outside the recording.
        // SAFETY: the forking thread's TLS variables; this handler runs on that thread.
        unsafe {
            *slot.abuf = HOLE.0.get().cast();
            *slot.aidx = AT_BUF_CAP;
        }
        THREAD.with(|c| c.set(UNREGISTERED));
        *st = State::Idle;
    } else if r.kind == Kind::Filter {
        crate::say_child_unrecorded(
            "a filtering report follows one process's memory; --mode trace-addr records each \
             process",
        );
    }
    // Forgotten, the parent's writer neither flushes its buffered bytes nor ends its file (its
    // thread does not exist here), and the buffers stay where the child's code writes.
    std::mem::forget(r);
}
