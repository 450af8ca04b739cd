//! Per-thread views of a trace.
//!
//! A trace interleaves the events of its threads; `Thread(t)` says that the following events
//! belong to thread `t` (Larus §2's EnterThread). Events before any `Thread` event belong to
//! thread 0, and `Thread` events themselves belong to no thread's stream. Grammars are built
//! per thread, so two traces are *equal* when their per-thread projections are equal
//! ([`same_per_thread`]): how the threads were interleaved, and switches to a thread that then
//! emits nothing, are not part of a trace's meaning.

use crate::event::Event;
use crate::ids::ThreadId;
use std::collections::BTreeMap;

/// Routes a stream of events to threads, one event at a time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ThreadDemux {
    current: ThreadId,
}

impl ThreadDemux {
    /// A demultiplexer whose current thread is 0.
    pub fn new() -> Self {
        Self::default()
    }

    /// The thread the next non-`Thread` event belongs to.
    pub fn current(&self) -> ThreadId {
        self.current
    }

    /// The thread `event` belongs to, or `None` for a `Thread` event (which switches the
    /// current thread).
    #[inline]
    pub fn route(&mut self, event: Event) -> Option<ThreadId> {
        match event {
            Event::Thread(t) => {
                self.current = t;
                None
            }
            _ => Some(self.current),
        }
    }
}

/// Splits a trace into per-thread streams; threads that emit no events are absent.
pub fn split_threads(events: &[Event]) -> BTreeMap<ThreadId, Vec<Event>> {
    let mut demux = ThreadDemux::new();
    let mut out: BTreeMap<ThreadId, Vec<Event>> = BTreeMap::new();
    for &e in events {
        if let Some(t) = demux.route(e) {
            out.entry(t).or_default().push(e);
        }
    }
    out
}

/// Whether two traces have the same per-thread projections.
pub fn same_per_thread(a: &[Event], b: &[Event]) -> bool {
    split_threads(a) == split_threads(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::BlockId;

    fn b(i: u32) -> Event {
        Event::Block(BlockId(i))
    }
    fn t(i: u32) -> Event {
        Event::Thread(ThreadId(i))
    }

    #[test]
    fn events_before_any_switch_belong_to_thread_zero() {
        let s = split_threads(&[b(1), t(2), b(2), t(0), b(3), t(5)]);
        assert_eq!(s.len(), 2);
        assert_eq!(s[&ThreadId(0)], [b(1), b(3)]);
        assert_eq!(s[&ThreadId(2)], [b(2)]);
    }

    #[test]
    fn interleaving_does_not_matter_but_order_within_a_thread_does() {
        let a = [t(0), b(1), t(1), b(7), t(0), b(2)];
        let same = [b(1), b(2), t(1), b(7)];
        let swapped = [b(2), b(1), t(1), b(7)];
        assert!(same_per_thread(&a, &same));
        assert!(!same_per_thread(&a, &swapped));
        assert!(!same_per_thread(&a, &[b(1), b(2)]));
    }
}
