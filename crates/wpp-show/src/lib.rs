//! Views and exports of recordings: what a person or a profiler's viewer reads.
//!
//! Everything here starts from one walk of a recording ([`walk`]): a shadow call stack per
//! thread attributes every event to its calling context (Larus §2's EnterRoutine/LeaveRoutine
//! events give the stack). A trace is read batch by batch, never materialized; a `.wpp`
//! grammar is walked by its rules, each rule once per calling state it runs in, with its
//! counts multiplied by how often that happens, so the time and memory follow the grammar, not
//! the trace (`rule_walk`). A bl/ppp profile gives path counts without stacks
//! ([`walk::Run::from_path_counts`]).
//!
//! # What a sample is
//!
//! The cost unit of every export is one recorded **event**: a `B` event in a block recording,
//! a `P` event (one acyclic path) in a path recording. `F`, `E` and `T` events cost nothing. A
//! sample is charged to the stack of frames `function:line` ([`frame_name`]) where the caller
//! frames sit at the line of their call site (the line of the last block, or the last block of
//! the last path, before the call) and the leaf at the line of the block (or of the path's
//! first block). So the total of every profile equals the recording's block/path event count, a
//! function's self total equals its events, and a block's count equals what `wpp match
//! --function F --path B` counts (for block recordings) and a path's what it counts for that
//! path.
//!
//! Source-line counts ([`annotate`]) count blocks: a line's count is the largest execution
//! count of its function's blocks that run its code — that start on it or contain it past
//! their first line (so a `for` header counts its condition's executions, as `llvm-cov` does,
//! and a line after a call counts the call's block) — summed over the functions it was inlined
//! into.
//!
//! # Exports
//!
//! | module | format | read back in the tests by |
//! |---|---|---|
//! | [`annotate`] | annotated source text, lcov tracefile | `genhtml` (lcov) |
//! | [`stacks`] | folded stacks, SVG flame graph (inferno), pprof `profile.proto` (gzip), speedscope JSON | `go tool pprof`, speedscope's JSON schema |
//! | [`callgrind`] | callgrind profile format | `callgrind_annotate` |
//! | [`chrome`] | Chrome/Perfetto trace-event JSON of a window of events | a schema check |
//! | [`report`] | one self-contained HTML page | headless Chromium |

#![deny(missing_docs)]

pub mod annotate;
pub mod callgrind;
pub mod chrome;
pub mod report;
mod rule_walk;
pub mod source;
pub mod stacks;
pub mod walk;

pub use source::{Loc, SourceMap};
pub use walk::{Recording, Run};

/// Why a view or export failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ShowError {
    /// The trace could not be read.
    #[error(transparent)]
    Trace(#[from] wpp_trace::TraceError),
    /// A path could not be decoded to blocks.
    #[error(transparent)]
    Decode(#[from] wpp_paths::trace::DecodeError),
    /// Writing the output failed.
    #[error("cannot write the output: {0}")]
    Io(#[from] std::io::Error),
    /// A request that cannot be met (a bad window, an unknown function).
    #[error("{0}")]
    Request(String),
}

/// A display name for a function index of a run ([`walk::ROOT`] included).
pub fn function_name(db: &wpp_trace::ProgramDb, f: u32) -> String {
    if f == walk::ROOT {
        "[outside any function]".into()
    } else {
        db.name(wpp_trace::FunctionId(f))
    }
}

/// A frame's name: `function:line`, or the function alone when the line is unknown. A line of
/// another file than the function's own (code inlined from a header) is `function:file:line`
/// (the file's last component): a bare number would name a line of the function's file.
pub fn frame_name(db: &wpp_trace::ProgramDb, map: &SourceMap, f: u32, slot: u32) -> String {
    let name = function_name(db, f);
    let loc = map.loc(f, slot);
    let own = map.loc(f, 0).file;
    match loc.line {
        0 => name,
        line if loc.file == own || loc.file == source::NO_FILE => format!("{name}:{line}"),
        line => {
            let file = map.file_name(loc.file);
            let base = file.rsplit('/').next().unwrap_or(file);
            format!("{name}:{base}:{line}")
        }
    }
}
