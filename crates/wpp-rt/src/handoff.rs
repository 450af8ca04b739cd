//! The hand-off of full thread buffers to a background thread: the raw sink's writer
//! ([`crate::sink::RawSink`]: encodes and writes the trace or spool).
//!
//! A flushing program thread sends its full buffer, a `Vec<u64>`, over a bounded channel and
//! continues with an empty one from a free list that the worker refills ([`Pipe::swap`]: no
//! copy, which at 10^9 events per second matters); only the exit paths copy ([`Pipe::send`]).
//! The worker does the slow part on the machine's other core while the program goes on. After
//! warm-up nothing is allocated per buffer.
//!
//! # When the worker falls behind
//!
//! The channel holds `depth` buffers. When the program produces events faster than the worker
//! consumes them, a flushing thread *waits* in [`Pipe::send`] until the worker has taken a
//! buffer: the program then runs at the worker's pace, memory stays bounded, and no event is
//! dropped. It waits by polling every [`FULL_NAP`] rather than in a blocking `send`: the first
//! time a thread blocks in a std channel, std allocates the thread's handle and a TLS
//! destructor with the *program's* `malloc` (not the runtime's [`crate::heap`]), at a moment
//! that depends on timing, which would move the program's heap blocks. A nap costs no
//! throughput: the worker still has the other queued buffers to work through.

use std::sync::mpsc::{self, Receiver, Sender, SyncSender, TryRecvError, TrySendError};
use std::time::Duration;

/// How long a program thread sleeps between attempts to queue a buffer when the queue is full.
pub const FULL_NAP: Duration = Duration::from_micros(50);
use std::thread::JoinHandle;

/// One consumed thread buffer.
pub struct Batch {
    /// The program thread the events belong to.
    pub thread: u32,
    /// Its event words (see [`crate::abi`]).
    pub words: Vec<u64>,
    /// `Leave`s to append after the words, marking frames still open (at exit or thread end).
    pub open_frames: u32,
    /// The program database from here on, when a shared library was loaded (no words then).
    pub program: Option<Box<wpp_trace::ProgramDb>>,
    /// Why the recording cannot go on (no words then): the worker writes what it holds and
    /// ends the output with this error.
    pub failure: Option<String>,
}

/// The worker's end of a [`Pipe`].
pub struct Inbox {
    rx: Receiver<Batch>,
    free: Sender<Vec<u64>>,
}

impl Inbox {
    /// The next batch, waiting for one; `None` once the pipe is finished and drained.
    pub fn recv(&self) -> Option<Batch> {
        self.rx.recv().ok()
    }

    /// The next batch if one is queued: `Ok(None)` when none is (the program is running ahead
    /// of nothing: a good moment to write), `Err(())` once the pipe is finished and drained.
    #[allow(clippy::result_unit_err)]
    pub fn try_recv(&self) -> Result<Option<Batch>, ()> {
        match self.rx.try_recv() {
            Ok(b) => Ok(Some(b)),
            Err(TryRecvError::Empty) => Ok(None),
            Err(TryRecvError::Disconnected) => Err(()),
        }
    }

    /// Returns a batch's vector to the program side's free list.
    pub fn recycle(&self, words: Vec<u64>) {
        let _ = self.free.send(words);
    }
}

/// The program's end: a bounded queue of batches to a worker thread that returns `R`.
pub struct Pipe<R> {
    tx: Option<SyncSender<Batch>>,
    free: Receiver<Vec<u64>>,
    worker: Option<JoinHandle<R>>,
}

