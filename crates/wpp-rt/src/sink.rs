//! Where consumed buffers go: always a raw chunked trace, written at the program's speed. With
//! `WPP_RAW=1` it is the recording (`PROGRAM.PID.trace`); by default it is the *spool* of a
//! `.wpp` that [`crate::finisher`] builds from it after the run.
//!
//! The raw sink writes the binary chunked trace of `wpp_trace::file::binary`: the program
//! database in the header, then chunks of events, a `Thread(t)` event wherever the thread
//! differs from the previous buffer's. Encoding, compressing and writing run on a background
//! thread fed through [`crate::handoff::Pipe`] (at most [`RAW_QUEUE_BUFFERS`] buffers queued).
//! When the writer falls behind — the disk, or compression — flushing program threads block
//! until it catches up, so memory stays bounded and nothing is dropped. The writer packs
//! consecutive buffers into one chunk of up to [`CHUNK_TARGET`] bytes but writes whatever it
//! holds, with unbuffered `write(2)`, whenever its queue runs empty and the chunk is `MAX_NAP`
//! = 10 ms old, so a process killed by `SIGKILL` leaves every chunk written so far readable
//! (the reader reports the missing end marker as a truncation); what it loses is the buffers
//! still queued (written within 20 ms when the program is idle) or in thread-local memory
//! (handed over every flush interval by the runtime's timer, which then waits for them with
//! [`Sink::sync`]).
//!
//! # Compression
//!
//! Raw block traces run to gigabytes per second of program time, and writing them is what
//! slowed recording down: the kernel's write-back, not the encoding (issue 4: Lua wrote
//! 3.4 GiB, of 12 s recording 4.7–6.4 s were system time). Each chunk is therefore compressed
//! with zstd before it is written (format 3's per-chunk codec; a chunk that does not shrink is
//! stored plain). `WPP_ZSTD_LEVEL` sets the level: default [`DEFAULT_ZSTD_LEVEL`] (1), `0`
//! stores every chunk plain (the size and speed of format 2), negative levels are zstd's fast
//! levels, levels above zstd's maximum are clamped; a value that is not an integer is reported
//! on stderr and the default used. The zstd context and its output buffer are made once and
//! reused, so compressing allocates nothing per chunk.
//!
//! Level 1 on 300 MB of the real block traces, chunks compressed independently (`zstd -b1
//! -B<size>`): 1 MiB chunks give 61× (Lua), 20× (bzip2), 14.3× (zlib); 256 KiB chunks 59×,
//! 17.5×, 13.7×; 4 MiB no more than 1 % better than 1 MiB. Hence [`CHUNK_TARGET`] = 1 MiB
//! of encoded events: a `SIGKILL` loses at most that, beside the queue.
//!
//! Encoding ([`crate::varint`]) goes into a reused chunk buffer: no allocation per event or per
//! buffer.

use crate::abi::{self, EmbeddedProgram};
use crate::finisher::Plan;
use crate::handoff::{Batch, Inbox, Pipe};
use crate::varint;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use wpp_trace::file::binary::DEFAULT_ZSTD_LEVEL;
use wpp_trace::file::{TraceError, TraceWriter};

/// Buffers queued between the program and the raw trace writer (8 MiB of event words).
pub const RAW_QUEUE_BUFFERS: usize = 64;

/// How long the writer sleeps when its queue is empty, doubling up to [`MAX_NAP`] while it
/// stays empty. The writer polls rather than blocking on the queue because a blocked receiver
/// makes every hand-off a futex wake-up on the *program* thread (measured: ~7 % of Lua's
/// recording time); in 200 µs a program fills at most ~15 buffers, well below
/// [`RAW_QUEUE_BUFFERS`], and an idle program costs the writer 100 wake-ups per second.
const MIN_NAP: std::time::Duration = std::time::Duration::from_micros(200);
/// The longest nap: also the writer's latency for noticing that recording finished.
const MAX_NAP: std::time::Duration = std::time::Duration::from_millis(10);

/// The writer cuts a chunk once its payload reaches this many bytes (or its queue is empty);
/// chosen by measurement (see the module documentation).
pub const CHUNK_TARGET: usize = 1 << 20;

/// The environment variable that sets the raw trace's zstd level (0: store chunks plain).
pub const ZSTD_LEVEL_VAR: &str = "WPP_ZSTD_LEVEL";

