//! Dense, typed identifiers. Each is a thin newtype so that a block id cannot be passed where a
//! function id is expected; all are plain integers in memory and on disk.

use serde::{Deserialize, Serialize};

macro_rules! dense_id {
    ($(#[$doc:meta])* $name:ident($int:ty)) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub $int);

        impl $name {
            /// The id as an index into a dense table.
            #[inline]
            pub fn index(self) -> usize {
                self.0 as usize
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                self.0.fmt(f)
            }
        }
    };
}

dense_id!(
    /// A function of the program database.
    FunctionId(u32)
);
dense_id!(
    /// A basic block, numbered locally within its function.
    BlockId(u32)
);
dense_id!(
    /// A Ball–Larus acyclic path, numbered locally within its function. Path counts can exceed
    /// 2^32 in real functions, hence 64 bits.
    PathId(u64)
);
dense_id!(
    /// A thread of the recorded program, numbered in order of first appearance.
    ThreadId(u32)
);
dense_id!(
    /// A dense terminal symbol handed to the compressors; always below [`Terminal::LIMIT`].
    Terminal(u32)
);

impl Terminal {
    /// Terminals are below 2^31 so that a grammar symbol can tell terminals from rules by its
    /// top bit.
    pub const LIMIT: u32 = 1 << 31;
}
