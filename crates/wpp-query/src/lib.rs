//! Questions answered on compressed traces, without unpacking them.
//!
//! * [`dag`]: the grammar as a DAG (Larus §3.3): rule frequencies, subpath frequency counted
//!   on the grammar, "executes before", execution context and call stacks.
//! * [`hot`]: minimal hot subpaths: Larus §4.2's Figure 7 in O(E·L), and `wpp hot`'s exhaustive
//!   search, strings counted exactly through the rules ([`hot::exact`]); [`report`] decodes them
//!   to events, call stacks, functions, blocks, source lines and folded stacks.
//! * [`matching`]: first occurrence and number of occurrences of an intraprocedural path in a
//!   block trace by Zhang–Gupta's four schemes (§4), with their indices: the chunked container
//!   of scheme 3 ([`matching::chunked`]) and the start-rule partition index of scheme 4
//!   ([`matching::partition`], stored as a `.wpp` extra section).
//! * [`pattern`]: the compiled path and the prefix/suffix/internal segment algebra that scheme 2
//!   is built on.
//! * [`expand`]: the expansion helpers the queries need.
//! * [`oracle`]: brute-force reference answers on the expanded trace, for tests and checks only.
//!
//! Every query works on any valid [`Grammar`](wpp_grammar::Grammar), whichever compressor
//! built it; the tests run each query on SEQUITUR, SEQUITUR(1), the frequency compressor and a
//! flat grammar of the same trace against brute force on the expanded trace.
//!
//! # Choosing a matching scheme
//!
//! `auto` (the `wpp match` default) picks scheme 4 when the `.wpp` carries a partition index,
//! scheme 2 otherwise, and scheme 3 for chunked traces. Scheme 4 is never slower than scheme 2
//! by more than the O(partitions) skip loop, and much faster for functions present in few
//! partitions; schemes 1 and 3 pay for decompression and win only when the expanded trace is
//! reused, e.g. several paths at once ([`matching::scheme1::run_many`],
//! [`matching::chunked::run_many`]).

#![deny(missing_docs)]

pub mod dag;
pub mod error;
pub mod expand;
pub mod hot;
pub mod matching;
pub mod oracle;
pub mod pattern;
pub mod report;
pub mod stack;

pub use error::QueryError;