/// The writer's chunk buffer: a chunk below [`CHUNK_TARGET`] plus a whole buffer's worst-case
/// encoding (with its `Thread` event) always fits, with the encoder's slack.
const CHUNK_CAPACITY: usize =
    CHUNK_TARGET + (abi::BUF_CAP as usize + 1) * varint::MAX_VARINT + varint::SLACK;

/// Tag of the trace format's `Thread(t)` event (`wpp_trace::file::binary`).
const TAG_THREAD: u64 = 4;

/// Tag bits that no valid event word has set (its tags are 0 ..= `abi::TAG_PATH` = 3).
const BAD_TAG_BITS: u64 = !abi::TAG_PATH & ((1 << abi::TAG_BITS) - 1);

/// The output of a recording: the raw trace writer, and what becomes of its file at the end.
pub struct Sink {
    raw: RawSink,
    /// `None` with `WPP_RAW=1`: the raw trace is the recording.
    plan: Option<Plan>,
}

/// How a recording ends: whether a finisher may run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    /// `exit`, `_exit`, `exec`, the last thread's end: the finisher runs.
    Normal,
    /// A fatal signal: forking or compressing in a signal handler could deadlock on a lock the
    /// interrupted code holds, so the spool is left for `wpp compress`.
    Signal,
}

impl Sink {
    /// Opens the output chosen by the environment (`WPP_RAW=1`: raw trace; else the spool of a
    /// `.wpp`), creating the file now so that an unwritable path is reported when recording
    /// starts.
    pub fn open(program: &EmbeddedProgram) -> Result<Sink, SinkError> {
        let raw = std::env::var("WPP_RAW")
            .map(|v| v != "0" && !v.is_empty())
            .unwrap_or(false);
        if raw {
            let raw = RawSink::open(program, output_path("trace"))?;
            Ok(Sink { raw, plan: None })
        } else {
            let plan = Plan::from_env(output_path("wpp"))?;
            let raw = RawSink::open(program, plan.spool.clone())?;
            Ok(Sink {
                raw,
                plan: Some(plan),
            })
        }
    }

    /// The file being written (the raw trace or the spool).
    pub fn path(&self) -> &Path {
        &self.raw.path
    }

    /// Consumes event words of thread `t`, then `open_frames` `Leave`s marking frames still
    /// open (at exit or thread end).
    pub fn consume(&mut self, t: u32, words: &[u64], open_frames: u32) {
        self.raw.consume(t, words, open_frames);
    }

    /// The program database from here on (a shared library was loaded).
    pub fn program(&mut self, program: wpp_trace::ProgramDb) {
        self.raw.program(program);
    }

    /// Hands thread `t`'s full buffer to the output and returns an empty one (see
    /// [`crate::handoff::Pipe::swap`]).
    pub fn swap(&mut self, t: u32, words: Vec<u64>) -> Vec<u64> {
        if self.raw.checks.is_some() {
            // The buffer's checks go to the writer; the buffer itself is refilled at once.
            self.raw.consume(t, &words, 0);
            return words;
        }
        self.raw.sent += 1;
        self.raw.pipe.swap(t, words, 0)
    }

    /// Waits until everything consumed so far is written to the file; returns the file's
    /// length then.
    pub fn sync(&mut self) -> u64 {
        self.raw.sync()
    }

    /// Finishes the raw trace, then (default mode, [`Ending::Normal`]) runs the finisher;
    /// returns a one-line summary. `verbose` (`WPP_QUIET=0`) lets a detached finisher report
    /// on a terminal.
    pub fn finish(&mut self, ending: Ending, verbose: bool) -> Result<String, SinkError> {
        let destination = self.destination(ending).to_path_buf();
        let written = self.raw.finish(&destination)?;
        match (&self.plan, ending) {
            (None, _) => Ok(written),
            (Some(plan), Ending::Signal) => Ok(format!(
                "{written}; not finished after a fatal signal: run `wpp compress {}`",
                plan.spool.display()
            )),
            (Some(plan), Ending::Normal) => Ok(format!("{written}; {}", plan.run(verbose)?)),
        }
    }

