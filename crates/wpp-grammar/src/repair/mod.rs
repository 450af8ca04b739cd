//! Most-frequent-digram-first grammar compression: Tallam–Gupta's enhanced SEQUITUR (§4.2,
//! Figure 14), computed offline as Re-Pair (Larsson & Moffat, *Off-line dictionary-based
//! compression*, Proc. IEEE 88(11), 2000).
//!
//! SEQUITUR makes a rule for a digram as soon as it repeats, so an early, rare digram (`wb` in
//! `wbcwbc…`) can break up a later, frequent one (`bc`). Tallam and Gupta instead count all
//! digrams of the whole trace and repeatedly replace the most frequent one by a new rule,
//! updating the counts, until no digram occurs twice; rules left with a single use are inlined.
//! On control-flow traces this gives grammars about a third smaller (their Table II).
//!
//! # Algorithm
//!
//! [`RePair`] follows Larsson–Moffat: the trace is an array of `u32` symbols; every distinct
//! digram has a record with its count and a doubly linked list of its occurrences threaded
//! through the array positions; records sit in a priority queue of frequency buckets (`2..√n`
//! as lists, larger counts in one list scanned for its maximum, which is cheap because at most
//! √n pairs can be that frequent and each pick removes at least √n symbols). Replacing a digram
//! `ab` by a rule `A` at each of its occurrences `x a b y` removes the occurrences of `xa` and
//! `by` and adds `xA` and `Ay`, each in O(1) expected time; the emptied slot joins a run of holes
//! whose ends point past it. No digram's count ever exceeds the count just replaced, so the
//! bucket scan only moves down, and the whole run is O(n) expected time. Memory: 12 bytes per
//! event for the array and its links, plus about 30–40 bytes per distinct digram present (a
//! 24-byte record, 5-byte hash slots, arena slack).
//!
//! When no digram occurs twice, each stream's remaining sequence becomes its start rule, every
//! rule used only once is inlined into its user, and the rules are numbered bottom-up (see
//! `output.rs`). [`Windowed`] is the bounded-buffer form (see `window.rs`); both are also
//! reachable as [`Algorithm::Frequency`](crate::Algorithm::Frequency).
//!
//! Measured on synthetic control-flow traces of 10^7 events (`benches/repair.rs`): grammars
//! 18–25 % smaller than SEQUITUR's (20–37 % at 10^6 events), 1.3–2.3× SEQUITUR's time on a
//! loaded 2-core machine, 12.5–13 bytes of peak heap per event. Random text over a large
//! alphabet, where nearly every digram is distinct, needs about 37 more bytes per digram.
//!
//! # Ties and overlaps
//!
//! * **Ties.** Among digrams of equal count, the one that reached that count first is replaced
//!   first (buckets are FIFO; the high-count list is scanned from its oldest entry). Everything
//!   is deterministic: the same input always gives the same grammar.
//! * **Overlaps.** Counts are of *non-overlapping* occurrences. Only runs of one symbol can
//!   overlap (`aaa` holds `aa` twice, overlapping). In a run `cc…c` the pairs starting at its
//!   1st, 3rd, 5th, … symbol are counted and listed, the others not, so a run of `k` symbols
//!   counts `⌊k/2⌋` (the most possible) and replacing `aa` by `A` turns `aaaaa` into `AAa`,
//!   greedily from the left. A replacement elsewhere changes a run only at its ends; when the
//!   run loses (or gains) its first symbol the parity flips and the run is re-walked, each
//!   position handing its list slot to its neighbour, so counts change only by the difference
//!   and lists stay (nearly) in position order. Offline, that walk is paid for by the replaced
//!   digram, which was at least as frequent as the run's `cc`.
//! * **Streams.** Each stream (one per thread) is separated from the next by a separator symbol,
//!   so digrams never span streams; rules are shared by all streams, and each stream gets its
//!   own start rule.
//!
//! # Properties of the result
//!
//! At termination no digram occurs twice without overlap in the remaining sequences, every rule
//! body is a distinct digram (a replaced digram cannot reappear: every new adjacency involves
//! the newest rule), and no rule body occurs in a sequence. Inlining a rule used once joins its
//! body's ends to its user's symbols, and such a junction could repeat a digram; the output
//! stage therefore runs the engine once more over all bodies and repeats until nothing changes
//! (offline it never has found anything; windowed it sometimes does). The finished grammar
//! satisfies SEQUITUR's digram uniqueness and rule utility, which the tests check with the
//! crate's checker and a brute-force digram count.

mod engine;
mod output;
mod window;

use wpp_trace::{Terminal, ThreadId};

use crate::grammar::Grammar;
use engine::{Engine, SEP};
use output::Sequences;
pub use window::{WindowStream, Windowed};

