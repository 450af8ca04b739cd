//! Dense `u32` ids for CFG and DAG nodes and edges, and the `u64` path id.
//!
//! Every table in this crate is a `Vec` indexed by one of these ids (cranelift's entity style):
//! the newtypes keep a CFG node from being used where a DAG node is meant.

use serde::{Deserialize, Serialize};

macro_rules! dense_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(
            Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
        )]
        #[serde(transparent)]
        pub struct $name(pub u32);

        impl $name {
            /// The id as a `Vec` index.
            #[inline]
            pub fn index(self) -> usize {
                self.0 as usize
            }

            /// The id of `Vec` index `i`; callers guarantee `i < 2^32` (checked at build time).
            #[inline]
            pub(crate) fn from_index(i: usize) -> Self {
                Self(i as u32)
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "{}", self.0)
            }
        }
    };
}

dense_id!(
    /// A basic block of a [`Cfg`](crate::Cfg): its index in `Cfg::nodes`.
    NodeId
);
dense_id!(
    /// An edge of a [`Cfg`](crate::Cfg): its index in `Cfg::edges`.
    EdgeId
);
dense_id!(
    /// A node of a [`Dag`](crate::Dag).
    DagNodeId
);
dense_id!(
    /// An edge of a [`Dag`](crate::Dag).
    DagEdgeId
);

/// A Ball–Larus path id: the index of an acyclic path in `[0, N)`.
///
/// wpp-paths keeps its own type (rather than `wpp_trace::PathId`) so that it depends on nothing
/// but serde; both are a transparent `u64`, so converting is `PathId(id.0)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct PathId(pub u64);

impl std::fmt::Display for PathId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}