    /// What the runtime's `recorded to` line says of a recording that ends so: where it is,
    /// and for a `.wpp` written later, from what (a detached finisher's comes when a core is
    /// free; after a fatal signal none comes unless asked for).
    pub fn said(&self, ending: Ending) -> String {
        let at = self.destination(ending).display();
        match (&self.plan, ending) {
            (None, _) => at.to_string(),
            (Some(plan), Ending::Signal) => format!(
                "{at} (ended by a signal before its .wpp: `wpp compress {at} -o {} --algorithm \
                 phrase` makes it, as the finisher would have)",
                plan.wpp.display()
            ),
            (Some(plan), Ending::Normal) if plan.mode == crate::finisher::Mode::Detach => {
                format!(
                    "{at} (written in the background from {})",
                    plan.spool.display()
                )
            }
            (Some(_), Ending::Normal) => at.to_string(),
        }
    }

    /// Where a recording that ends so ends up: the `.wpp`, or the raw trace (`WPP_RAW=1`, or
    /// the spool after a fatal signal).
    pub fn destination(&self, ending: Ending) -> &Path {
        match (&self.plan, ending) {
            (Some(plan), Ending::Normal) => &plan.wpp,
            _ => &self.raw.path,
        }
    }
}

/// Errors of the output side.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SinkError {
    /// The output file could not be created.
    #[error("cannot create {path}: {source}")]
    Create {
        /// The path.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// Compressing or writing the `.wpp` failed.
    #[error("writing {path}: {message}")]
    Wpp {
        /// The path.
        path: String,
        /// What failed.
        message: String,
    },
    /// Writing the trace failed.
    #[error("writing {path}: {}", describe(source))]
    Trace {
        /// The path.
        path: String,
        /// The cause.
        source: TraceError,
    },
}

/// A trace error with its OS cause spelled out (`TraceError::Io` alone says only "I/O error";
/// a full disk must say `No space left on device (os error 28)`).
fn describe(e: &TraceError) -> String {
    match e {
        TraceError::Io(io) => format!("I/O error: {io}"),
        e => e.to_string(),
    }
}

/// The raw chunked-trace output: the program side of the writer thread.
pub struct RawSink {
    path: PathBuf,
    pipe: Pipe<Written>,
    /// Batches handed to the writer so far.
    sent: u64,
    /// Written by the writer: every batch up to this count is in the file.
    progress: Arc<Progress>,
    /// `ewpp` mode: the dependence checks that replace the accesses (see [`crate::ewpp`]).
    checks: Option<crate::ewpp::Checks>,
    /// `ewpp` mode: the checks failed, and the writer was told; later words are dropped.
    failed: bool,
    /// `ewpp` mode: the vector the next batch's checks go into (one the writer recycled).
    spare: Vec<u64>,
}

/// How far the writer got, shared with the program side for [`RawSink::sync`].
#[derive(Default)]
struct Progress {
    /// Batches whose events are written to the file.
    flushed: AtomicU64,
    /// The count [`RawSink::sync`] waits for: the writer writes its chunk as soon as it has
    /// taken this many batches, even if more are queued.
    wanted: AtomicU64,
}

/// What the writer thread reports when it is done.
struct Written {
    events: u64,
    bytes: u64,
    /// Encoded event bytes before compression.
    raw_bytes: u64,
    /// Chunks in the file (the end marker's count).
    chunks: u32,
    /// CPU seconds (user + system) of the writer thread: encoding, compressing, writing.
    cpu_seconds: Option<f64>,
    bad_words: u64,
    result: Result<(), TraceError>,
}

/// Set in a child of `fork()` that records: its `WPP_OUT`, if it has no `%p`, gets the pid
/// inserted so that it does not overwrite its parent's file.
pub(crate) static FORKED: AtomicBool = AtomicBool::new(false);

/// `pthread_atfork` child handler of the profiling modes: sets [`FORKED`].
pub(crate) extern "C" fn mark_forked() {
    FORKED.store(true, Ordering::Release);
}

