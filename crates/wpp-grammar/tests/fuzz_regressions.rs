//! Regressions found by (or while building) the fuzz targets in `fuzz/` (see
//! `fuzz/README.md`). Each test pins the fixed behaviour.

use wpp_grammar::expand::Expander;
use wpp_grammar::file::{WppError, WppFile};
use wpp_grammar::{Algorithm, Grammar, RuleId, StartRule, Symbol};
use wpp_trace::{Alphabet, BlockId, Event, ProgramDb, Terminal, ThreadId};

/// `R0 → ε`, `R(i+1) → Ri Ri` for `depth` rules, and a start rule `S → t0 R(depth) R(depth)`:
/// every rule but `S` expands to nothing, yet walking `S` visits `2^(depth+1)` empty bodies.
fn doubling_empty_rules(depth: u32) -> WppFile {
    let r = |i| Symbol::rule(RuleId(i));
    let mut bodies = vec![vec![]];
    for i in 0..depth {
        bodies.push(vec![r(i), r(i)]);
    }
    bodies.push(vec![Symbol::terminal(Terminal(0)), r(depth), r(depth)]);
    let starts = vec![StartRule {
        thread: ThreadId(0),
        rule: RuleId(depth + 1),
    }];
    WppFile {
        program: ProgramDb::default(),
        alphabet: Alphabet::from_events(vec![Event::Block(BlockId(0))]).unwrap(),
        grammar: Grammar::new(1, bodies, starts).unwrap(),
        algorithm: Algorithm::Sequitur,
        events: 1,
        extra: Vec::new(),
    }
}

/// `wpp_file`: a rule whose expansion is empty, referenced from other rules, let a file of a
/// few hundred bytes make expansion walk 2^62 empty bodies before its second terminal — a hang
/// for `wpp decompress` and every query. The reader now rejects any reference to a rule that
/// expands to nothing, naming the referring rule and the offset of the symbol.
#[test]
fn a_reference_to_an_empty_rule_is_rejected() {
    let bytes = doubling_empty_rules(61).to_bytes().unwrap();
    assert!(bytes.len() < 600, "{}", bytes.len());
    let e = WppFile::from_bytes(&bytes).unwrap_err();
    assert!(
        matches!(
            e,
            WppError::EmptyRuleReference {
                rule: 1,
                target: 0,
                ..
            }
        ),
        "{e:?}"
    );
    let msg = e.to_string();
    assert!(
        msg.contains("rule 1 refers to rule 0") && msg.contains("byte offset"),
        "{msg}"
    );

    // The smallest case: one empty rule used twice by the start rule.
    let e = WppFile::from_bytes(&doubling_empty_rules(0).to_bytes().unwrap()).unwrap_err();
    assert!(
        matches!(
            e,
            WppError::EmptyRuleReference {
                rule: 1,
                target: 0,
                ..
            }
        ),
        "{e:?}"
    );
}

/// An empty *start* rule (a thread that recorded nothing) is still a valid file, and expands
/// to nothing.
#[test]
fn an_empty_start_rule_is_still_accepted() {
    let grammar = Grammar::new(
        0,
        vec![Vec::<Symbol>::new()],
        vec![StartRule {
            thread: ThreadId(3),
            rule: RuleId(0),
        }],
    )
    .unwrap();
    let file = WppFile {
        program: ProgramDb::default(),
        alphabet: Alphabet::new(),
        grammar,
        algorithm: Algorithm::Sequitur,
        events: 0,
        extra: Vec::new(),
    };
    let back = WppFile::from_bytes(&file.to_bytes().unwrap()).unwrap();
    assert_eq!(back, file);
    assert_eq!(Expander::new(&back.grammar, RuleId(0)).count(), 0);
}
