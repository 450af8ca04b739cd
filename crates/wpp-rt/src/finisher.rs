//! The finisher: turns the raw spool a default recording writes into its `.wpp`, after the
//! program's run, without holding the program's exit (issue 15 item 1: the program never waits
//! for the grammar).
//!
//! # Files
//!
//! A default recording's final output is `PROGRAM.PID.wpp` (or `WPP_OUT`); while the program
//! runs, the runtime writes the *spool* next to it, the same path with the extension `.trace`
//! (`PROGRAM.PID.trace`; `WPP_OUT=x.wpp` → `x.trace`; a `WPP_OUT` that already ends in `.trace`
//! gets `.spool.trace`; a `WPP_OUT` that is a device, FIFO or socket, such as `/dev/null`,
//! spools in the temporary directory, where the user can create files; a file already at the
//! spool's path, a killed run's spool or a raw trace, is kept: the spool gets `.1`, `.2`, …
//! before its extension). The spool is an
//! ordinary raw chunked trace ([`crate::sink`]), written at raw-recording speed. At exit the
//! finisher reads it, compresses it with the compressor `WPP_COMPRESS` names (the names of
//! `wpp compress --algorithm`; `phrase` by default, an unknown name is reported when recording
//! starts), writes the `.wpp` under a temporary name
//! (`PROGRAM.PID.wpp.tmp`), renames it into place (so a `.wpp` that exists is whole) and
//! removes the spool. A run that ends without the finisher (`SIGKILL`, a fatal signal, a full
//! disk, a killed finisher) leaves the spool: a readable, possibly truncated, raw trace that
//! `wpp compress PROGRAM.PID.trace` finishes.
//!
//! # How it runs (`WPP_FINISH`)
//!
//! * `detach` (default): the exiting process forks twice; the grandchild starts a new session
//!   (`setsid`), replaces every inherited file descriptor with `/dev/null` (so a pipe to `| cat`
//!   or a test harness sees end-of-file when the program exits, not when the finisher does),
//!   compresses, and ends with `_exit` (the program's `atexit` handlers and stdio buffers are
//!   never run twice). The program's exit waits only for the intermediate child, which exits at
//!   once. The detached finisher reports its summary on stderr only when stderr is a terminal
//!   and `WPP_QUIET=0`.
//!   The detached finisher runs in the `SCHED_IDLE` scheduling class, in an autogroup of
//!   nice 19 (Linux), so it compresses on CPU time no program wants: the programs running
//!   after it — the next processes of a script or a build — are not slowed by it, and its
//!   `.wpp` comes later on a busy machine. Its process is named `wpp-finisher`, so `pkill
//!   PROGRAM` and `killall PROGRAM` leave it alone (`ps` still shows the program's command
//!   line). Until it is done, readers of the `.wpp` say that the raw trace beside it is there.
//! * `wait`: the exiting process compresses before it exits (tests and scripts that read the
//!   `.wpp` right after the program ends).
//!
//! Compression streams the spool through [`TraceCompressor`], the code behind `wpp compress`,
//! so `wpp verify` of the `.wpp` against a raw recording of the same run is exact. It runs on every core
//! ([`THREADS_VAR`], default the available cores): the spool is cut into chunks of
//! [`DEFAULT_CHUNK_EVENTS`](wpp_grammar::parallel::DEFAULT_CHUNK_EVENTS) events compressed in
//! parallel and joined into one grammar ([`wpp_grammar::parallel`]); a recording shorter than
//! one chunk gets the single-threaded grammar. However long the run, the finisher's memory is
//! bounded: every [`SEGMENT_VAR`] events (default [`DEFAULT_SEGMENT_EVENTS`]) the grammar is
//! closed, written to the `.wpp` and freed ([`wpp_grammar::segment`]); every query reads the
//! segments as one run.

use crate::sink::SinkError;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::time::Instant;
use wpp_grammar::file::SegmentWriter;
use wpp_grammar::parallel::Parallelism;
use wpp_grammar::segment::{SegmentedCompressor, DEFAULT_SEGMENT_EVENTS};
use wpp_grammar::{Algorithm, TraceCompressor};