/// The output path: `WPP_OUT` with `%p` replaced by the process id, or `PROGRAM.PID.EXT`. In a
/// forked child, a `WPP_OUT` without `%p` gets `.PID` before its extension (`out.trace` →
/// `out.PID.trace`).
///
/// A path another recording holds is not taken: one a live recording writes (its raw trace,
/// or its spool), and, where the name has the pid, one that exists, or whose spool does (an
/// earlier image of this process, which `exec`ed: the pid is the same). The path then gets
/// `.PID` (a `WPP_OUT` without `%p`: a process `exec`ed by a forked child no longer knows it
/// was forked) or `.N`, the first number free, before its extension. A `WPP_OUT` without `%p`
/// is otherwise rewritten by each run, and by each image of a process that `exec`s itself.
pub fn output_path(extension: &str) -> PathBuf {
    let pid = std::process::id();
    let live = |p: &Path| held(p) || extension == "wpp" && held(&crate::finisher::spool_path(p));
    // A live recording's file or spool exists, so it is taken here too.
    let by_pid = |p: &Path| p.exists() || spool_exists(p, extension);
    let Some(p) = std::env::var_os("WPP_OUT") else {
        let program = std::env::current_exe()
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "program".into());
        return free_path(
            PathBuf::from(format!("{program}.{pid}.{extension}")),
            &by_pid,
        );
    };
    let p = p.to_string_lossy();
    let named = PathBuf::from(p.replace("%p", &pid.to_string()));
    if wpp_trace::output::is_special(&named) || !(FORKED.load(Ordering::Acquire) || live(&named)) {
        return named;
    }
    free_path(with_before_extension(&named, &pid.to_string()), &by_pid)
}

/// Marks `file` as a live recording's output (see [`output_path`]): an advisory lock, which
/// goes when the process closes the file (at exit, or at `exec`: it is close-on-exec). Best
/// effort: where locks are not supported the file is simply not marked.
fn hold(file: &File) {
    use std::os::fd::AsRawFd;
    // SAFETY: `flock` on a descriptor the caller owns changes no memory.
    unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
}

/// Whether a live recording [`hold`]s `path`.
fn held(path: &Path) -> bool {
    use std::os::fd::AsRawFd;
    let Ok(file) = File::open(path) else {
        return false;
    };
    // SAFETY: as in `hold`; a shared lock taken here goes with `file`.
    let locked = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_SH | libc::LOCK_NB) } != 0;
    locked && std::io::Error::last_os_error().raw_os_error() == Some(libc::EWOULDBLOCK)
}

/// Whether `path`, the `.wpp` of a recording (`extension` `wpp`), has its spool on disk.
fn spool_exists(path: &Path, extension: &str) -> bool {
    extension == "wpp" && crate::finisher::spool_path(path).exists()
}

/// `path`, or if `taken`, `path` with `.N` before its extension for the first `N` not taken.
pub(crate) fn free_path(path: PathBuf, taken: &dyn Fn(&Path) -> bool) -> PathBuf {
    if !taken(&path) {
        return path;
    }
    (1u32..)
        .map(|n| with_before_extension(&path, &n.to_string()))
        .find(|p| !taken(p))
        .expect("some number is free")
}

/// `path` with `.INFIX` before its extension (`out.trace` → `out.INFIX.trace`), or after it
/// when it has none.
pub(crate) fn with_before_extension(path: &Path, infix: &str) -> PathBuf {
    match path.extension() {
        Some(ext) => path.with_extension(format!("{infix}.{}", ext.to_string_lossy())),
        None => PathBuf::from(format!("{}.{infix}", path.display())),
    }
}

/// The zstd level `value` of [`ZSTD_LEVEL_VAR`] asks for; [`DEFAULT_ZSTD_LEVEL`] when unset
/// or (reported on stderr) not an integer.
fn zstd_level(value: Option<String>) -> i32 {
    let Some(v) = value else {
        return DEFAULT_ZSTD_LEVEL;
    };
    v.trim().parse().unwrap_or_else(|_| {
        eprintln!(
            "wpp-rt: {ZSTD_LEVEL_VAR}={v:?} is not an integer; using level {DEFAULT_ZSTD_LEVEL}"
        );
        DEFAULT_ZSTD_LEVEL
    })
}

impl RawSink {
    /// Creates the raw trace output for a program (header written) and starts its writer.
    pub fn open(program: &EmbeddedProgram, path: PathBuf) -> Result<RawSink, SinkError> {
        let shown = || path.display().to_string();
        let file = File::create(&path).map_err(|source| SinkError::Create {
            path: shown(),
            source,
        })?;
        hold(&file);
        let out = TraceWriter::new(file, &program.program)
            .and_then(|w| w.with_zstd_level(zstd_level(std::env::var(ZSTD_LEVEL_VAR).ok())))
            .map_err(|source| SinkError::Trace {
                path: shown(),
                source,
            })?;
        let progress = Arc::new(Progress::default());
        let shared = Arc::clone(&progress);
        let pipe = Pipe::start("wpp-trace-writer", RAW_QUEUE_BUFFERS, move |inbox| {
            ChunkWriter::new(out, shared).run(&inbox)
        })
        .map_err(|e| SinkError::Trace {
            path: shown(),
            source: TraceError::Io(e),
        })?;
        Ok(RawSink {
            path,
            pipe,
            sent: 0,
            progress,
            checks: crate::ewpp::Checks::new(program),
            failed: false,
            spare: Vec::new(),
        })
    }

