//! Restoring elided block events (issue 15, item 4): a recording leaves out the events of
//! blocks its CFG implies, and names them in the program database
//! ([`Function::implied_next`](crate::program::Function::implied_next)); every reader puts
//! them back here, right after the event of the block that implies them, so no consumer ever
//! sees an elided trace.
//!
//! Block ids are local to the function running, so restoring follows each thread's call
//! stack (function ids), switched by `Thread` events. The database's table is acyclic (checked
//! when it is read), so every chain of implied blocks ends; a chain longer than what is left
//! of an output batch is continued in the next one, so memory stays bounded by the batch
//! whatever the chains. Nothing is allocated per event.

use super::TraceError;
use crate::event::Event;
use crate::ids::BlockId;
use crate::program::ProgramDb;
use rustc_hash::FxHashMap;

/// What a [`TraceReader`](super::TraceReader) runs the recorded events through before handing
/// them out: events a recording left out or wrote in a shorter form are put back, batch by
/// batch, in bounded memory. The reader fills [`recorded`](Self::recorded), then calls
/// [`restore`](Self::restore) until nothing is [`pending`](Self::pending).
pub trait Restore: Send {
    /// The buffer the next recorded events go to, emptied; called when nothing is pending.
    fn recorded(&mut self) -> &mut Vec<Event>;
    /// Whether events are waiting to be handed out.
    fn pending(&self) -> bool;
    /// Drops whatever is waiting (the reader stopped at an error).
    fn stop(&mut self);
    /// Events handed out so far minus events recorded, so a truncation's event count can be
    /// given in the events readers see.
    fn added(&self) -> i64;
    /// Appends the waiting events in trace order to `out` until it holds `cap` events; an
    /// error ends the trace after the events already appended.
    fn restore(&mut self, out: &mut Vec<Event>, cap: usize) -> Result<(), TraceError>;
}

/// No implied block, in [`Restorer::implied`].
const NONE: u32 = u32::MAX;

/// The restoring state of one trace reader.
pub(crate) struct Restorer {
    /// Every function's blocks' implied blocks back to back ([`NONE`]: none), function `f`'s
    /// at `starts[f] .. starts[f + 1]`: one flat table, so a block event costs one lookup.
    implied: Vec<u32>,
    starts: Vec<usize>,
    /// Per function: whether its `Enter` implies its entry block, block 0.
    entry_implied: Vec<bool>,
    /// The running function's part of `implied` (empty outside any frame).
    current: std::ops::Range<usize>,
    /// Open frames (function ids) of the current thread.
    stack: Vec<u32>,
    /// Open frames of the other threads.
    parked: FxHashMap<u32, Vec<u32>>,
    thread: u32,
    /// Recorded events not yet handed out, from `recorded[next]` on.
    recorded: Vec<Event>,
    next: usize,
    /// The implied block to hand out next, in the running function.
    chain: Option<u32>,
    /// Events put back so far.
    restored: u64,
}

impl Restorer {
    /// Takes the implied-block table out of `db`; `None` when the recording elided nothing.
    pub(crate) fn take(db: &mut ProgramDb) -> Option<Self> {
        if !db.has_implied_blocks() {
            return None;
        }
        let mut implied = Vec::new();
        let mut starts = vec![0];
        let mut entry_implied = Vec::with_capacity(db.functions.len());
        for f in &mut db.functions {
            entry_implied.push(std::mem::take(&mut f.entry_implied));
            let table = std::mem::take(&mut f.implied_next);
            implied.extend(table.iter().map(|n| n.unwrap_or(NONE)));
            starts.push(implied.len());
        }
        Some(Restorer {
            implied,
            starts,
            entry_implied,
            current: 0..0,
            stack: Vec::new(),
            parked: FxHashMap::default(),
            thread: 0,
            recorded: Vec::new(),
            next: 0,
            chain: None,
            restored: 0,
        })
    }
}

impl Restore for Restorer {
    fn recorded(&mut self) -> &mut Vec<Event> {
        self.recorded.clear();
        self.next = 0;
        &mut self.recorded
    }

    fn pending(&self) -> bool {
        self.chain.is_some() || self.next < self.recorded.len()
    }

    fn stop(&mut self) {
        self.chain = None;
        self.next = self.recorded.len();
    }

    fn added(&self) -> i64 {
        self.restored as i64
    }

    /// Recorded events are copied in runs, up to one that starts a chain.
    fn restore(&mut self, out: &mut Vec<Event>, cap: usize) -> Result<(), TraceError> {
        while out.len() < cap {
            if let Some(b) = self.chain {
                out.push(Event::Block(BlockId(b)));
                self.restored += 1;
                self.chain = self.implied_by(b);
                continue;
            }
            let start = self.next;
            let end = self.recorded.len().min(start + (cap - out.len()));
            if start == end {
                break;
            }
            while self.next < end && self.chain.is_none() {
                let e = self.recorded[self.next];
                self.next += 1;
                self.track(e);
            }
            out.extend_from_slice(&self.recorded[start..self.next]);
        }
        Ok(())
    }
}