impl<R: Send + 'static> Pipe<R> {
    /// Starts the worker thread `name` running `work`, with at most `depth` batches queued.
    pub fn start(
        name: &str,
        depth: usize,
        work: impl FnOnce(Inbox) -> R + Send + 'static,
    ) -> std::io::Result<Pipe<R>> {
        let (tx, rx) = mpsc::sync_channel::<Batch>(depth);
        let (free_tx, free) = mpsc::channel::<Vec<u64>>();
        let inbox = Inbox { rx, free: free_tx };
        let worker = crate::with_signals_blocked(|| {
            std::thread::Builder::new()
                .name(name.into())
                .spawn(move || work(inbox))
        })?;
        Ok(Pipe {
            tx: Some(tx),
            free,
            worker: Some(worker),
        })
    }

    /// Hands a copy of `words` (and `open_frames` `Leave`s) of thread `t` to the worker,
    /// waiting while `depth` batches are queued.
    pub fn send(&mut self, t: u32, words: &[u64], open_frames: u32) {
        if words.is_empty() && open_frames == 0 {
            return;
        }
        let mut v = self.free.try_recv().unwrap_or_default();
        v.clear();
        v.extend_from_slice(words);
        self.swap(t, v, open_frames);
    }

    /// Hands `words` of thread `t` to the worker (waiting while `depth` batches are queued)
    /// and returns a vector (stale contents) for the next buffer: a recycled one when the worker has
    /// returned any, else a new one (so at most `depth + 2` plus one per thread ever exist).
    pub fn swap(&mut self, t: u32, words: Vec<u64>, open_frames: u32) -> Vec<u64> {
        if !words.is_empty() || open_frames > 0 {
            self.queue(Batch {
                thread: t,
                words,
                open_frames,
                program: None,
                failure: None,
            });
        }
        // Not cleared: the caller overwrites it, and refilling a cleared vector would cost as
        // much as the copy that swapping avoids.
        self.free.try_recv().unwrap_or_default()
    }

    /// Hands the worker the program database from here on (see [`Batch::program`]).
    pub fn send_program(&mut self, program: wpp_trace::ProgramDb) {
        self.queue(Batch {
            thread: 0,
            words: Vec::new(),
            open_frames: 0,
            program: Some(Box::new(program)),
            failure: None,
        });
    }

    /// Hands the worker the reason the recording cannot go on (see [`Batch::failure`]).
    pub fn send_failure(&mut self, message: String) {
        self.queue(Batch {
            thread: 0,
            words: Vec::new(),
            open_frames: 0,
            program: None,
            failure: Some(message),
        });
    }

    /// Queues a batch, waiting while `depth` batches are queued.
    fn queue(&mut self, mut batch: Batch) {
        let Some(tx) = &self.tx else { return };
        while let Err(TrySendError::Full(b)) = tx.try_send(batch) {
            batch = b;
            std::thread::sleep(FULL_NAP);
        }
    }

    /// Whether the worker has ended (returned or panicked) or was joined.
    pub fn worker_ended(&self) -> bool {
        self.worker.as_ref().is_none_or(|w| w.is_finished())
    }

    /// Closes the queue and waits for the worker to drain it; `None` if it panicked, was
    /// already joined, or is the calling thread (a fatal signal in the worker itself).
    pub fn finish(&mut self) -> Option<R> {
        drop(self.tx.take());
        let worker = self.worker.take()?;
        if worker.thread().id() == std::thread::current().id() {
            return None;
        }
        worker.join().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Batches reach the worker in order and intact, through both the copying and the
    /// swapping path, with a queue small enough that the sender blocks; empty batches are
    /// not sent.
    #[test]
    fn batches_arrive_in_order() {
        let mut pipe = Pipe::start("test-worker", 2, |inbox| {
            let mut got = Vec::new();
            while let Some(b) = inbox.recv() {
                got.push((b.thread, b.words.clone(), b.open_frames));
                inbox.recycle(b.words);
            }
            got
        })
        .unwrap();
        let mut expected = Vec::new();
        for i in 0..100u64 {
            let words: Vec<u64> = (0..i % 7).map(|k| i * 100 + k).collect();
            let t = (i % 3) as u32;
            if i % 2 == 0 {
                pipe.send(t, &words, (i % 4) as u32);
                if !words.is_empty() || i % 4 > 0 {
                    expected.push((t, words, (i % 4) as u32));
                }
            } else {
                let _stale = pipe.swap(t, words.clone(), 0);
                if !words.is_empty() {
                    expected.push((t, words, 0));
                }
            }
        }
        assert_eq!(pipe.finish(), Some(expected));
        assert_eq!(pipe.finish(), None, "already finished");
    }
}