    /// Hands event words of thread `t`, then `open_frames` `Leave`s marking frames still open
    /// (at exit or thread end), to the writer; blocks while [`RAW_QUEUE_BUFFERS`] are queued.
    pub fn consume(&mut self, t: u32, words: &[u64], open_frames: u32) {
        if words.is_empty() && open_frames == 0 || self.failed {
            return;
        }
        let Some(checks) = self.checks.as_mut() else {
            self.sent += 1;
            return self.pipe.send(t, words, open_frames);
        };
        let mut expanded = std::mem::take(&mut self.spare);
        expanded.clear();
        match checks.expand(t, words, open_frames, &mut expanded) {
            // Accesses without a dependence on a program store: nothing to write (and nothing
            // for `sync` to wait for).
            Ok(()) if expanded.is_empty() => self.spare = expanded,
            Ok(()) => {
                self.sent += 1;
                self.spare = self.pipe.swap(t, expanded, 0);
            }
            Err(e) => {
                eprintln!("wpp-rt: the eWPP stops here: {e}");
                // The batches before this one are sound: written, not dropped with the error.
                self.sent += 1;
                self.pipe.send_failure(format!("eWPP collection: {e}"));
                self.failed = true;
            }
        }
    }

    /// Has the writer write `program`, the database from here on, before any later batch.
    pub fn program(&mut self, program: wpp_trace::ProgramDb) {
        self.sent += 1;
        self.pipe.send_program(program);
    }

    /// Waits until the writer has written every batch sent so far; returns the file's length.
    pub fn sync(&mut self) -> u64 {
        self.progress.wanted.store(self.sent, Ordering::Release);
        while self.progress.flushed.load(Ordering::Acquire) < self.sent {
            if self.pipe.worker_ended() {
                break; // it panicked: nothing more will be written
            }
            std::thread::sleep(crate::handoff::FULL_NAP);
        }
        std::fs::metadata(&self.path).map_or(0, |m| m.len())
    }

    /// Waits for the writer to write everything queued and the end marker; returns a one-line
    /// summary. `destination`: the file the recording ends up in (the `.wpp` the finisher
    /// makes of the spool, or this trace), which the note on unexercised dependences names.
    pub fn finish(&mut self, destination: &Path) -> Result<String, SinkError> {
        let path = self.path.display().to_string();
        let Some(w) = self.pipe.finish() else {
            return Ok(format!("{path}: the writer thread did not finish"));
        };
        w.result.map_err(|source| SinkError::Trace {
            path: path.clone(),
            source,
        })?;
        let bad = if w.bad_words > 0 {
            format!(" ({} undecodable words dropped)", w.bad_words)
        } else {
            String::new()
        };
        let checks = self.checks.as_ref().map_or(String::new(), |c| {
            if let Some(note) = c.unexercised_note(destination) {
                eprintln!("wpp-rt: {note}");
            }
            let c = c.stats();
            format!(
                "; {} dependences checked ({} fixed-cost, {} predicted, {} unexpected; {:.2} \
                 comparisons each)",
                c.dependences,
                c.fixed,
                c.predicted,
                c.unexpected,
                c.binary as f64 / c.dependences.max(1) as f64
            )
        });
        let cpu = w
            .cpu_seconds
            .map(|s| format!("; writer thread CPU {s:.2} s"))
            .unwrap_or_default();
        Ok(format!(
            "wrote {} events in {} chunks ({} bytes; {} bytes of events before compression) to \
             {path}{bad}{checks}{cpu}",
            w.events, w.chunks, w.bytes, w.raw_bytes
        ))
    }
}

/// The writer thread's state: the trace file and the chunk being filled.
struct ChunkWriter {
    out: TraceWriter<File>,
    progress: Arc<Progress>,
    /// Batches taken from the queue.
    taken: u64,
    chunk: Box<[u8]>,
    used: usize,
    count: u32,
    last_thread: Option<u32>,
    raw_bytes: u64,
    bad_words: u64,
    error: Option<TraceError>,
    /// When the first events of the chunk being filled came.
    opened: std::time::Instant,
}

