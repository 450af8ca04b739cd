//! The crate's error type: every malformed input maps to a variant naming what was wrong.

use thiserror::Error;

/// Why a CFG, a path or a file was rejected.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum Error {
    /// A node or edge id refers past the end of its table.
    #[error("function `{function}`: {what} {id} is out of range (the function has {len})")]
    OutOfRange {
        /// The function being read.
        function: String,
        /// What the id names (`"entry node"`, `"edge 3 target"`, …).
        what: String,
        /// The offending id.
        id: u64,
        /// The table's length.
        len: usize,
    },
    /// A function has no nodes, so it has no entry.
    #[error("function `{0}` has no nodes")]
    Empty(String),
    /// More nodes or edges than fit a `u32` id (or than the configured limit).
    #[error("function `{function}`: {count} {what} exceed the limit of {limit}")]
    TooLarge {
        /// The function being read.
        function: String,
        /// `"nodes"` or `"edges"`.
        what: &'static str,
        /// How many were given.
        count: usize,
        /// The largest accepted count.
        limit: usize,
    },
    /// An edge profile whose length differs from the number of edges.
    #[error("function `{function}`: edge profile has {got} counts for {expected} edges")]
    ProfileLength {
        /// The function being read.
        function: String,
        /// The number of edges.
        expected: usize,
        /// The number of counts.
        got: usize,
    },
    /// The number of acyclic paths from a node exceeds `u64::MAX`.
    #[error(
        "function `{function}`: too many acyclic paths (2^64 or the requested limit) start at \
         node {node}; mark a cut point at or below it"
    )]
    PathCountOverflow {
        /// The function being numbered.
        function: String,
        /// The CFG node id (`None`: the virtual entry) where the count first overflowed,
        /// in reverse topological order.
        node: String,
    },
    /// A path id at or past the number of paths.
    #[error("function `{function}`: path id {id} is not below the path count {count}")]
    IdOutOfRange {
        /// The function.
        function: String,
        /// The id asked for.
        id: u64,
        /// The number of paths.
        count: u64,
    },
    /// A node sequence or id list that is not an acyclic path of the DAG.
    #[error("function `{function}`: {detail}")]
    NotAPath {
        /// The function.
        function: String,
        /// Which path and why.
        detail: String,
    },
    /// A PPP weight or partial identifier left the `i64` range.
    #[error("function `{0}`: PPP identifiers exceed the i64 range")]
    PppOverflow(String),
    /// A name in a JSON file that does not resolve.
    #[error("{0}")]
    Name(String),
    /// A JSON document that does not parse.
    #[error("JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// A compact (postcard) profile that does not decode.
    #[error("compact profile: {0}")]
    Postcard(#[from] postcard::Error),
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
