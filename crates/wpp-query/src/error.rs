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
    /// An index or container could not be read; the source names what and where.
    #[error("corrupt {container}")]
    Corrupt {
        /// Which structure was being read (`"scheme 4 index"`, `"chunked trace"`).
        container: &'static str,
        /// What was read, where, and what went wrong.
        #[source]
        source: WireError,
    },
    /// A value in an index or container is invalid (bad magic, checksum, tag, inconsistent
    /// lengths).
    #[error("corrupt {container}: invalid {what} at byte offset {offset}")]
    Invalid {
        /// The structure.
        container: &'static str,
        /// What was invalid.
        what: &'static str,
        /// Absolute byte offset of the item.
        offset: u64,
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
    /// The byte offset of a corrupt item, for errors about file contents.
    pub fn offset(&self) -> Option<u64> {
        match self {
            QueryError::Corrupt { source, .. } => Some(source.offset),
            QueryError::Invalid { offset, .. } => Some(*offset),
            _ => None,
        }
    }

    pub(crate) fn invalid(container: &'static str, what: &'static str, offset: u64) -> QueryError {
        QueryError::Invalid {
            container,
            what,
            offset,
        }
    }

    pub(crate) fn corrupt(container: &'static str) -> impl Fn(WireError) -> QueryError {
        move |source| QueryError::Corrupt { container, source }
    }
}