impl ChunkWriter {
    fn new(out: TraceWriter<File>, progress: Arc<Progress>) -> ChunkWriter {
        ChunkWriter {
            out,
            progress,
            taken: 0,
            chunk: vec![0; CHUNK_CAPACITY].into_boxed_slice(),
            used: 0,
            count: 0,
            last_thread: None,
            raw_bytes: 0,
            bad_words: 0,
            error: None,
            opened: std::time::Instant::now(),
        }
    }

    /// Encodes and writes batches until the pipe is finished, then writes the end marker.
    fn run(mut self, inbox: &Inbox) -> Written {
        let mut nap = MIN_NAP;
        loop {
            match inbox.try_recv() {
                Ok(Some(batch)) => {
                    nap = MIN_NAP;
                    self.add(&batch);
                    inbox.recycle(batch.words);
                    self.taken += 1;
                    if self.taken == self.progress.wanted.load(Ordering::Acquire) {
                        self.write_chunk();
                    }
                }
                Ok(None) => {
                    // Nothing queued: write what we hold, so that a killed process loses as
                    // little as possible, then nap (see `MIN_NAP`). Not at once: a program
                    // slower than the writer would leave a chunk per buffer, too short for zstd
                    // (an eCF's file grew by 10-70 %).
                    if self.count == 0 || self.chunk_due() {
                        self.write_chunk();
                    }
                    std::thread::sleep(nap);
                    nap = (nap * 2).min(MAX_NAP);
                }
                Err(()) => break,
            }
        }
        self.write_chunk();
        let events = self.out.events();
        let bytes = self.out.bytes_written();
        let chunks = self.out.chunks();
        let result = match self.error.take() {
            Some(e) => Err(e),
            None => self.out.finish().map(drop),
        };
        Written {
            events,
            bytes,
            raw_bytes: self.raw_bytes,
            chunks,
            cpu_seconds: thread_cpu_seconds(),
            bad_words: self.bad_words,
            result,
        }
    }

    fn add(&mut self, b: &Batch) {
        if let Some(program) = &b.program {
            return self.write_program(program);
        }
        if let Some(failure) = &b.failure {
            // What came before is sound: written; nothing after it is.
            self.write_chunk();
            self.error = Some(TraceError::Io(std::io::Error::other(failure.clone())));
            return;
        }
        if self.error.is_none() {
            self.encode(b.thread, &b.words, b.open_frames);
        }
    }

    /// Whether the chunk being filled is to be written although not full: it is [`MAX_NAP`]
    /// old, or [`RawSink::sync`] waits for it.
    fn chunk_due(&self) -> bool {
        self.opened.elapsed() >= MAX_NAP
            || self.progress.wanted.load(Ordering::Acquire)
                > self.progress.flushed.load(Ordering::Relaxed)
    }

    fn encode(&mut self, thread: u32, words: &[u64], open_frames: u32) {
        if self.count == 0 {
            self.opened = std::time::Instant::now();
        }
        if self.last_thread != Some(thread) {
            let word = u64::from(thread) << abi::TAG_BITS | TAG_THREAD;
            self.used += varint::encode(&mut self.chunk[self.used..], &[word]).0;
            self.count += 1;
            self.last_thread = Some(thread);
        }
        for part in words.chunks(abi::BUF_CAP as usize) {
            if self.used >= CHUNK_TARGET {
                self.write_chunk();
            }
            // Valid tags are 0..=3: the OR of the words that `encode` returns finds any other,
            // and then the part is encoded again without them (the bytes past `used` are
            // simply overwritten).
            let (n, or) = varint::encode(&mut self.chunk[self.used..], part);
            if or & BAD_TAG_BITS == 0 {
                self.used += n;
                self.count += part.len() as u32;
            } else {
                self.add_checked(part);
            }
        }
        for _ in 0..open_frames {
            if self.used >= CHUNK_TARGET {
                self.write_chunk();
            }
            self.chunk[self.used] = abi::LEAVE_WORD as u8;
            self.used += 1;
            self.count += 1;
        }
        if self.used >= CHUNK_TARGET {
            self.write_chunk();
        }
    }