/// The environment variable that chooses the compressor.
pub const COMPRESS_VAR: &str = "WPP_COMPRESS";

/// The environment variable that sets the finisher's compression threads (a positive number;
/// unset or empty: the available cores; `1`: the single-threaded compressor).
pub const THREADS_VAR: &str = "WPP_COMPRESS_THREADS";

/// The environment variable that sets the trace events per segment (a number; `0`: one
/// segment, unbounded; unset or empty: the default).
pub const SEGMENT_VAR: &str = "WPP_SEGMENT_EVENTS";

/// The environment variable that chooses how the finisher runs (`detach` or `wait`).
pub const FINISH_VAR: &str = "WPP_FINISH";

/// The zstd level of the `.wpp`: level 19 (`wpp compress`'s) took ~40% of the phrase
/// compressor's time on a zlib path trace, level 3 a small part of that for a file ~5% larger
/// (`wpp compress --zstd-level` rewrites it).
pub const ZSTD_LEVEL: i32 = 3;

/// The compressor used when [`COMPRESS_VAR`] is unset or empty.
pub const DEFAULT_ALGORITHM: Algorithm = Algorithm::Phrase;

/// How the finisher runs (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// In a detached grandchild process.
    Detach,
    /// In the exiting process, before it exits.
    Wait,
}

/// What the finisher will do at the end of the run: compress `spool` into `wpp`.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The raw trace written while the program runs.
    pub spool: PathBuf,
    /// The finished `.wpp`.
    pub wpp: PathBuf,
    /// The compressor.
    pub algorithm: Algorithm,
    /// Compression threads ([`TraceCompressor::with_threads`]).
    pub threads: usize,
    /// Events per chunk when `threads > 1`.
    pub chunk_events: usize,
    /// Trace events per segment (0: one segment).
    pub segment_events: u64,
    /// Detached or synchronous.
    pub mode: Mode,
}

impl Plan {
    /// The plan for a recording whose `.wpp` is `wpp`, from the environment; an unknown
    /// compressor or finisher mode is an error.
    pub fn from_env(wpp: PathBuf) -> Result<Plan, SinkError> {
        let error = |message| SinkError::Wpp {
            path: wpp.display().to_string(),
            message,
        };
        let algorithm = match std::env::var(COMPRESS_VAR) {
            Ok(v) if !v.is_empty() => v
                .parse()
                .map_err(|e| error(format!("{COMPRESS_VAR}={v}: {e}")))?,
            _ => DEFAULT_ALGORITHM,
        };
        let threads = match std::env::var(THREADS_VAR) {
            Ok(v) if !v.is_empty() => match v.parse::<usize>() {
                Ok(n) if n > 0 => n,
                _ => {
                    return Err(error(format!(
                        "{THREADS_VAR}={v}: expected a positive number of threads"
                    )))
                }
            },
            _ => std::thread::available_parallelism().map_or(1, |n| n.get()),
        };
        let segment_events = match std::env::var(SEGMENT_VAR) {
            Ok(v) if !v.is_empty() => v.parse::<u64>().map_err(|_| {
                error(format!(
                    "{SEGMENT_VAR}={v}: expected a number of events (0: one segment)"
                ))
            })?,
            _ => DEFAULT_SEGMENT_EVENTS,
        };
        let mode = match std::env::var(FINISH_VAR).as_deref() {
            Ok("wait") => Mode::Wait,
            Ok("detach") | Ok("") | Err(_) => Mode::Detach,
            Ok(other) => {
                return Err(error(format!(
                    "{FINISH_VAR}={other}: expected `detach` or `wait`"
                )))
            }
        };
        // A file where the spool goes is a killed run's only copy, or a raw trace of the
        // user's (`WPP_OUT=x.trace WPP_RAW=1`, then `WPP_OUT=x.wpp`): kept, the spool goes aside.
        let spool = crate::sink::free_path(spool_path(&wpp), &|p| p.exists());
        Ok(Plan {
            spool,
            wpp,
            algorithm,
            threads,
            chunk_events: wpp_grammar::parallel::DEFAULT_CHUNK_EVENTS,
            segment_events,
            mode,
        })
    }

