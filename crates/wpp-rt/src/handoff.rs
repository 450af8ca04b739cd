//! The hand-off of full thread buffers to a background thread, shared by the raw sink
//! ([`crate::sink::RawSink`]: encodes and writes the trace) and the online sink
//! ([`crate::online::OnlineSink`]: SEQUITUR).
//!
//! A flushing program thread copies its thread-local buffer into a pooled `Vec<u64>` (taken from
//! a free list that the worker refills; a memory copy of 8 bytes per event, far cheaper than
//! encoding or compressing it) and sends it over a bounded channel. The worker does the slow
//! part on the machine's other core while the program goes on. After warm-up nothing is
//! allocated per buffer: at most `depth + 2` vectors ever exist.
//!
//! # When the worker falls behind
//!
//! The channel holds `depth` buffers. When the program produces events faster than the worker
//! consumes them, a flushing thread *blocks* in [`Pipe::send`] until the worker has taken a
//! buffer: the program then runs at the worker's pace, memory stays bounded, and no event is
//! dropped.

use std::sync::mpsc::{self, Receiver, Sender, SyncSender, TryRecvError};
use std::thread::JoinHandle;

/// One consumed thread buffer.
pub struct Batch {
    /// The program thread the events belong to.
    pub thread: u32,
    /// Its event words (see [`crate::abi`]).
    pub words: Vec<u64>,
    /// `Leave`s to append after the words, marking frames still open (at exit or thread end).
    pub open_frames: u32,
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
        let worker = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || work(inbox))?;
        Ok(Pipe {
            tx: Some(tx),
            free,
            worker: Some(worker),
        })
    }

    /// Hands a copy of `words` (and `open_frames` `Leave`s) of thread `t` to the worker,
    /// blocking while `depth` batches are queued.
    pub fn send(&mut self, t: u32, words: &[u64], open_frames: u32) {
        if words.is_empty() && open_frames == 0 {
            return;
        }
        let Some(tx) = &self.tx else { return };
        let mut v = self.free.try_recv().unwrap_or_default();
        v.clear();
        v.extend_from_slice(words);
        let _ = tx.send(Batch {
            thread: t,
            words: v,
            open_frames,
        });
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