    /// Encodes the words with a valid tag one by one and drops the others (never produced by
    /// the instrumentation; dropped rather than misread).
    #[cold]
    fn add_checked(&mut self, words: &[u64]) {
        for &w in words {
            if w & BAD_TAG_BITS == 0 {
                if self.used >= CHUNK_TARGET {
                    self.write_chunk();
                }
                self.used += varint::encode(&mut self.chunk[self.used..], &[w]).0;
                self.count += 1;
            } else {
                self.bad_words += 1;
            }
        }
    }

    /// Writes the chunk being filled, then the program chunk.
    fn write_program(&mut self, program: &wpp_trace::ProgramDb) {
        self.write_chunk();
        if self.error.is_none() {
            if let Err(e) = self.out.write_program(program) {
                self.error = Some(e);
            }
        }
    }

    fn write_chunk(&mut self) {
        if self.count > 0 && self.error.is_none() {
            if let Err(e) = self.out.write_chunk(&self.chunk[..self.used], self.count) {
                self.error = Some(e);
            }
            self.raw_bytes += self.used as u64;
        }
        self.used = 0;
        self.count = 0;
        self.progress.flushed.store(self.taken, Ordering::Release);
    }
}

/// CPU time (user + system) the calling thread has used, in seconds.
#[cfg(target_os = "linux")]
fn thread_cpu_seconds() -> Option<f64> {
    let mut u = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage fills the struct it is given (and a zeroed rusage is valid anyway).
    let u = unsafe {
        if libc::getrusage(libc::RUSAGE_THREAD, u.as_mut_ptr()) != 0 {
            return None;
        }
        u.assume_init()
    };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    Some(secs(u.ru_utime) + secs(u.ru_stime))
}

