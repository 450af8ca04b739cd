//! `ewpp` mode (Tallam–Gupta §3): the instrumented code appends each memory access to the
//! event buffer among the events, in the order it ran (`wpp_abi`'s "Accesses in the event
//! buffer"), and the trace writer's thread replaces every access by the control flow of its
//! dependence checks ([`wpp_deps::ecf::Collector`]) before encoding. The trace (and the `.wpp`
//! made from it) is the eCF: a block trace whose program database carries the check routine
//! and the memory table, so `wpp deps` recovers every dependence from it alone.
//!
//! The checks run on the writer thread, beside the program, not on it: the program's cost is
//! the buffer append. The last-writer table lives there too (in the runtime's heap, so the
//! program's heap layout is unchanged).
//!
//! One thread is recorded (the instrumenter refuses programs that refer to a thread-starting
//! function; `trace-addr` records every thread); should a second one run instrumented code
//! anyway, or the stream not fit the program, the writer stops with a message naming the
//! problem and the trace ends without its end marker, which every reader reports: never a
//! wrong dependence. A forked child is not recorded in this mode
//! (its checks would need the parent's last-writer table).

use crate::abi::{self, EmbeddedProgram, TAG_ACCESS, TAG_BITS};
use wpp_deps::ecf::{CheckStats, Collector};
use wpp_deps::{Access, MemoryDb};
use wpp_trace::{Event, ThreadId};

/// The writer thread's dependence checks.
pub(crate) struct Checks {
    collector: Collector<'static>,
    /// The words of the current batch with its accesses replaced by checks.
    words: Vec<u64>,
    events: Vec<Event>,
    thread: Option<u32>,
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
            words: Vec::with_capacity(2 * abi::BUF_CAP as usize),
            events: Vec::new(),
            thread: None,
        })
    }

    /// The words of a batch of thread `thread`, then `open_frames` `Leave`s, with every access
    /// replaced by its checks; an error says why the stream cannot be an eCF.
    pub fn expand(
        &mut self,
        thread: u32,
        batch: &[u64],
        open_frames: u32,
    ) -> Result<Vec<u64>, String> {
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
        let mut words = std::mem::take(&mut self.words);
        words.clear();
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
                self.events.clear();
                c.access(a, &mut self.events).map_err(|e| e.to_string())?;
                words.extend(self.events.iter().map(|&e| word(e)));
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
        Ok(words)
    }

    /// Gives back the vector [`expand`](Self::expand) returned, for the next batch.
    pub fn recycle(&mut self, words: Vec<u64>) {
        self.words = words;
    }

    /// The checks so far.
    pub fn stats(&self) -> &CheckStats {
        self.collector.stats()
    }
}

/// The event word of a check's event (the collector makes `Enter`, `Block` and `Leave` only).
fn word(e: Event) -> u64 {
    match e {
        Event::Enter(f) => abi::enter_word(f.0),
        Event::Block(b) => abi::block_word(b.0),
        _ => abi::LEAVE_WORD,
    }
}
