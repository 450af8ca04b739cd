//! Memory dependences (Tallam and Gupta, *Unified Control Flow and Data Dependence Traces*,
//! TACO 2007): which store instance produced the bytes each load instance reads.
//!
//! * [`memdb`]: the memory instructions of an instrumented program, with stable ids
//!   (function, block, source line and column, what kind of access).
//! * [`at`]: the address trace (AT) file `wpp cc --mode trace-addr` programs write next to
//!   their block trace: every executed load and store of instrumented code with its address
//!   and size, in compressed chunks.
//! * [`lastwriter`]: the byte-granular last-writer table (the hash table the paper describes
//!   after Figure 22, per byte so that partial overlaps, unions and `memcpy` are exact).
//! * [`mod@recover`]: every dynamic dependence (store instance → load instance) of an AT, and the
//!   counts of `wpp deps stats`.
//! * [`chain`]: dependence chains, `RecoverChain` and `ChainFreq` (Figure 21).
//! * [`ecf`]: the extended control-flow trace (eCF, §2–3): the block trace with the dependence
//!   checks' control flow, and recovery from it (§5, Figures 18–21).
//! * [`filter`]: the filtering phase's classification of exercised pairs (§3.1, Definitions 1–4)
//!   and its report file.
//!
//! Instances are numbered per instruction from 1: instance `k` of store `s` is the `k`-th
//! execution of `s` in the recording.

#![deny(missing_docs)]

pub mod at;
pub mod chain;
pub mod ecf;
pub mod filter;
pub mod lastwriter;
pub mod memdb;
pub mod recover;

pub use at::{Access, AtError, AtReader};
pub use lastwriter::{Instance, LastWriter, Writer};
pub use memdb::{AccessKind, MemInstr, MemoryDb};
pub use recover::{recover, Dependence, Stats};