    /// Runs the finisher as [`Plan::mode`] says; returns a one-line summary for the exiting
    /// process (the detached finisher's own summary goes to a terminal only).
    pub fn run(&self, verbose: bool) -> Result<String, SinkError> {
        let stays = |e: String| SinkError::Wpp {
            path: self.wpp.display().to_string(),
            message: format!("{e}; the raw trace stays in {}", self.spool.display()),
        };
        match self.mode {
            Mode::Wait => self.compress().map_err(|e| stays(e.to_string())),
            Mode::Detach => match self.detach(verbose) {
                Ok(()) => Ok(format!(
                    "{} will be finished from {} in the background",
                    self.wpp.display(),
                    self.spool.display()
                )),
                Err(e) => Err(stays(format!(
                    "cannot start the finisher ({e}); run `wpp compress` on it"
                ))),
            },
        }
    }

    /// Compresses the spool into the `.wpp` (temporary name, then rename) and removes the
    /// spool; returns a summary.
    pub fn compress(&self) -> Result<String, SinkError> {
        let t0 = Instant::now();
        let shown = self.wpp.display().to_string();
        let error = |message: String| SinkError::Wpp {
            path: shown.clone(),
            message,
        };
        let spool_bytes = std::fs::metadata(&self.spool).map(|m| m.len()).unwrap_or(0);
        let mut reader = wpp_paths::trace::open(&self.spool)
            .map_err(|e| error(format!("cannot read {}: {e}", self.spool.display())))?
            .allow_truncated(true);
        let program = reader.program().clone();
        let how = Parallelism {
            chunk_events: self.chunk_events,
            ..Parallelism::threads(self.threads)
        };
        let c = TraceCompressor::with_threads(self.algorithm, None, program, how)
            .map_err(|e| error(e.to_string()))?;
        let tmp = wpp_trace::output::staging_path(&self.wpp, ".tmp");
        let out = std::fs::File::create(&tmp)
            .map_err(|e| error(format!("cannot create {}: {e}", tmp.display())))?;
        let writer = SegmentWriter::new(BufWriter::new(out), &tmp, ZSTD_LEVEL, 1);
        let mut c = SegmentedCompressor::new(c, self.segment_events, writer);
        while let Some(run) = reader
            .next_batch()
            .map_err(|e| error(format!("cannot read {}: {e}", self.spool.display())))?
        {
            c.push_batch(run).map_err(|e| error(e.to_string()))?;
        }
        let truncated = reader.truncation().is_some();
        drop(reader);
        let (events, threads) = (c.compressor().events(), c.compressor().num_threads());
        let finished = c.finish().map_err(|e| error(e.to_string()))?;
        let algorithm = finished.file.algorithm;
        let (_, written) = finished.write().map_err(|e| error(e.to_string()))?;
        wpp_trace::output::replace(&tmp, &self.wpp)
            .map_err(|e| error(format!("cannot move {} there: {e}", tmp.display())))?;
        let _ = std::fs::remove_file(&self.spool);
        Ok(format!(
            "compressed {events} events ({spool_bytes} spool bytes{}) with {algorithm} into {} \
             rules, {} symbols, {threads} threads{}: {shown}, {:.3} s after exit",
            if truncated { ", truncated" } else { "" },
            written.rules,
            written.symbols,
            match written.segments {
                1 => String::new(),
                n => format!(", {n} segments"),
            },
            t0.elapsed().as_secs_f64()
        ))
    }

    /// Forks the detached finisher (see the module docs); returns once the intermediate
    /// child has exited.
    fn detach(&self, verbose: bool) -> std::io::Result<()> {
        // SAFETY: the child only makes system calls (`setsid`, `open`, `write`, `close`,
        // `fork`, `sched_setscheduler`, `_exit`); the grandchild runs Rust code, safe after
        // `fork` because the runtime's heap lock is held across it (see [`crate::heap`]) and
        // the runtime's own fork handlers do nothing once recording is over.
        match unsafe { libc::fork() } {
            -1 => Err(std::io::Error::last_os_error()),
            0 => {
                // SAFETY: see above.
                unsafe {
                    libc::setsid();
                    // Both before this child exits, and so before the program does: no
                    // finisher competes with its program at normal priority.
                    lowest_autogroup_priority();
                    match libc::fork() {
                        0 => self.in_grandchild(verbose),
                        -1 => crate::raw_exit(1),
                        grandchild => {
                            yield_to_programs(grandchild);
                            crate::raw_exit(0)
                        }
                    }
                }
            }
            child => {
                let mut status = 0;
                // SAFETY: waiting for our own child.
                unsafe { libc::waitpid(child, &mut status, 0) };
                Ok(())
            }
        }
    }

