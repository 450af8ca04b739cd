//! Scheme 1 (Zhang–Gupta §4.1): expand each thread's start rule and run the nested-level
//! automaton over the terminals. O(n) time for an n-event trace, O(MNL) space besides the
//! expansion stack. [`match_terminals`] takes an already decompressed stream so that a benchmark
//! can time decompression and matching separately, as the paper's Figure 13 does.

use wpp_grammar::Grammar;
use wpp_trace::{Alphabet, Terminal};

use super::{classify, Automaton, Kind, Mode, PathQuery, StreamMatch};
use crate::error::QueryError;
use crate::expand::for_each_terminal;
use crate::pattern::Pattern;

/// Runs the automaton over decompressed terminals (`kinds` from [`classify`]).
pub fn match_terminals(
    pattern: &Pattern,
    kinds: &[Kind],
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
    let mut all = run_many(g, alphabet, std::slice::from_ref(query), mode)?;
    Ok(all.pop().unwrap_or_default())
}

/// Scheme 1 for several paths at once: one expansion feeds one automaton per query, so the
/// decompression cost is paid once. Returns one answer list per query, in order.
pub fn run_many(
    g: &Grammar,
    alphabet: &Alphabet,
    queries: &[PathQuery],
    mode: Mode,
) -> Result<Vec<Vec<StreamMatch>>, QueryError> {
    super::check_alphabet(g, alphabet)?;
    let patterns = queries
        .iter()
        .map(|q| Pattern::new(&q.path))
        .collect::<Result<Vec<_>, _>>()?;
    let kinds: Vec<Vec<Kind>> = queries
        .iter()
        .zip(&patterns)
        .map(|(q, p)| classify(alphabet, q.function, p))
        .collect();
    let mut out = vec![Vec::with_capacity(g.starts().len()); queries.len()];
    for start in g.starts() {
        let mut autos: Vec<Automaton> = patterns.iter().map(Automaton::new).collect();
        let mut open = autos.len();
        for_each_terminal(g, start.rule, |t| {
            for (a, k) in autos.iter_mut().zip(&kinds) {
                let fresh = a.first().is_none();
                if a.feed(k[t.index()]) && fresh && mode == Mode::First {
                    open -= 1;
                }
            }
            !(mode == Mode::First && open == 0)
        });
        for (o, a) in out.iter_mut().zip(&autos) {
            o.push(StreamMatch::new(start.thread, a.first(), a.count(), mode));
        }
    }
    Ok(out)
}
