//! The address trace's writer thread: program threads hand it their full buffers, and it
//! encodes, deflates and writes them as chunks of the `wpp_deps::at` file on another core.
//! Deflating on the program's own threads was 59 % of a `trace-addr` run's time
//! (BENCHMARKS.md, "Memory dependences: the checks where buffers are handed over; the address
//! trace's writer thread").
//!
//! A flushing thread swaps its full buffer for an empty one (no copy) and goes on. When the
//! queue's [`QUEUE`] buffers are taken, the writer is behind: rather than wait, the flushing
//! thread codes its buffer itself ([`ChunkCoder`]) and queues the coded chunk, which the
//! writer only has to write, so both cores compress (it waits, polling, only if the queue is
//! still full then: as [`crate::handoff`] explains, a program thread must not block in a std
//! channel). Jobs are done in the order they were queued, so a thread's chunks, its begin and
//! end records and a grown memory database keep the order the recorder gave them. The writer
//! flushes its file whenever its queue runs empty. An error (a full disk) stops the writing;
//! the recorder learns of it at its next flush ([`Writer::failure`]) and ends the file with
//! it.
//!
//! The thread is started with the runtime ([`super::prepare`], at the program's first event),
//! not when the address trace starts: starting a thread allocates from the program's `malloc`
//! (glibc's TLS vector), which at a buffer's first flush would move the program's heap blocks
//! (`deps_heap.c`'s test), as the runtime's other threads' starts at the first event do not.

use super::{AtWriter, ChunkCoder, CodedChunk};
use crate::abi::AT_BUF_CAP;
use crate::handoff::FULL_NAP;
use std::fs::File;
use std::io::BufWriter;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, Sender, SyncSender, TryRecvError, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Buffers queued between the program's threads and the writer (256 KiB each).
const QUEUE: usize = 16;

type Out = AtWriter<BufWriter<File>>;

enum Job {
    /// The file to write, header written: the first job.
    Open(Box<Out>),
    Begin {
        thread: u32,
        first_seq: u64,
    },
    Chunk {
        thread: u32,
        words: Vec<u64>,
    },
    Coded(CodedChunk),
    End(u32),
    Grown(Vec<u8>),
    Abandon(String),
}

/// The program's side of the writer thread.
pub(super) struct Writer {
    jobs: Option<SyncSender<Job>>,
    /// Buffers the writer is done with, for the next swap.
    free: Receiver<Vec<u64>>,
    failure: Arc<Mutex<Option<String>>>,
    worker: Option<JoinHandle<Result<(), String>>>,
    /// Jobs queued so far, and those the writer has done (see [`sync`](Self::sync)).
    queued: u64,
    done: Arc<AtomicU64>,
    /// Codes a buffer when the writer is behind (the recorder's lock serializes flushes).
    coder: ChunkCoder,
}

impl Writer {
    /// Starts the writer thread, which waits for its file ([`open`](Self::open)).
    pub fn spawn() -> std::io::Result<Writer> {
        let (jobs, inbox) = mpsc::sync_channel(QUEUE);
        let (recycle, free) = mpsc::channel();
        let failure = Arc::new(Mutex::new(None));
        let shared = Arc::clone(&failure);
        let done = Arc::new(AtomicU64::new(0));
        let progress = Arc::clone(&done);
        let worker = crate::with_signals_blocked(|| {
            std::thread::Builder::new()
                .name("wpp-at-writer".into())
                .spawn(move || run(&inbox, &recycle, &shared, &progress))
        })?;
        Ok(Writer {
            jobs: Some(jobs),
            free,
            failure,
            worker: Some(worker),
            queued: 0,
            done,
            coder: ChunkCoder::default(),
        })
    }

    /// Gives the writer its file, whose header is written.
    pub fn open(&mut self, out: Out) {
        self.queue(Job::Open(Box::new(out)));
    }

    /// Why the writer stopped writing, if it did.
    pub fn failure(&self) -> Option<String> {
        lock(&self.failure).clone()
    }

    /// Thread `thread` begins; it takes no sequence number below `first_seq`.
    pub fn begin_thread(&mut self, thread: u32, first_seq: u64) {
        self.queue(Job::Begin { thread, first_seq });
    }