    /// The detached finisher's body: drop every inherited descriptor, compress, `_exit`.
    fn in_grandchild(&self, verbose: bool) -> ! {
        // SAFETY: querying descriptor 2.
        let keep_stderr = verbose && unsafe { libc::isatty(2) } == 1;
        // SAFETY: naming this thread, and plain descriptor calls on this process's own table.
        unsafe {
            // `ps -e`, `pkill` and `killall` tell it from the program it finishes.
            libc::prctl(libc::PR_SET_NAME, c"wpp-finisher".as_ptr());
            let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
            for fd in 0..=2 {
                if !(fd == 2 && keep_stderr) {
                    libc::dup2(null, fd);
                }
            }
            libc::close_range(3, u32::MAX, 0);
        }
        let code = match self.compress() {
            Ok(s) => {
                if keep_stderr {
                    eprintln!("wpp-rt finisher: {s}");
                }
                0
            }
            Err(e) => {
                if keep_stderr {
                    eprintln!("wpp-rt finisher: {e}");
                }
                1
            }
        };
        crate::raw_exit(code)
    }
}

/// Puts the detached finisher (and the compression threads it starts, which inherit it) in
/// the `SCHED_IDLE` class: within its scheduling group it then runs only on CPU time no other
/// task wants (see [`lowest_autogroup_priority`] for the group itself), so the programs that
/// run after its own, the next processes of a script or a build, do not wait for a grammar.
/// Best effort: where the class is refused the finisher runs at normal priority.
fn yield_to_programs(finisher: libc::pid_t) {
    #[cfg(target_os = "linux")]
    {
        let param = libc::sched_param { sched_priority: 0 };
        // SAFETY: changes the scheduling class of our own child; `param` outlives the call.
        unsafe { libc::sched_setscheduler(finisher, libc::SCHED_IDLE, &param) };
    }
    #[cfg(not(target_os = "linux"))]
    let _ = finisher;
}

/// Gives the calling process's *autogroup* — the scheduling group Linux makes of each session
/// when `kernel.sched_autogroup_enabled` is on — the lowest priority (nice 19). The finisher
/// starts a session of its own, so it is in a group of its own, and groups share the CPU
/// fairly whatever the classes of their tasks: without this, `SCHED_IDLE` changed nothing
/// (bzip2's six processes in a row: 6.3 s against 2.3 s raw, finishers at ~50 % CPU each).
/// Writing `/proc/self/autogroup` uses only system calls, as code between `fork` and `exec`
/// of a threaded program must. Best effort: without autogroups the file is absent.
fn lowest_autogroup_priority() {
    #[cfg(target_os = "linux")]
    // SAFETY: plain system calls on a path and buffer that outlive them.
    unsafe {
        let fd = libc::open(c"/proc/self/autogroup".as_ptr(), libc::O_WRONLY);
        if fd >= 0 {
            libc::write(fd, b"19".as_ptr().cast(), 2);
            libc::close(fd);
        }
    }
}

