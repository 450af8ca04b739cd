//! Control-flow traces: the events a recorded program emits, the alphabet that turns them into
//! dense terminals for the compressors, the program database that names what the events refer
//! to, and the trace file formats.
//!
//! # Events
//!
//! Two trace vocabularies share one [`Event`] type:
//!
//! * **Block traces** (Zhang–Gupta §3): `Enter(f)` on function entry (`F`), `Block(b)` for each
//!   basic block executed (`B`, ids local to the current function) and `Leave` on exit (`E`).
//! * **Acyclic-path traces** (Larus §2): `Enter(f)`, `Path(p)` for each Ball–Larus acyclic path
//!   (ids local to the current function) and `Leave`.
//!
//! Both may carry `Thread(t)`, which switches the thread that the following events belong to.
//! A trace is therefore a set of per-thread streams; everything downstream (grammars, queries)
//! works per thread, as Larus builds one WPP per thread, and two traces are equal when their
//! per-thread projections are ([`file::threads`]).
//!
//! # Modules
//!
//! * [`file`](mod@file) — the chunked binary trace format (survives a crashed recorder,
//!   reports damage by byte offset) and the one-event-per-line text format, behind one
//!   detecting reader.
//! * [`synth`] — seeded synthetic programs whose runs give realistic block and path traces of
//!   any length, for tests and benchmarks.
//! * [`wire`] — checked varint and integer reads shared by every wpp file format.
//! * [`output`] — how output files reach their paths (atomically, or into a device or FIFO).

#![deny(missing_docs)]

pub mod alphabet;
pub mod event;
pub mod file;
pub mod ids;
pub mod output;
pub mod program;
pub mod synth;
pub mod wire;

pub use alphabet::Alphabet;
pub use event::Event;
pub use file::threads::{same_per_thread, split_threads, ThreadDemux};
pub use file::{open, read_events, Format, TraceError, TraceReader, TraceWriter};
pub use ids::{BlockId, FunctionId, PathId, Terminal, ThreadId};
pub use program::{DbLayout, Function, FunctionCfg, ProgramDb, ProgramDbError};
