//! Whole-program-path grammars: the compressors that build them, the `.wpp` file format that
//! stores them, and streaming expansion back to the trace.
//!
//! A [`Grammar`] is the finished, immutable form every compressor produces and every query
//! consumes: rules in bottom-up order (a rule's body refers only to rules with smaller ids), one
//! start rule per thread, bodies stored contiguously.
//!
//! * [`sequitur`] — online SEQUITUR and SEQUITUR(1) (Larus §3).
//! * [`phrase`] — phrase compression: content-defined phrases, deduplicated, then SEQUITUR
//!   over phrase ids (fast enough for online recording).
//! * [`algorithm`] — the [`Algorithm`] enum and [`compress`], one call for any compressor.
//! * [`check`] — verifies SEQUITUR's digram-uniqueness and rule-utility invariants (and only
//!   what each algorithm guarantees, [`check::check_algorithm`]).
//! * [`expand`] — streaming and random-access expansion back to terminals.
//! * [`mod@file`] — the `.wpp` file format.
//! * [`trace`] — [`TraceCompressor`]: a trace's events, routed by thread, into a `.wpp` file.
//! * [`parallel`] and [`join`] — compression on several cores: chunk grammars built in
//!   parallel and joined into one grammar.
//! * [`segment`] — any length in bounded memory: the grammar closed, written and freed every
//!   so many events, the segments joined again when the file is read.

#![deny(missing_docs)]
#![deny(unsafe_code)]

pub mod algorithm;
pub mod check;
pub mod expand;
pub mod file;
pub mod grammar;
pub mod join;
pub mod parallel;
pub mod phrase;
pub mod repair;
pub mod segment;
pub mod sequitur;
pub mod symbol;
pub mod trace;

pub use algorithm::{compress, compress_threads, Algorithm, CompressError};
pub use grammar::{Grammar, RuleId, StartRule};
pub use symbol::Symbol;
pub use trace::{TraceCompressError, TraceCompressor};