/// CPU time of the calling thread: not measured here.
#[cfg(not(target_os = "linux"))]
fn thread_cpu_seconds() -> Option<f64> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use wpp_trace::{Event, ThreadId};

    fn word() -> impl Strategy<Value = u64> {
        prop_oneof![
            4 => (0u32..300).prop_map(abi::block_word),
            1 => any::<u32>().prop_map(abi::block_word),
            1 => (0u32..20).prop_map(abi::enter_word),
            1 => (0u64..1 << 61).prop_map(abi::path_word),
            1 => Just(abi::LEAVE_WORD),
            1 => (any::<u32>(), 4u64..8).prop_map(|(p, tag)| u64::from(p) << abi::TAG_BITS | tag),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]
        /// The writer thread's encoding against the format's reader: every batch's valid words
        /// in order, `Thread` events where the thread changes, the open frames' `Leave`s; words
        /// with an invalid tag dropped and counted.
        #[test]
        fn chunk_writer_keeps_valid_words_in_order(
            batches in prop::collection::vec(
                (0u32..3, prop::collection::vec(word(), 0..3000), 0u32..3),
                1..6,
            ),
            level in prop_oneof![Just(0), Just(1)],
        ) {
            let path = std::env::temp_dir().join(format!(
                "wpp-rt-sink-{}-{:?}.trace",
                std::process::id(),
                std::thread::current().id()
            ));
            // `word()` enters functions 0..20: readers check ids against the database.
            let mut db = wpp_trace::ProgramDb::default();
            for i in 0..20 {
                db.intern(&format!("f{i}"));
            }
            let file = File::create(&path).unwrap();
            let out = TraceWriter::new(file, &db).unwrap().with_zstd_level(level).unwrap();
            let mut w = ChunkWriter::new(out, Arc::default());
            let (mut want, mut bad, mut last) = (Vec::new(), 0, None);
            for (thread, words, open_frames) in batches {
                if last != Some(thread) {
                    want.push(Event::Thread(ThreadId(thread)));
                    last = Some(thread);
                }
                want.extend(words.iter().filter_map(|&w| abi::decode_word(w)));
                bad += words.iter().filter(|&&w| abi::decode_word(w).is_none()).count() as u64;
                want.extend((0..open_frames).map(|_| Event::Leave));
                w.add(&Batch {
                    thread,
                    words,
                    open_frames,
                    program: None,
                    failure: None,
                });
            }
            w.write_chunk();
            prop_assert!(w.error.is_none());
            prop_assert_eq!(w.bad_words, bad);
            w.out.finish().unwrap();
            let got = wpp_trace::file::read_events(&path).map(|(_, e)| e);
            std::fs::remove_file(&path).unwrap();
            prop_assert_eq!(got.unwrap(), want);
        }
    }

    /// A program slower than the writer (a buffer every millisecond) still gets chunks of many
    /// buffers: the writer holds a chunk until it is `MAX_NAP` old, or a sync asks for it.
    #[test]
    fn a_slow_program_gets_chunks_of_many_buffers() {
        let path = std::env::temp_dir().join(format!("wpp-rt-slow-{}.trace", std::process::id()));
        let db = wpp_trace::ProgramDb::default();
        let out = TraceWriter::new(File::create(&path).unwrap(), &db).unwrap();
        let progress = Arc::new(Progress::default());
        let shared = Arc::clone(&progress);
        let mut pipe = Pipe::start("test-writer", 4, move |inbox| {
            ChunkWriter::new(out, shared).run(&inbox)
        })
        .unwrap();
        let buffers = 200;
        let start = std::time::Instant::now();
        for i in 0..buffers {
            pipe.send(0, &[abi::block_word(i)], 0);
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let w = pipe.finish().unwrap();
        let ms = start.elapsed().as_millis() as u64;
        std::fs::remove_file(&path).unwrap();
        assert_eq!(
            w.events,
            u64::from(buffers) + 1,
            "every buffer and its thread"
        );
        // Each chunk but the last spans at least `MAX_NAP` (a chunk per buffer before).
        let most = ms / MAX_NAP.as_millis() as u64 + 2;
        assert!(
            u64::from(w.chunks) <= most,
            "{} chunks for {buffers} buffers in {ms} ms",
            w.chunks
        );
    }

    /// `ewpp`: a batch whose accesses depend on no program store (a timer's peek of a store
    /// alone) checks to no words; `sync` must not wait for it to be written.
    #[test]
    fn ewpp_batches_without_checks_do_not_hold_sync() {
        use wpp_deps::{AccessKind, MemInstr, MemoryDb};
        let memory = MemoryDb {
            version: wpp_deps::memdb::MEMORY_DB_VERSION,
            program: Default::default(),
            instructions: vec![MemInstr {
                function: 0,
                block: 0,
                line: 1,
                column: 1,
                file: wpp_deps::memdb::NO_FILE,
                kind: AccessKind::Store,
                what: "store i64".into(),
            }],
            files: Vec::new(),
        };
        let mut program = EmbeddedProgram {
            version: abi::EMBEDDED_VERSION,
            mode: abi::Mode::Ewpp,
            program: wpp_trace::ProgramDb {
                functions: vec![wpp_trace::Function {
                    name: "main".into(),
                    ..Default::default()
                }],
                ..Default::default()
            },
            cfgs: Vec::new(),
            ewpp: Some(abi::EwppTables {
                memory,
                exercised: Default::default(),
                crc: 0,
            }),
        };
        crate::ewpp::attach(&mut program);
        let path = std::env::temp_dir().join(format!("wpp-rt-ecf-{}.trace", std::process::id()));
        let mut sink = RawSink::open(&program, path.clone()).unwrap();
        sink.consume(0, &[abi::enter_word(0), abi::block_word(0)], 0);
        let store = abi::TAG_ACCESS; // instruction 0, the store
        sink.consume(0, &[store, 0x1000, 8], 0);
        let (done, synced) = std::sync::mpsc::channel();
        let waiter = std::thread::spawn(move || {
            sink.sync();
            done.send(()).unwrap();
            sink
        });
        let waited = synced.recv_timeout(std::time::Duration::from_secs(20));
        assert!(waited.is_ok(), "sync waits for a batch that was never sent");
        waiter.join().unwrap().finish(&path).unwrap();
        let events = wpp_trace::file::read_events(&path).map(|(_, e)| e);
        std::fs::remove_file(&path).unwrap();
        assert_eq!(
            events.unwrap().len(),
            3,
            "Thread, Enter and Block: no check"
        );
    }

    #[test]
    fn zstd_level_parses_integers_and_falls_back_to_the_default() {
        assert_eq!(zstd_level(None), DEFAULT_ZSTD_LEVEL);
        assert_eq!(zstd_level(Some("0".into())), 0);
        assert_eq!(zstd_level(Some(" 5 ".into())), 5);
        assert_eq!(zstd_level(Some("-3".into())), -3);
        assert_eq!(zstd_level(Some("fast".into())), DEFAULT_ZSTD_LEVEL);
        assert_eq!(zstd_level(Some(String::new())), DEFAULT_ZSTD_LEVEL);
    }
}
