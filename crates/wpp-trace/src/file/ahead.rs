//! Reading on another core: a thread decodes a trace's next batches (decompression, varints,
//! restoring elided blocks and paths, the bounds check) while the caller works on the current
//! one. A reader whose own work per event is about the decoder's (the recovery of an eCF's
//! dependences) then runs at up to twice the speed on two cores. [`Ahead`] does the same for
//! any iterator (the runs of an address trace).

use super::{Format, TraceError, TraceReader, Truncation};
use crate::{Event, ProgramDb};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;

/// Batches in flight between the decoding thread and the reader: enough to ride out an
/// uneven chunk, few enough that they stay in the caches they were written from.
const IN_FLIGHT: usize = 4;

/// Events a message carries: several of the decoder's batches, so a message costs little
/// beside its events.
const MESSAGE_EVENTS: usize = 16 * super::binary::BATCH_EVENTS;

enum Message {
    Events(Vec<Event>),
    Failed(TraceError),
}

/// Items made on a thread of its own, at most [`IN_FLIGHT`] ahead of their reader, then
/// what the thread returned. A panic on the thread is resumed on the reader's.
pub struct Ahead<T, R = ()> {
    items: Receiver<T>,
    worker: Option<JoinHandle<R>>,
    done: Option<R>,
}

impl<T: Send + 'static, R: Send + 'static> Ahead<T, R> {
    /// Runs `work` on a new thread; it sends its items, and stops when a send fails (the
    /// reader is gone).
    pub fn spawn(work: impl FnOnce(&SyncSender<T>) -> R + Send + 'static) -> Self {
        let (send, items) = sync_channel(IN_FLIGHT);
        let worker = std::thread::Builder::new()
            .name("wpp-read-ahead".into())
            .spawn(move || work(&send))
            .expect("a thread can be started");
        Ahead {
            items,
            worker: Some(worker),
            done: None,
        }
    }

    /// What the thread returned, once every item was read.
    pub fn done(&self) -> Option<&R> {
        self.done.as_ref()
    }
}

impl<T: Send + 'static> Ahead<T> {
    /// `iter`'s items, made on a thread of their own.
    pub fn new(iter: impl Iterator<Item = T> + Send + 'static) -> Self {
        Self::spawn(move |send| {
            for item in iter {
                if send.send(item).is_err() {
                    return;
                }
            }
        })
    }
}

impl<T, R> Iterator for Ahead<T, R> {
    type Item = T;