/// The spool of a recording whose `.wpp` is `wpp` (see the module docs).
pub fn spool_path(wpp: &Path) -> PathBuf {
    if wpp_trace::output::is_special(wpp) {
        return wpp_trace::output::staging_path(wpp, ".spool.trace");
    }
    let spool = wpp.with_extension("trace");
    if spool == wpp {
        wpp.with_extension("spool.trace")
    } else {
        spool
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wpp_trace::file::TraceWriter;
    use wpp_trace::{Event, FunctionId, ProgramDb, ThreadId};

    /// Two threads' interleaved events (balanced per thread).
    fn events() -> Vec<Event> {
        let mut e = Vec::new();
        for round in 0..50u32 {
            for t in 0..2 {
                e.push(Event::Thread(ThreadId(t)));
                e.push(Event::Enter(FunctionId(round % 3)));
                e.push(Event::Block(wpp_trace::BlockId(round % 7)));
                e.push(Event::Leave);
            }
        }
        e
    }

    /// The finisher turns a spool (whole, or cut short before its end marker as a kill leaves
    /// it) into a `.wpp` that expands to exactly the spool's events, thread by thread (the
    /// oracle: splitting the events by thread directly), on one thread and on two (chunks of 7
    /// events joined); the spool and the temporary file are gone afterwards.
    #[test]
    fn compress_round_trips_whole_and_truncated_spools() {
        let dir = tempfile::tempdir().unwrap();
        let mut db = ProgramDb::default();
        for name in ["f", "g", "h"] {
            db.intern(name);
        }
        let cases = [(true, 1, 0), (false, 1, 0), (true, 2, 0), (false, 2, 0)];
        // Segments of 33 events (and of 33 cut into chunks of 7): many segments, cut inside
        // the spool's batches.
        let segmented = [(true, 1, 33), (false, 2, 33)];
        for (whole, threads, segment_events) in cases.into_iter().chain(segmented) {
            let plan = Plan {
                spool: dir.path().join("p.trace"),
                wpp: dir.path().join("p.wpp"),
                algorithm: DEFAULT_ALGORITHM,
                threads,
                chunk_events: 7,
                segment_events,
                mode: Mode::Wait,
            };
            let mut w = TraceWriter::new(std::fs::File::create(&plan.spool).unwrap(), &db).unwrap();
            for e in events() {
                w.push(e).unwrap();
            }
            if whole {
                w.finish().unwrap();
            } else {
                w.flush_chunk().unwrap(); // no end marker
            }
            let summary = plan.compress().unwrap();
            assert!(summary.contains("400 events"), "{summary}");
            assert_eq!(summary.contains("truncated"), !whole, "{summary}");
            assert_eq!(
                summary.contains("13 segments"),
                segment_events == 33,
                "{summary}"
            );
            assert!(!plan.spool.exists() && !dir.path().join("p.wpp.tmp").exists());
            let file = wpp_grammar::file::WppFile::read(&plan.wpp).unwrap();
            let want = wpp_trace::file::threads::split_threads(&events());
            for s in file.grammar.starts() {
                let mut ts = Vec::new();
                wpp_grammar::expand::expand_into(&file.grammar, s.rule, &mut ts);
                let got: Vec<Event> = ts
                    .iter()
                    .map(|&t| file.alphabet.event(t).unwrap())
                    .collect();
                assert_eq!(got, want[&s.thread], "thread {:?}", s.thread);
            }
            assert_eq!(file.grammar.starts().len(), 2);
            let segments = wpp_grammar::file::read_segments(&plan.wpp).unwrap();
            assert_eq!(segments.len(), if segment_events == 33 { 13 } else { 0 });
        }
    }

    #[test]
    fn spool_names() {
        assert_eq!(
            spool_path(Path::new("a/p.12.wpp")),
            Path::new("a/p.12.trace")
        );
        assert_eq!(spool_path(Path::new("out")), Path::new("out.trace"));
        assert_eq!(spool_path(Path::new("x.trace")), Path::new("x.spool.trace"));
        // Not `/dev/null.trace`, which only root may create (and then leaves in /dev).
        let device = spool_path(Path::new("/dev/null"));
        assert!(device.starts_with(std::env::temp_dir()), "{device:?}");
    }

    /// A file where the spool would go (a killed run's spool, a raw trace) is not overwritten:
    /// the spool goes aside, the `.wpp` keeps its name.
    #[test]
    fn a_file_at_the_spools_path_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        for taken in ["x.trace", "x.1.trace"] {
            std::fs::write(dir.path().join(taken), b"a killed run's spool").unwrap();
        }
        let plan = Plan::from_env(dir.path().join("x.wpp")).unwrap();
        assert_eq!(plan.wpp, dir.path().join("x.wpp"));
        assert_eq!(plan.spool, dir.path().join("x.2.trace"));
    }
}
