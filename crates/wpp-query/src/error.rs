//! Errors of the query engine.

use wpp_trace::wire::WireError;

/// Why a query or an index could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum QueryError {
    /// The query path is empty or too long for the O(m²) tables.
    #[error("a query path must have 1 to {max} blocks, got {len}")]
    BadPathLength {
        /// The length given.
        len: usize,
        /// The longest path accepted.
        max: usize,
    },
    /// A subpath query or parameter is out of range.
    #[error("invalid query: {0}")]
    BadQuery(String),
    /// An index or container is malformed; the error names what and where.
    #[error("corrupt {container}: {source}")]
    Corrupt {
        /// Which structure was being read (`"scheme 4 index"`, `"chunked trace"`).
        container: &'static str,
        /// What was read, where, and what went wrong.
        #[source]
        source: WireError,
    },
    /// An index does not describe this grammar or trace.
    #[error("{container} does not match its data: {reason}")]
    Mismatch {
        /// The structure.
        container: &'static str,
        /// What disagrees.
        reason: String,
    },
    /// Reading or writing a file failed.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
}

impl QueryError {
    pub(crate) fn corrupt(container: &'static str) -> impl Fn(WireError) -> QueryError {
        move |source| QueryError::Corrupt { container, source }
    }
}
