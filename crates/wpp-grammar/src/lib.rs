//! Whole-program-path grammars: the compressors that build them, the `.wpp` file format that
//! stores them, and streaming expansion back to the trace.
//!
//! A [`Grammar`] is the finished, immutable form every compressor produces and every query
//! consumes: rules in bottom-up order (a rule's body refers only to rules with smaller ids), one
//! start rule per thread, bodies stored contiguously.

#![deny(missing_docs)]

pub mod grammar;
pub mod symbol;

pub use grammar::{Grammar, RuleId, StartRule};
pub use symbol::Symbol;