/// Top bit of an internal symbol: a rule reference, as in [`crate::Symbol`].
const RULE_BIT: u32 = 1 << 31;

/// Why a trace could not be compressed.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum RePairError {
    /// A terminal does not fit in 31 bits.
    #[error("terminal {0} is not below 2^31")]
    TerminalOutOfRange(u32),
    /// The input (or a window plus the grammar so far) has 2^32 − 2 symbols or more.
    #[error("the input is too long for 32-bit positions")]
    TooLong,
    /// More rules than 31-bit rule ids allow.
    #[error("the grammar needs more than 2^31 − 2 rules")]
    TooManyRules,
}

/// The offline most-frequent-digram-first compressor: add every stream, then [`finish`].
///
/// ```
/// use wpp_grammar::repair::RePair;
/// use wpp_trace::{Terminal, ThreadId};
///
/// let mut c = RePair::new();
/// c.add_stream(ThreadId(0), b"abcabcabc".iter().map(|&b| Terminal(u32::from(b))))
///     .unwrap();
/// let g = c.finish().unwrap();
/// assert_eq!(g.num_rules(), 2); // S → AAA, A → abc
/// ```
///
/// [`finish`]: RePair::finish
pub struct RePair {
    engine: Engine,
    threads: Vec<ThreadId>,
    num_terminals: u32,
}

impl Default for RePair {
    fn default() -> Self {
        RePair::new()
    }
}

impl RePair {
    /// A compressor without streams.
    pub fn new() -> RePair {
        RePair {
            engine: Engine::new(0),
            threads: Vec::new(),
            num_terminals: 0,
        }
    }

    /// Declares that the grammar is over at least `n` terminals (e.g. an alphabet's size), so
    /// that [`finish`](Self::finish) reports `n` even if the largest terminals never occur.
    pub fn reserve_terminals(&mut self, n: u32) {
        self.num_terminals = self.num_terminals.max(n);
    }

    /// Makes room for `slots` more positions: the terminals of the streams still to be added
    /// plus one per stream (its end). The sequence (12 bytes per slot) is then allocated once at
    /// its exact size instead of growing stream by stream with up to half of it unused.
    pub fn reserve(&mut self, slots: usize) {
        self.engine.reserve_exact(slots);
    }

    /// Adds a whole stream (one thread's terminals), which gets its own start rule.
    pub fn add_stream<I>(&mut self, thread: ThreadId, terminals: I) -> Result<(), RePairError>
    where
        I: IntoIterator<Item = Terminal>,
    {
        let terminals = terminals.into_iter();
        self.engine
            .reserve(terminals.size_hint().0.saturating_add(1));
        for t in terminals {
            self.num_terminals = self.num_terminals.max(check_terminal(t)? + 1);
            if self.engine.len() >= MAX_POSITIONS {
                return Err(RePairError::TooLong);
            }
            self.engine.push(t.0);
        }
        self.engine.end_stream();
        self.threads.push(thread);
        Ok(())
    }

    /// Runs the replacement loop and returns the grammar: rules numbered in depth-first
    /// post-order from the start rules, one start rule per stream in the order added.
    pub fn finish(mut self) -> Result<Grammar, RePairError> {
        self.engine.index_pairs();
        let mut rules = Vec::new();
        repair(&mut self.engine, &mut rules, 0)?;
        let top = final_sequences(&self.engine);
        drop(self.engine);
        output::grammar(self.num_terminals, &rules, &top, &self.threads)
    }
}

/// A terminal's value, if it fits in 31 bits.
fn check_terminal(t: Terminal) -> Result<u32, RePairError> {
    if t.0 < Terminal::LIMIT {
        Ok(t.0)
    } else {
        Err(RePairError::TerminalOutOfRange(t.0))
    }
}

/// Positions are `u32`, and the two largest values mark holes and separators.
const MAX_POSITIONS: usize = (SEP - 1) as usize;

/// Replaces the most frequent digram by a new rule until no digram occurs twice. New rule `k`
/// (its digram in `rules[k]`) gets symbol `RULE_BIT | (first_id + k)`.
fn repair(
    engine: &mut Engine,
    rules: &mut Vec<[u32; 2]>,
    first_id: u32,
) -> Result<(), RePairError> {
    while let Some(r) = engine.most_frequent() {
        let (a, b, _) = engine.pair(r);
        let id = first_id + rules.len() as u32;
        // Ids reaching the separator's and the hole's bit patterns are not representable.
        if id >= (SEP & !RULE_BIT) {
            return Err(RePairError::TooManyRules);
        }
        rules.push([a, b]);
        engine.replace_all(r, RULE_BIT | id);
    }
    Ok(())
}

fn final_sequences(engine: &Engine) -> Sequences {
    let mut top = Sequences::default();
    for stream in engine.streams() {
        top.push(stream);
    }
    top
}
