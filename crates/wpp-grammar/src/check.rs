//! Verifies SEQUITUR's two invariants on a finished [`Grammar`] (Larus §3.1).
//!
//! * **Digram uniqueness**: no digram occurs twice without overlap, over all rule bodies. Two
//!   occurrences overlap only inside one body at adjacent positions of a run like `aaa`; so
//!   `aaa` is allowed (occurrences at 0 and 1) but `aaaa` is not (0 and 2 do not overlap). Since
//!   any set of pairwise-overlapping occurrences has at most two members, the first occurrence
//!   seen is remembered and every later one must be the one right after it.
//! * **Rule utility**: every rule other than a start rule is referenced at least twice.
//!
//! Start rules must also be unreferenced, as [`StartRule`](crate::StartRule) requires. The check
//! is O(grammar symbols) time and memory; compressor tests run it on every grammar they build.

use rustc_hash::FxHashMap;

use crate::algorithm::Algorithm;
use crate::grammar::{Grammar, RuleId};
use crate::symbol::Symbol;

/// A violated invariant.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Violation {
    /// A digram occurs twice without overlapping.
    #[error("digram {digram:?} occurs at {first:?} and again at {second:?}")]
    DuplicateDigram {
        /// The two symbols.
        digram: (Symbol, Symbol),
        /// Rule and position of the first occurrence.
        first: (RuleId, usize),
        /// Rule and position of a non-overlapping repeat.
        second: (RuleId, usize),
    },
    /// A non-start rule is referenced fewer than twice.
    #[error("rule {} is referenced {uses} time(s)", rule.0)]
    UnderusedRule {
        /// The rule.
        rule: RuleId,
        /// Its number of references.
        uses: u32,
    },
    /// A start rule is referenced by another rule.
    #[error("start rule {} is referenced {uses} time(s)", rule.0)]
    StartReferenced {
        /// The rule.
        rule: RuleId,
        /// Its number of references.
        uses: u32,
    },
}

/// Checks digram uniqueness and rule utility; returns the first violation found.
pub fn check(g: &Grammar) -> Result<(), Violation> {
    check_rule_utility(g)?;
    check_digram_uniqueness(g)
}

/// Checks the invariants `algorithm` guarantees: both for the SEQUITUR family and the
/// frequency compressor, rule utility only for [`Algorithm::Phrase`].
pub fn check_algorithm(algorithm: Algorithm, g: &Grammar) -> Result<(), Violation> {
    check_rule_utility(g)?;
    if algorithm.has_unique_digrams() {
        check_digram_uniqueness(g)?;
    }
    Ok(())
}

/// Checks that no digram occurs twice without overlap.
pub fn check_digram_uniqueness(g: &Grammar) -> Result<(), Violation> {
    let mut first: FxHashMap<(Symbol, Symbol), (RuleId, usize)> = FxHashMap::default();
    for r in g.rules() {
        for (i, w) in g.body(r).windows(2).enumerate() {
            let digram = (w[0], w[1]);
            match first.get(&digram) {
                None => {
                    first.insert(digram, (r, i));
                }
                Some(&(r0, i0)) if r0 == r && i0 + 1 == i => {}
                Some(&f) => {
                    return Err(Violation::DuplicateDigram {
                        digram,
                        first: f,
                        second: (r, i),
                    })
                }
            }
        }
    }
    Ok(())
}

