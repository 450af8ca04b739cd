//! The trace event type shared by block traces and acyclic-path traces.

use crate::ids::{BlockId, FunctionId, PathId, ThreadId};
use serde::{Deserialize, Serialize};

/// One event of a control-flow trace.
///
/// The text form (one event per line) is `F name` or `F #id` for [`Event::Enter`], `E` for
/// [`Event::Leave`], `B id`, `P id` and `T id`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Event {
    /// Entry into a function (`F`; Larus's EnterRoutine).
    Enter(FunctionId),
    /// Exit from the innermost open function (`E`; Larus's LeaveRoutine).
    Leave,
    /// A basic block executed in the current function (`B`).
    Block(BlockId),
    /// An acyclic path executed in the current function (`P`; Larus's NewPath).
    Path(PathId),
    /// The following events belong to this thread (`T`; Larus's EnterThread).
    Thread(ThreadId),
}

impl Event {
    /// The one-letter kind used by the text format.
    pub fn letter(self) -> char {
        match self {
            Event::Enter(_) => 'F',
            Event::Leave => 'E',
            Event::Block(_) => 'B',
            Event::Path(_) => 'P',
            Event::Thread(_) => 'T',
        }
    }
}