impl Restorer {
    /// The block implied by block `b` of the running function, if any.
    #[inline]
    fn implied_by(&self, b: u32) -> Option<u32> {
        let at = self.current.start + b as usize;
        if at < self.current.end && self.implied[at] != NONE {
            Some(self.implied[at])
        } else {
            None
        }
    }

    /// Follows the call stacks through `e`, starting a chain after a block that implies one.
    #[inline]
    fn track(&mut self, e: Event) {
        match e {
            Event::Block(b) => self.chain = self.implied_by(b.0),
            Event::Enter(f) => {
                self.stack.push(f.0);
                self.enter_top();
                if self.entry_implied.get(f.0 as usize) == Some(&true) {
                    self.chain = Some(0);
                }
            }
            Event::Leave => {
                self.stack.pop();
                self.enter_top();
            }
            Event::Path(_) => {}
            // A switch to the running thread changes nothing.
            Event::Thread(t) if t.0 == self.thread => {}
            Event::Thread(t) => {
                let next = self.parked.remove(&t.0).unwrap_or_default();
                let current = std::mem::replace(&mut self.stack, next);
                self.parked.insert(self.thread, current);
                self.thread = t.0;
                self.enter_top();
            }
        }
    }

    /// Makes the innermost open frame's function the running one.
    fn enter_top(&mut self) {
        self.current = match self.stack.last() {
            Some(&f) if (f as usize) + 1 < self.starts.len() => {
                self.starts[f as usize]..self.starts[f as usize + 1]
            }
            _ => 0..0,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::{FunctionId, ThreadId};
    use crate::program::Function;

    fn db(tables: &[&[Option<u32>]]) -> ProgramDb {
        ProgramDb {
            functions: tables
                .iter()
                .enumerate()
                .map(|(i, t)| Function {
                    name: format!("f{i}"),
                    implied_next: t.to_vec(),
                    ..Function::default()
                })
                .collect(),
            ..ProgramDb::default()
        }
    }

    fn restore_all(r: &mut Restorer, recorded: &[Event], cap: usize) -> Vec<Event> {
        r.recorded().extend_from_slice(recorded);
        let mut all = Vec::new();
        while r.pending() {
            let mut out = Vec::new();
            r.restore(&mut out, cap).unwrap();
            assert!(!out.is_empty() && out.len() <= cap);
            all.extend(out);
        }
        all
    }

    const F0: Event = Event::Enter(FunctionId(0));
    const F1: Event = Event::Enter(FunctionId(1));
    fn b(i: u32) -> Event {
        Event::Block(BlockId(i))
    }

    #[test]
    fn chains_are_restored_in_their_function_and_thread() {
        // f0: 0 → 1 → 2 implied; f1: 1 → 0 implied.
        let mut d = db(&[&[Some(1), Some(2)], &[None, Some(0)]]);
        let mut r = Restorer::take(&mut d).unwrap();
        assert!(!d.has_implied_blocks());
        let t = |i| Event::Thread(ThreadId(i));
        let recorded = [
            F0,
            b(0),
            t(1),
            F1,
            b(1),
            t(0),
            F1,
            b(1),
            Event::Leave,
            t(1),
            b(2),
            Event::Leave,
        ];
        let want = [
            F0,
            b(0),
            b(1),
            b(2),
            t(1),
            F1,
            b(1),
            b(0),
            t(0),
            F1,
            b(1),
            b(0),
            Event::Leave,
            t(1),
            b(2),
            Event::Leave,
        ];
        for cap in 1..=want.len() {
            let mut r2 = Restorer::take(&mut db(&[&[Some(1), Some(2)], &[None, Some(0)]])).unwrap();
            assert_eq!(restore_all(&mut r2, &recorded, cap), want, "cap {cap}");
        }
        assert_eq!(restore_all(&mut r, &recorded, 4096), want);
        assert_eq!(r.added(), 4);
    }

    #[test]
    fn blocks_outside_any_frame_or_table_restore_nothing() {
        let mut r = Restorer::take(&mut db(&[&[Some(1)]])).unwrap();
        let recorded = [b(0), F0, b(7), b(0), Event::Leave, Event::Leave, b(0)];
        let want = [b(0), F0, b(7), b(0), b(1), Event::Leave, Event::Leave, b(0)];
        assert_eq!(restore_all(&mut r, &recorded, 3), want);
    }

    #[test]
    fn an_enter_implies_its_entry_block_and_its_chain() {
        let mut d = db(&[&[Some(1), None], &[]]);
        d.functions[0].entry_implied = true;
        d.functions[1].entry_implied = true;
        let mut r = Restorer::take(&mut d).unwrap();
        assert!(!d.has_implied_blocks());
        let recorded = [F0, F1, Event::Leave, b(0), Event::Leave];
        let want = [
            F0,
            b(0),
            b(1),
            F1,
            b(0),
            Event::Leave,
            b(0),
            b(1),
            Event::Leave,
        ];
        assert_eq!(restore_all(&mut r, &recorded, 2), want);
    }

    #[test]
    fn nothing_elided_means_no_restorer() {
        assert!(Restorer::take(&mut db(&[&[], &[]])).is_none());
    }
}
