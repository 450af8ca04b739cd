//! Path matching on block traces (Zhang–Gupta §4): the first occurrence and the number of
//! occurrences of an intraprocedural path `P` of a function `F`.
//!
//! # Semantics (§3.2, §4.1)
//!
//! A block trace interleaves the blocks of many invocations. Every invocation of `F` executes a
//! sequence of its *own* blocks: those at its nesting level between its `F` and its `E`; blocks
//! of nested calls do not belong to it (*path interruption*), and blocks of invocations of other
//! functions never count, even with the same ids (*path context*). An occurrence of `P` is a
//! contiguous window of one `F` invocation's own blocks equal to `P`; it is reported by the
//! position (0-based event index in its thread's stream) of its last block. Overlapping
//! occurrences all count. Blocks before any `F`, and `E`s with no open invocation, belong to no
//! invocation; an invocation still open at the end of the trace simply ends there. `P` (acyclic
//! path) and `T` events are transparent: paths are sequences of blocks.
//!
//! This is exactly the nested-level automaton of §4.1: a stack with one KMP state per active
//! invocation, [`NIL`] (the paper's −1) for invocations of other functions.
//!
//! # Schemes
//!
//! * [`Scheme::Expand`] (1): expand the grammar and run the automaton ([`scheme1`]).
//! * [`Scheme::Compressed`] (2): match on the grammar with per-rule level summaries
//!   ([`compressed`]).
//! * [`Scheme::Chunked`] (3): run the automaton over a chunked, separately compressed trace,
//!   decompressing only chunks that contain `F` ([`chunked`]).
//! * [`Scheme::Partitioned`] (4): scheme 2 over the partitions of the start rule that contain
//!   `F`, updating the stack directly across the others ([`partition`]).
//!
//! All four give identical answers; the tests check them against each other and against a
//! brute-force oracle.

pub mod chunked;
pub mod compressed;
pub mod levels;
pub mod partition;
pub mod scheme1;

use serde::Serialize;
use wpp_trace::{Alphabet, BlockId, Event, FunctionId, ThreadId};

use crate::error::QueryError;
use crate::pattern::Pattern;

/// The automaton state of an invocation of another function (the paper's −1).
pub const NIL: u16 = u16::MAX;

/// A path query: blocks of one function.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathQuery {
    /// The function whose invocations are searched.
    pub function: FunctionId,
    /// The block ids of the path, in order.
    pub path: Vec<BlockId>,
}

/// Whether to stop at the first occurrence or count them all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Find the first occurrence only (the paper's query).
    First,
    /// Count all occurrences (and report the first).
    Count,
}

/// A path matching scheme of Zhang–Gupta §4.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Scheme {
    /// Scheme 1: decompress, then run the nested-level automaton.
    Expand,
    /// Scheme 2: match on the grammar.
    Compressed,
    /// Scheme 3: partial decompression of a chunked trace.
    Chunked,
    /// Scheme 4: scheme 2 restricted to start-rule partitions that contain the function.
    Partitioned,
}

/// The answer for one thread's stream.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct StreamMatch {
    /// The thread.
    pub thread: u32,
    /// Position of the last block of the first occurrence, if any.
    pub first: Option<u64>,
    /// Number of occurrences (only in [`Mode::Count`]).
    pub count: Option<u64>,
}

impl StreamMatch {
    pub(crate) fn new(thread: ThreadId, first: Option<u64>, count: u64, mode: Mode) -> Self {
        StreamMatch {
            thread: thread.0,
            first,
            count: (mode == Mode::Count).then_some(count),
        }
    }
}

/// What a terminal means to the automaton.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A block with its pattern letter ([`OTHER`](crate::pattern::OTHER) if not in the path).
    Block(u16),
    /// Entry into a function; `true` if it is the queried one.
    Enter(bool),
    /// Function exit.
    Leave,
    /// Events that do not affect matching (paths, thread switches).
    Neutral,
}

impl Kind {
    /// The meaning of `event` for a query on `function` with compiled path `pattern`.
    #[inline]
    pub fn of(event: Event, function: FunctionId, pattern: &Pattern) -> Kind {
        match event {
            Event::Enter(f) => Kind::Enter(f == function),
            Event::Leave => Kind::Leave,
            Event::Block(b) => Kind::Block(pattern.letter(b)),
            Event::Path(_) | Event::Thread(_) => Kind::Neutral,
        }
    }
}

/// The kind of every terminal of an alphabet (one table per query).
pub fn classify(alphabet: &Alphabet, function: FunctionId, pattern: &Pattern) -> Vec<Kind> {
    alphabet
        .events()
        .iter()
        .map(|&e| Kind::of(e, function, pattern))
        .collect()
}

/// The nested-level automaton of §4.1 on uncompressed input, one event at a time.
#[derive(Clone, Debug)]
pub struct Automaton<'p> {
    pattern: &'p Pattern,
    stack: Vec<u16>,
    pos: u64,
    count: u64,
    first: Option<u64>,
}

impl<'p> Automaton<'p> {
    /// The start state `q0 = ()` at position 0.
    pub fn new(pattern: &'p Pattern) -> Self {
        Automaton {
            pattern,
            stack: Vec::new(),
            pos: 0,
            count: 0,
            first: None,
        }
    }

    /// Consumes one event; returns whether an occurrence ends at it.
    #[inline]
    pub fn feed(&mut self, kind: Kind) -> bool {
        let hit = match kind {
            Kind::Block(c) => match self.stack.last_mut() {
                Some(s) if *s != NIL => {
                    let (t, hit) = self.pattern.step(*s, c);
                    *s = t;
                    hit
                }
                _ => false,
            },
            Kind::Enter(target) => {
                self.stack.push(if target { 0 } else { NIL });
                false
            }
            Kind::Leave => {
                self.stack.pop();
                false
            }
            Kind::Neutral => false,
        };
        if hit {
            self.count += 1;
            self.first.get_or_insert(self.pos);
        }
        self.pos += 1;
        hit
    }

    /// Skips `events` events whose chunk does not contain the function (§4.3, Figure 7): the
    /// invocations above nesting level `min` end inside them and the ones open at the end, up to
    /// level `exit`, are of other functions.
    pub fn skip(&mut self, events: u64, min: u64, exit: u64) {
        self.stack.truncate(min as usize);
        self.stack.resize(exit as usize, NIL);
        self.pos += events;
    }

    /// The current nesting level (number of open invocations).
    pub fn depth(&self) -> u64 {
        self.stack.len() as u64
    }

    /// Events consumed so far.
    pub fn position(&self) -> u64 {
        self.pos
    }

    /// The first occurrence so far.
    pub fn first(&self) -> Option<u64> {
        self.first
    }

    /// The occurrences so far.
    pub fn count(&self) -> u64 {
        self.count
    }
}

/// Checks that the alphabet covers the grammar's terminals.
pub(crate) fn check_alphabet(
    g: &wpp_grammar::Grammar,
    alphabet: &Alphabet,
) -> Result<(), QueryError> {
    if (alphabet.len() as u64) < u64::from(g.num_terminals()) {
        return Err(QueryError::Mismatch {
            container: "alphabet",
            reason: format!(
                "{} events for a grammar over {} terminals",
                alphabet.len(),
                g.num_terminals()
            ),
        });
    }
    Ok(())
}
