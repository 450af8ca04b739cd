//! Per-function block bounds (issue 14): a block id must lie inside the CFG of the function it
//! runs in, the innermost open frame of its thread. [`super::IdLimits`] bounds every id by the
//! largest CFG while an event is decoded; this check needs the call stacks, so it runs over
//! each decoded batch instead of in the decoder's hot loop (one more pass over events already
//! in cache). It applies when every function has a CFG, as [`super::IdLimits::blocks`] does.

use super::TraceError;
use crate::event::Event;
use crate::program::ProgramDb;
use rustc_hash::FxHashMap;

/// The call stacks of a trace's threads and the block count of every function.
pub(crate) struct BlockBounds {
    /// Blocks of each function, by id.
    blocks: Vec<u32>,
    /// Open frames per thread (function ids); a thread's stack exists once it has events.
    stacks: FxHashMap<u32, Vec<u32>>,
    thread: u32,
    /// Events checked so far (the position reported in errors).
    events: u64,
}

impl BlockBounds {
    /// The bounds of `db`, or `None` when some function has no CFG (its blocks are unknown).
    pub(crate) fn of(db: &ProgramDb) -> Option<Self> {
        let blocks: Option<Vec<u32>> = db
            .functions
            .iter()
            .map(|f| f.cfg.as_ref().map(|c| c.successors.len() as u32))
            .collect();
        Some(BlockBounds {
            blocks: blocks.filter(|b| !b.is_empty())?,
            stacks: FxHashMap::default(),
            thread: 0,
            events: 0,
        })
    }

    /// Checks `batch`, the events after those already checked; on a block outside its
    /// function, the index in `batch` of that event and the error.
    pub(crate) fn check(&mut self, batch: &[Event]) -> Result<(), (usize, TraceError)> {
        let mut stack = self.stacks.remove(&self.thread).unwrap_or_default();
        let mut result = Ok(());
        for (i, &e) in batch.iter().enumerate() {
            match e {
                Event::Enter(f) => stack.push(f.0),
                Event::Leave => {
                    stack.pop();
                }
                Event::Block(b) => {
                    let Some(&f) = stack.last() else { continue };
                    let limit = self.blocks[f as usize];
                    if b.0 >= limit {
                        let reason = format!(
                            "block id {b} is out of range: function {f} has {limit} blocks"
                        );
                        let event = self.events + i as u64;
                        let thread = self.thread;
                        result = Err((
                            i,
                            TraceError::OutOfFunction {
                                event,
                                thread,
                                reason,
                            },
                        ));
                        break;
                    }
                }
                Event::Path(_) => {}
                // A switch to the running thread changes nothing (its stack is not parked).
                Event::Thread(t) if t.0 == self.thread => {}
                Event::Thread(t) => {
                    let next = self.stacks.remove(&t.0).unwrap_or_default();
                    self.stacks
                        .insert(self.thread, std::mem::replace(&mut stack, next));
                    self.thread = t.0;
                }
            }
        }
        self.stacks.insert(self.thread, stack);
        self.events += batch.len() as u64;
        result
    }
}