    fn next(&mut self) -> Option<T> {
        if let Ok(item) = self.items.recv() {
            return Some(item);
        }
        if let Some(worker) = self.worker.take() {
            match worker.join() {
                Ok(done) => self.done = Some(done),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        None
    }
}

/// A [`TraceReader`] decoding on a thread of its own; see the module docs. Made by
/// [`TraceReader::read_ahead`].
pub struct ReadAhead {
    program: ProgramDb,
    format: Format,
    messages: Ahead<Message, TraceReader>,
    /// Emptied batches go back to the decoding thread (no allocation per batch).
    spent: SyncSender<Vec<Event>>,
    current: Vec<Event>,
    /// The next event of `current` the iterator hands out.
    pos: usize,
}

impl TraceReader {
    /// This reader, decoding on a thread of its own (see [`ReadAhead`]). Events, errors and
    /// their order are the same.
    pub fn read_ahead(self) -> ReadAhead {
        let program = self.program.clone();
        let (spent, recycled) = sync_channel(IN_FLIGHT + 2);
        ReadAhead {
            program,
            format: self.format,
            messages: Ahead::spawn(move |send| decode(self, send, &recycled)),
            spent,
            current: Vec::new(),
            pos: 0,
        }
    }
}

/// The decoding thread: batches of `reader` to `send` until the end, an error, or the
/// reader is dropped; returns the reader, which knows where the trace ended.
fn decode(
    mut reader: TraceReader,
    send: &SyncSender<Message>,
    recycled: &Receiver<Vec<Event>>,
) -> TraceReader {
    let mut events = Vec::new();
    loop {
        let more = match reader.next_batch() {
            Ok(Some(batch)) => {
                events.extend_from_slice(batch);
                true
            }
            Ok(None) => false,
            Err(e) => {
                if !events.is_empty() {
                    let _ = send.send(Message::Events(std::mem::take(&mut events)));
                }
                let _ = send.send(Message::Failed(e));
                return reader;
            }
        };
        if events.len() >= MESSAGE_EVENTS || (!more && !events.is_empty()) {
            let next = recycled.try_recv().unwrap_or_default();
            let full = std::mem::replace(&mut events, next);
            if send.send(Message::Events(full)).is_err() {
                return reader;
            }
        }
        if !more {
            return reader;
        }
    }
}

impl ReadAhead {
    /// The recording's program database.
    pub fn program(&self) -> &ProgramDb {
        &self.program
    }

    /// The format of the file.
    pub fn format(&self) -> Format {
        self.format
    }

    /// The next run of events, or `None` at the end; as [`TraceReader::next_batch`].
    pub fn next_batch(&mut self) -> Result<Option<&[Event]>, TraceError> {
        let mut done = std::mem::take(&mut self.current);
        done.clear();
        // The decoding thread may be gone (at the end): the batch is then dropped.
        let _ = self.spent.try_send(done);
        match self.messages.next() {
            Some(Message::Events(events)) => {
                self.current = events;
                self.pos = self.current.len();
                Ok(Some(&self.current))
            }
            Some(Message::Failed(e)) => Err(e),
            None => Ok(None),
        }
    }

    /// Where the trace was found truncated, once [`next_batch`](Self::next_batch) returned
    /// `None` (with [`TraceReader::allow_truncated`]).
    pub fn truncation(&self) -> Option<Truncation> {
        self.messages.done().and_then(TraceReader::truncation)
    }
}

impl Iterator for ReadAhead {
    type Item = Result<Event, TraceError>;

    /// Event by event, as [`TraceReader`]'s iterator: the events, then an error if there is
    /// one.
    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        match self.current.get(self.pos) {
            Some(&e) => {
                self.pos += 1;
                Some(Ok(e))
            }
            None => self.refill(),
        }
    }
}

impl ReadAhead {
    /// The iterator's slow path, apart so that its fast path inlines into the caller's loop.
    #[cold]
    #[inline(never)]
    fn refill(&mut self) -> Option<Result<Event, TraceError>> {
        match self.next_batch() {
            Ok(Some(_)) => self.pos = 0,
            Ok(None) => return None,
            Err(e) => return Some(Err(e)),
        }
        self.next()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_come_in_order_then_what_the_thread_returned() {
        let mut ahead = Ahead::spawn(|send| {
            (0..1000).for_each(|i| send.send(i).unwrap());
            "returned"
        });
        assert_eq!(ahead.done(), None);
        let items: Vec<u32> = ahead.by_ref().collect();
        assert_eq!(items, (0..1000).collect::<Vec<_>>());
        assert_eq!(ahead.done(), Some(&"returned"));
        assert_eq!(ahead.next(), None);
    }

    #[test]
    #[should_panic(expected = "the decoder failed")]
    fn a_panic_on_the_thread_is_resumed_on_the_reader_s() {
        let items = (0..3).map(|i| match i {
            2 => panic!("the decoder failed"),
            i => i,
        });
        Ahead::new(items).for_each(drop);
    }

    #[test]
    fn a_reader_that_stops_early_stops_the_thread() {
        let (ended, end) = std::sync::mpsc::channel();
        let ahead = Ahead::spawn(move |send| {
            let mut i = 0u64;
            while send.send(i).is_ok() {
                i += 1;
            }
            ended.send(()).unwrap();
        });
        let first: Vec<u64> = ahead.take(3).collect();
        assert_eq!(first, [0, 1, 2]);
        // The reader is dropped: the thread's next send fails and it ends (else this waits).
        end.recv().unwrap();
    }
}
