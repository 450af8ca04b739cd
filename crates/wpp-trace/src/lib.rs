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
//! works per thread, as Larus builds one WPP per thread.

#![deny(missing_docs)]

pub mod alphabet;
pub mod event;
pub mod ids;
pub mod program;
pub mod wire;

pub use alphabet::Alphabet;
pub use event::Event;
pub use ids::{BlockId, FunctionId, PathId, Terminal, ThreadId};
pub use program::{Function, ProgramDb};
