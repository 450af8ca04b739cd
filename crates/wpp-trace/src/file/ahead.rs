//! Reading on another core: a thread decodes a trace's next batches (decompression, varints,
//! restoring elided blocks and paths, the bounds check) while the caller works on the current
//! one. A reader whose own work per event is about the decoder's (the recovery of an eCF's
//! dependences) then runs at up to twice the speed on two cores.

use super::{TraceError, TraceReader, Truncation};
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

/// A [`TraceReader`] decoding on a thread of its own; see the module docs. Made by
/// [`TraceReader::read_ahead`].
pub struct ReadAhead {
    program: ProgramDb,
    messages: Receiver<Message>,
    /// Emptied batches go back to the decoding thread (no allocation per batch).
    spent: SyncSender<Vec<Event>>,
    current: Vec<Event>,
    /// The next event of `current` the iterator hands out.
    pos: usize,
    decoder: Option<JoinHandle<TraceReader>>,
    /// Where the trace was found truncated (known at the end).
    truncation: Option<Truncation>,
}

impl TraceReader {
    /// This reader, decoding on a thread of its own (see [`ReadAhead`]). Events, errors and
    /// their order are the same.
    pub fn read_ahead(self) -> ReadAhead {
        let program = self.program.clone();
        let (send, messages) = sync_channel(IN_FLIGHT);
        let (spent, recycled) = sync_channel(IN_FLIGHT + 2);
        let decoder = std::thread::Builder::new()
            .name("wpp-read-ahead".into())
            .spawn(move || decode(self, &send, &recycled))
            .expect("a thread can be started");
        ReadAhead {
            program,
            messages,
            spent,
            current: Vec::new(),
            pos: 0,
            decoder: Some(decoder),
            truncation: None,
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

    /// The next run of events, or `None` at the end; as [`TraceReader::next_batch`].
    pub fn next_batch(&mut self) -> Result<Option<&[Event]>, TraceError> {
        let mut done = std::mem::take(&mut self.current);
        done.clear();
        // The decoding thread may be gone (at the end): the batch is then dropped.
        let _ = self.spent.try_send(done);
        match self.messages.recv() {
            Ok(Message::Events(events)) => {
                self.current = events;
                self.pos = self.current.len();
                Ok(Some(&self.current))
            }
            Ok(Message::Failed(e)) => Err(e),
            Err(_) => {
                if let Some(decoder) = self.decoder.take() {
                    match decoder.join() {
                        Ok(reader) => self.truncation = reader.truncation(),
                        Err(panic) => std::panic::resume_unwind(panic),
                    }
                }
                Ok(None)
            }
        }
    }

    /// Where the trace was found truncated, once [`next_batch`](Self::next_batch) returned
    /// `None` (with [`TraceReader::allow_truncated`]).
    pub fn truncation(&self) -> Option<Truncation> {
        self.truncation
    }
}

impl Iterator for ReadAhead {
    type Item = Result<Event, TraceError>;

    /// Event by event, as [`TraceReader`]'s iterator: the events, then an error if there is
    /// one.
    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.pos == self.current.len() {
            match self.next_batch() {
                Ok(Some(_)) => self.pos = 0,
                Ok(None) => return None,
                Err(e) => return Some(Err(e)),
            }
        }
        self.pos += 1;
        Some(Ok(self.current[self.pos - 1]))
    }
}