    /// Hands over thread `thread`'s full buffer (its first `len` words are records) and
    /// returns an empty one of [`AT_BUF_CAP`] words.
    pub fn swap(&mut self, thread: u32, mut words: Vec<u64>, len: usize) -> Vec<u64> {
        words.truncate(len);
        let Some(jobs) = &self.jobs else {
            return with_len(words); // the writer is gone: nothing is written any more
        };
        match jobs.try_send(Job::Chunk { thread, words }) {
            Ok(()) => self.queued += 1,
            Err(TrySendError::Disconnected(_)) => {}
            Err(TrySendError::Full(Job::Chunk { words, .. })) => return self.code(thread, words),
            Err(TrySendError::Full(_)) => unreachable!("the job sent is a chunk"),
        }
        with_len(self.free.try_recv().unwrap_or_default())
    }

    /// Codes the records `words` of thread `thread` here and queues the chunk; returns the
    /// buffer, emptied.
    fn code(&mut self, thread: u32, words: Vec<u64>) -> Vec<u64> {
        match self.coder.code(thread, super::records(&words)) {
            Ok(Some(c)) => self.queue(Job::Coded(c)),
            Ok(None) => {}
            Err(e) => *lock(&self.failure) = Some(e.to_string()),
        }
        with_len(words)
    }

    /// Hands over a copy of `words`, records of thread `thread` (its buffer stays its own:
    /// at exit, a thread still running may write on into it).
    pub fn copy(&mut self, thread: u32, words: &[u64]) {
        let mut v = self.free.try_recv().unwrap_or_default();
        v.clear();
        v.extend_from_slice(words);
        self.queue(Job::Chunk { thread, words: v });
    }

    /// Thread `thread` ended.
    pub fn end_thread(&mut self, thread: u32) {
        self.queue(Job::End(thread));
    }

    /// The process's grown memory database (see `super::grown`).
    pub fn grown(&mut self, db: &[u8]) {
        self.queue(Job::Grown(db.to_vec()));
    }

    /// Waits for every queued job and the end record; the first error, if any.
    pub fn finish(mut self) -> Result<(), String> {
        drop(self.jobs.take());
        self.join()
    }

    /// Ends the file with `message` instead of an end record, after what is queued.
    pub fn abandon(mut self, message: &str) {
        self.queue(Job::Abandon(message.into()));
        drop(self.jobs.take());
        drop(self.join());
    }

    /// Waits until the writer has done every job queued so far, at most `limit` (a fatal
    /// signal: the buffers handed over are written before the process dies, unless the
    /// writer is stuck, say on a lock the dying thread holds).
    pub fn sync(&self, limit: Duration) {
        let start = Instant::now();
        while self.done.load(Ordering::Acquire) < self.queued
            && start.elapsed() < limit
            && self.worker.as_ref().is_some_and(|w| !w.is_finished())
        {
            std::thread::sleep(FULL_NAP);
        }
    }

    fn queue(&mut self, mut job: Job) {
        let Some(jobs) = &self.jobs else { return };
        loop {
            match jobs.try_send(job) {
                Ok(()) => return self.queued += 1,
                Err(TrySendError::Full(j)) => job = j,
                Err(TrySendError::Disconnected(_)) => return,
            }
            std::thread::sleep(FULL_NAP);
        }
    }

    fn join(&mut self) -> Result<(), String> {
        let Some(worker) = self.worker.take() else {
            return Err("the writer was already joined".into());
        };
        if worker.thread().id() == std::thread::current().id() {
            return Err("the writer itself is ending".into());
        }
        worker
            .join()
            .unwrap_or_else(|_| Err("the writer thread panicked".into()))
    }
}

