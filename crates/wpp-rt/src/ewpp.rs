//! `ewpp` mode (Tallam–Gupta §3): the instrumented code appends each memory access to the
//! event buffer among the events, in the order it ran (`wpp_abi`'s "Accesses in the event
//! buffer"), and the sink replaces every access by the control flow of its dependence checks
//! ([`wpp_deps::ecf::Collector`]) before handing the buffer to the trace writer. The trace (and
//! the `.wpp` made from it) is the eCF: a block trace whose program database carries the check
//! routine and the memory table, so `wpp deps` recovers every dependence from it alone.
//!
//! The checks run on the thread that hands a buffer over (the program's own thread when its
//! buffer is full; the flush timer's, or the exiting thread's, for partial buffers), under
//! the sink's lock, which keeps them in the order of the buffers. The trace writer encodes
//! and compresses the eCF on the other core meanwhile: a pipeline of two stages (when the
//! writer thread did both, the program waited for it: 1.35–1.57× the wall time;
//! BENCHMARKS.md). The last-writer table lives in the runtime's heap, so the program's heap
//! layout is unchanged.
//!
//! One thread is recorded (the instrumenter refuses programs that refer to a thread-starting
//! function; `trace-addr` records every thread); should a second one run instrumented code
//! anyway, or the stream not fit the program, the checks stop with a message naming the
//! problem, the writer writes the buffers before it and ends the trace without its end
//! marker, which every reader reports: never a wrong dependence. A forked child is not
//! recorded in this mode (its checks would need the parent's last-writer table).

use crate::abi::{self, EmbeddedProgram, TAG_ACCESS, TAG_BITS};
use wpp_deps::ecf::{CheckEvents, CheckStats, Collector};
use wpp_deps::{Access, MemoryDb};
use wpp_trace::{Event, FunctionId, ThreadId};

/// The dependence checks of the recording, kept by the sink (under its lock).
pub(crate) struct Checks {
    collector: Collector<'static>,
    thread: Option<u32>,
    /// Whether the build's filtering-run report (`--wpp-exercised`) exercised any pair; a build
    /// without one embeds an empty report (every dependence unexpected, by design).
    reported: bool,
}

/// Makes the program database an eWPP's (see [`wpp_deps::ecf::attach`]); a no-op in other
/// modes.
pub(crate) fn attach(program: &mut EmbeddedProgram) {
    if let Some(t) = &program.ewpp {
        wpp_deps::ecf::attach(&mut program.program, &t.memory);
    }
}

impl Checks {
    /// The checks of an `ewpp` program whose database [`attach`] made an eWPP's, `None` in
    /// other modes.
    pub fn new(program: &EmbeddedProgram) -> Option<Checks> {
        let t = program.ewpp.as_ref()?;
        // The memory database as every reader of the eWPP gets it back.
        let db = wpp_deps::ecf::memory_db(&program.program).ok().flatten()?;
        // Lives as long as the process: the writer thread's collector borrows it.
        let db: &'static MemoryDb = Box::leak(Box::new(db));
        Some(Checks {
            collector: Collector::new(db, &t.exercised),
            thread: None,
            reported: !t.exercised.pairs.is_empty(),
        })
    }

    /// Appends to `words` the words of a batch of thread `thread`, then `open_frames`
    /// `Leave`s, with every access replaced by its checks; an error says why the stream cannot
    /// be an eCF.
    pub fn expand(
        &mut self,
        thread: u32,
        batch: &[u64],
        open_frames: u32,
        words: &mut Vec<u64>,
    ) -> Result<(), String> {
        let c = &mut self.collector;
        match self.thread {
            Some(first) if first != thread => {
                return Err(format!(
                    "a second thread (thread {thread}) ran instrumented code; the ewpp mode \
                     records single-threaded programs only (its checks follow one thread's \
                     order of accesses; --mode trace-addr records every thread)"
                ))
            }
            Some(_) => {}
            None => {
                self.thread = Some(thread);
                c.event(Event::Thread(ThreadId(thread)))
                    .map_err(|e| e.to_string())?;
            }
        }
        let mut i = 0;
        while i < batch.len() {
            let w = batch[i];
            if w & ((1 << TAG_BITS) - 1) == TAG_ACCESS {
                let (Some(&addr), Some(&size)) = (batch.get(i + 1), batch.get(i + 2)) else {
                    return Err("an access record cut short".into());
                };
                let a = Access {
                    id: (w >> TAG_BITS) as u32,
                    addr,
                    size,
                };
                c.access(a, &mut Words(words)).map_err(|e| e.to_string())?;
                i += 3;
                continue;
            }
            let e = abi::decode_word(w).ok_or_else(|| format!("an undecodable word {w:#x}"))?;
            c.event(e).map_err(|e| e.to_string())?;
            words.push(w);
            i += 1;
        }
        for _ in 0..open_frames {
            c.event(Event::Leave).map_err(|e| e.to_string())?;
            words.push(abi::LEAVE_WORD);
        }
        Ok(())
    }

    /// The checks so far.
    pub fn stats(&self) -> &CheckStats {
        self.collector.stats()
    }

    /// The note on the dependences no filtering run exercised, which `file` (the recording
    /// as it will be left) marks unexpected; `None` when there are none.
    pub fn unexercised_note(&self, file: &std::path::Path) -> Option<String> {
        let c = self.stats();
        let file = file.display();
        match (c.unexpected, self.reported) {
            (0, _) => None,
            (n, true) => Some(format!(
                "{n} of {} dependences were not exercised by the filtering run \
                 (--wpp-exercised): recorded, marked unexpected in {file}",
                c.dependences
            )),
            (n, false) => Some(format!(
                "{n} dependences recorded, each marked unexpected in {file}: the program was \
                 built without a filtering run's report (--wpp-exercised) naming any"
            )),
        }
    }
}

/// The event words of checks, appended to a batch's.
struct Words<'a>(&'a mut Vec<u64>);

impl CheckEvents for Words<'_> {
    fn enter(&mut self, check: FunctionId) {
        self.0.push(abi::enter_word(check.0));
    }
    fn block(&mut self, b: u32) {
        self.0.push(abi::block_word(b));
    }
    fn leave(&mut self) {
        self.0.push(abi::LEAVE_WORD);
    }
}
