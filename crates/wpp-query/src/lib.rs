//! Questions answered on compressed traces, without unpacking them.
//!
//! * [`matching`]: first occurrence and number of occurrences of an intraprocedural path in a
//!   block trace, by Zhang–Gupta's four schemes (§4), with their indices.
//! * [`pattern`]: the compiled path and the prefix/suffix/internal segment algebra scheme 2
//!   is built on.
//! * [`dag`]: the grammar as a DAG (Larus §3.3): rule frequencies, subpath frequency counted
//!   on the grammar, "executes before", execution context.
//! * [`hot`]: minimal hot subpaths (Larus §4.2, Figure 7) in O(E·L).
//! * [`report`]: hot subpaths decoded to events, call stacks, source lines and folded stacks.
//! * [`expand`]: the expansion helpers the queries need.

#![deny(missing_docs)]

pub mod dag;
pub mod error;
pub mod expand;
pub mod hot;
pub mod matching;
pub mod pattern;
pub mod report;

pub use error::QueryError;
