//! Helpers shared by the integration tests: a tiny grammar notation for paper examples and a
//! canonical form that compares grammars up to rule renaming.

#![allow(dead_code)]

use std::collections::HashMap;

use wpp_grammar::symbol::SymbolKind;
use wpp_grammar::{compress, Algorithm, Grammar, RuleId, StartRule, Symbol};
use wpp_trace::{Terminal, ThreadId};

/// Terminals of a byte string (each byte is its own terminal).
pub fn terminals(s: &[u8]) -> Vec<Terminal> {
    s.iter().map(|&c| Terminal(u32::from(c))).collect()
}

/// Compresses one byte string as thread 0.
pub fn compress_bytes(algorithm: Algorithm, s: &[u8]) -> Grammar {
    compress(algorithm, &[&terminals(s)]).unwrap()
}

/// Parses `"S -> C2C; A -> 11; C -> AA1"`: upper-case letters are rules, any other character a
/// terminal (its byte value); `S` is the start rule of thread 0.
pub fn parse(spec: &str) -> Grammar {
    let rules: HashMap<char, Vec<char>> = spec
        .split(';')
        .map(|r| {
            let (lhs, rhs) = r.split_once("->").unwrap();
            (
                lhs.trim().chars().next().unwrap(),
                rhs.trim().chars().collect(),
            )
        })
        .collect();
    let mut ids = HashMap::new();
    let mut bodies = Vec::new();
    fn visit(
        c: char,
        rules: &HashMap<char, Vec<char>>,
        ids: &mut HashMap<char, u32>,
        bodies: &mut Vec<Vec<Symbol>>,
    ) -> u32 {
        if let Some(&id) = ids.get(&c) {
            return id;
        }
        let body = rules[&c]
            .iter()
            .map(|&s| {
                if s.is_ascii_uppercase() {
                    Symbol::rule(RuleId(visit(s, rules, ids, bodies)))
                } else {
                    Symbol::terminal(Terminal(s as u32))
                }
            })
            .collect();
        bodies.push(body);
        let id = bodies.len() as u32 - 1;
        ids.insert(c, id);
        id
    }
    let start = visit('S', &rules, &mut ids, &mut bodies);
    let starts = vec![StartRule {
        thread: ThreadId(0),
        rule: RuleId(start),
    }];
    Grammar::new(256, bodies, starts).unwrap()
}

/// The grammar reachable from start rule `i` as text, rules named `S`, `A`, `B`, … in order of
/// first appearance (pre-order from the start), terminals as characters; equal strings mean
/// equal grammars up to rule renaming.
pub fn canon(g: &Grammar, i: usize) -> String {
    let mut names: HashMap<RuleId, char> = HashMap::new();
    let mut order = vec![g.starts()[i].rule];
    names.insert(order[0], 'S');
    let mut next_name = b'A';
    let mut k = 0;
    while k < order.len() {
        for &s in g.body(order[k]) {
            if let SymbolKind::Rule(r) = s.kind() {
                names.entry(r).or_insert_with(|| {
                    order.push(r);
                    let n = next_name as char;
                    next_name += if next_name == b'R' { 2 } else { 1 };
                    n
                });
            }
        }
        k += 1;
    }
    let rule_text = |r: RuleId| -> String {
        g.body(r)
            .iter()
            .map(|s| match s.kind() {
                SymbolKind::Rule(r) => names[&r],
                SymbolKind::Terminal(t) => char::from_u32(t.0).unwrap_or('?'),
            })
            .collect()
    };
    order
        .iter()
        .map(|&r| format!("{} -> {}", names[&r], rule_text(r)))
        .collect::<Vec<_>>()
        .join("; ")
}

/// Terminals with these numbers.
pub fn terminals_u32(s: &[u32]) -> Vec<Terminal> {
    s.iter().map(|&x| Terminal(x)).collect()
}

/// A `.wpp`'s events per thread, each start rule expanded.
pub fn expand(
    wpp: &wpp_grammar::file::WppFile,
) -> std::collections::BTreeMap<ThreadId, Vec<wpp_trace::Event>> {
    let g = &wpp.grammar;
    let mut out = std::collections::BTreeMap::new();
    for s in g.starts() {
        let events = wpp_grammar::expand::Expander::new(g, s.rule)
            .map(|t| wpp.alphabet.event(t).unwrap())
            .collect();
        assert!(out.insert(s.thread, events).is_none(), "two start rules");
    }
    out
}