/// Checks that every non-start rule is referenced at least twice and start rules never.
pub fn check_rule_utility(g: &Grammar) -> Result<(), Violation> {
    let uses = g.reference_counts();
    let mut is_start = vec![false; g.num_rules()];
    for s in g.starts() {
        is_start[s.rule.index()] = true;
    }
    for r in g.rules() {
        let n = uses[r.index()];
        match (is_start[r.index()], n) {
            (true, 0) | (false, 2..) => {}
            (true, _) => return Err(Violation::StartReferenced { rule: r, uses: n }),
            (false, _) => return Err(Violation::UnderusedRule { rule: r, uses: n }),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grammar::StartRule;
    use proptest::prelude::*;
    use wpp_trace::{Terminal, ThreadId};

    fn t(x: u32) -> Symbol {
        Symbol::terminal(Terminal(x))
    }
    fn r(x: u32) -> Symbol {
        Symbol::rule(RuleId(x))
    }
    fn grammar(bodies: Vec<Vec<Symbol>>, start: u32) -> Grammar {
        let starts = vec![StartRule {
            thread: ThreadId(0),
            rule: RuleId(start),
        }];
        Grammar::new(10, bodies, starts).unwrap()
    }

    #[test]
    fn overlapping_run_of_three_is_allowed_but_four_is_not() {
        assert_eq!(check(&grammar(vec![vec![t(1), t(1), t(1)]], 0)), Ok(()));
        let e = check(&grammar(vec![vec![t(1), t(1), t(1), t(1)]], 0)).unwrap_err();
        assert_eq!(
            e,
            Violation::DuplicateDigram {
                digram: (t(1), t(1)),
                first: (RuleId(0), 0),
                second: (RuleId(0), 2)
            }
        );
    }

    #[test]
    fn digrams_repeated_across_rules_are_found() {
        let g = grammar(
            vec![vec![t(1), t(2), t(3)], vec![r(0), t(2), t(3), r(0)]],
            1,
        );
        assert!(matches!(
            check(&g),
            Err(Violation::DuplicateDigram {
                second: (RuleId(1), 1),
                ..
            })
        ));
    }

    #[test]
    fn rule_utility_counts_references() {
        let once = grammar(vec![vec![t(1), t(2)], vec![r(0), t(3)]], 1);
        assert_eq!(
            check(&once),
            Err(Violation::UnderusedRule {
                rule: RuleId(0),
                uses: 1
            })
        );
        let twice = grammar(vec![vec![t(1), t(2)], vec![r(0), t(3), r(0)]], 1);
        assert_eq!(check(&twice), Ok(()));
        let start_used = grammar(vec![vec![t(1), t(2)], vec![r(0), r(0)]], 0);
        assert!(matches!(
            check(&start_used),
            Err(Violation::StartReferenced { .. })
        ));
    }

    /// All pairs of occurrences: a violation is two occurrences of one digram that are not
    /// adjacent positions of one body.
    fn brute_force_has_duplicate(g: &Grammar) -> bool {
        let occurrences: Vec<(RuleId, usize, Symbol, Symbol)> = g
            .rules()
            .flat_map(|r| {
                let body = g.body(r);
                (0..body.len().saturating_sub(1)).map(move |i| (r, i, body[i], body[i + 1]))
            })
            .collect();
        occurrences
            .iter()
            .enumerate()
            .any(|(k, &(r1, i1, a1, b1))| {
                occurrences[k + 1..].iter().any(|&(r2, i2, a2, b2)| {
                    (a1, b1) == (a2, b2) && !(r1 == r2 && i1.abs_diff(i2) == 1)
                })
            })
    }

    proptest! {
        #[test]
        fn digram_check_agrees_with_brute_force(
            raw in prop::collection::vec(prop::collection::vec((any::<bool>(), 0u32..3), 0..7), 1..5),
        ) {
            // Rule i may refer only to rules below i; the last rule is the start.
            let bodies: Vec<Vec<Symbol>> = raw
                .iter()
                .enumerate()
                .map(|(i, body)| {
                    body.iter()
                        .map(|&(is_rule, x)| match i {
                            0 => t(x),
                            _ if is_rule => r(x % i as u32),
                            _ => t(x),
                        })
                        .collect()
                })
                .collect();
            let g = grammar(bodies, raw.len() as u32 - 1);
            prop_assert_eq!(check_digram_uniqueness(&g).is_err(), brute_force_has_duplicate(&g));
        }
    }
}