/// The writer thread: does the jobs in order until the program side closes the queue.
fn run(
    inbox: &Receiver<Job>,
    recycle: &Sender<Vec<u64>>,
    failure: &Mutex<Option<String>>,
    done: &AtomicU64,
) -> Result<(), String> {
    let Ok(Job::Open(mut out)) = inbox.recv() else {
        return Ok(()); // never given a file: the program did not access memory
    };
    done.fetch_add(1, Ordering::Release);
    let failed = || lock(failure).is_some();
    let fail = |e: std::io::Error| *lock(failure) = Some(e.to_string());
    // Jobs done since the file was last flushed: counted as done once it is.
    let mut unflushed = 0;
    loop {
        let job = match inbox.try_recv() {
            Ok(job) => job,
            Err(TryRecvError::Empty) => {
                // Idle: what was written reaches the file (for a kill, or a fatal signal's
                // `sync`), then wait for more.
                if let Err(e) = out.flush() {
                    fail(e);
                }
                done.fetch_add(unflushed, Ordering::Release);
                unflushed = 0;
                match inbox.recv() {
                    Ok(job) => job,
                    Err(_) => break,
                }
            }
            Err(TryRecvError::Disconnected) => break,
        };
        let result = match job {
            Job::Abandon(message) => {
                return out.abandon(&message).map(drop).map_err(|e| e.to_string());
            }
            Job::Chunk { words, .. } if failed() => {
                drop(recycle.send(words));
                Ok(())
            }
            _ if failed() => Ok(()),
            Job::Begin { thread, first_seq } => out.begin_thread(thread, first_seq),
            Job::Chunk { thread, words } => {
                let written = out.thread_chunk(thread, super::records(&words)).map(drop);
                drop(recycle.send(words));
                written
            }
            Job::Coded(c) => out.write_coded(&c),
            Job::End(thread) => out.end_thread(thread),
            Job::Grown(db) => out.grown_db(&db),
            Job::Open(_) => Ok(()), // only the first job opens
        };
        if let Err(e) = result {
            fail(e);
        }
        unflushed += 1;
    }
    let error = lock(failure).clone();
    match error {
        Some(e) => {
            drop(out.abandon(&e));
            Err(e)
        }
        None => out.finish().map(drop).map_err(|e| e.to_string()),
    }
}

/// `v` as an empty buffer: [`AT_BUF_CAP`] words (stale contents, which the thread overwrites).
fn with_len(mut v: Vec<u64>) -> Vec<u64> {
    v.resize(AT_BUF_CAP as usize, 0);
    v
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::AT_RECORD_WORDS;
    use wpp_deps::at::{Access, AtReader};

    /// Two threads' buffers, handed over whole, coded by the flushing side (as when the
    /// writer is behind) and copied, make one file that holds every access, each thread's in
    /// order, with its begin and end records.
    #[test]
    fn buffers_coded_on_either_side_make_one_exact_file() {
        let path = std::env::temp_dir().join(format!("wpp-at-writer-{}.at", std::process::id()));
        let db = wpp_deps::MemoryDb {
            version: wpp_deps::memdb::MEMORY_DB_VERSION,
            ..Default::default()
        };
        let db = postcard::to_allocvec(&db).unwrap();
        let out = AtWriter::new(BufWriter::new(File::create(&path).unwrap()), &db).unwrap();
        let mut w = Writer::spawn().unwrap();
        w.open(out);
        let records = AT_BUF_CAP as usize / AT_RECORD_WORDS as usize;
        let mut seq = 0u64;
        let mut want: Vec<Vec<Access>> = vec![Vec::new(); 2];
        w.begin_thread(0, 0);
        w.begin_thread(1, 0);
        let buffers: Vec<(u32, Vec<u64>)> = (0..64u64)
            .map(|b| {
                let t = (b % 2) as u32;
                let mut words = with_len(Vec::new());
                for (r, record) in words.chunks_exact_mut(4).enumerate() {
                    let a = Access {
                        id: (r % 5) as u32,
                        addr: (b << 20) ^ (r as u64 * 8),
                        size: 1 + r as u64 % 8,
                    };
                    record.copy_from_slice(&[a.id.into(), a.addr, a.size, seq]);
                    want[t as usize].push(a);
                    seq += 1;
                }
                (t, words)
            })
            .collect();
        for (b, (t, words)) in buffers.into_iter().enumerate() {
            match b % 3 {
                0 => w.copy(t, &words),
                1 => drop(w.swap(t, words, records * 4)),
                _ => drop(w.code(t, words)),
            }
        }
        w.copy(1, &[7, 0x1000, 4, seq]);
        want[1].push(Access {
            id: 7,
            addr: 0x1000,
            size: 4,
        });
        w.end_thread(0);
        w.finish().unwrap();
        let mut got: Vec<Vec<Access>> = vec![Vec::new(); 2];
        for run in AtReader::open(&path).unwrap() {
            let run = run.unwrap();
            got[run.thread as usize].extend(run.accesses);
        }
        std::fs::remove_file(&path).unwrap();
        assert_eq!(got, want);
    }
}
