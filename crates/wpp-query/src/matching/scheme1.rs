//! Scheme 1 (Zhang–Gupta §4.1): expand each thread's start rule and run the nested-level
//! automaton over the terminals. O(n) time for an n-event trace, O(MNL) space besides the
//! expansion stack. [`match_terminals`] takes an already decompressed stream so that a benchmark
//! can time decompression and matching separately, as the paper's Figure 13 does.

use wpp_grammar::Grammar;
use wpp_trace::{Alphabet, Terminal};

use super::{classify, Automaton, Mode, PathQuery, StreamMatch};
use crate::error::QueryError;
use crate::expand::for_each_terminal;
use crate::pattern::Pattern;

/// Runs the automaton over decompressed terminals (`kinds` from [`classify`]).
pub fn match_terminals(
    pattern: &Pattern,
    kinds: &[super::Kind],
    terminals: &[Terminal],
    mode: Mode,
) -> (Option<u64>, u64) {
    let mut a = Automaton::new(pattern);
    for &t in terminals {
        if a.feed(kinds[t.index()]) && mode == Mode::First {
            break;
        }
    }
    (a.first(), a.count())
}

/// Scheme 1 on every thread of a grammar, expanding and matching in one streaming pass.
pub fn run(
    g: &Grammar,
    alphabet: &Alphabet,
    query: &PathQuery,
    mode: Mode,
) -> Result<Vec<StreamMatch>, QueryError> {
    let pattern = Pattern::new(&query.path)?;
    let kinds = classify(alphabet, query.function, &pattern);
    let mut out = Vec::with_capacity(g.starts().len());
    for start in g.starts() {
        let mut a = Automaton::new(&pattern);
        for_each_terminal(g, start.rule, |t| {
            !(a.feed(kinds[t.index()]) && mode == Mode::First)
        });
        out.push(StreamMatch::new(start.thread, a.first(), a.count(), mode));
    }
    Ok(out)
}
