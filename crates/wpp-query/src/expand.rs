//! Expansion helpers the queries need: the terminals of a rule in order (scheme 1, index
//! construction), a range of positions (execution context) — without recursion, so deep
//! grammars cannot overflow the call stack.

use wpp_grammar::symbol::SymbolKind;
use wpp_grammar::{Grammar, RuleId, Symbol};
use wpp_trace::Terminal;

/// Calls `f` on every terminal of `rule`'s expansion, in order. Stops early and returns
/// `false` as soon as `f` returns `false`.
pub fn for_each_terminal(g: &Grammar, rule: RuleId, mut f: impl FnMut(Terminal) -> bool) -> bool {
    let mut stack: Vec<(RuleId, usize)> = vec![(rule, 0)];
    while let Some(top) = stack.last_mut() {
        let body = g.body(top.0);
        let Some(&sym) = body.get(top.1) else {
            stack.pop();
            continue;
        };
        top.1 += 1;
        match sym.kind() {
            SymbolKind::Terminal(t) => {
                if !f(t) {
                    return false;
                }
            }
            SymbolKind::Rule(r) => stack.push((r, 0)),
        }
    }
    true
}

/// Appends the terminals at positions `start..end` of `rule`'s expansion to `out` (clamped to
/// the expansion), descending only into the rules that overlap the range.
pub fn expand_range(g: &Grammar, rule: RuleId, start: u64, end: u64, out: &mut Vec<Terminal>) {
    let end = end.min(g.expanded_len(rule));
    if start >= end {
        return;
    }
    // (symbol, absolute position of its first terminal)
    let mut stack: Vec<(Symbol, u64)> = vec![(Symbol::rule(rule), 0)];
    while let Some((sym, at)) = stack.pop() {
        let len = g.symbol_len(sym);
        if at + len <= start || at >= end {
            continue;
        }
        match sym.kind() {
            SymbolKind::Terminal(t) => out.push(t),
            SymbolKind::Rule(r) => {
                let mut pos = at + len;
                for &child in g.body(r).iter().rev() {
                    pos -= g.symbol_len(child);
                    stack.push((child, pos));
                }
            }
        }
    }
}

/// The whole expansion of `rule` (tests and small inputs).
pub fn expand(g: &Grammar, rule: RuleId) -> Vec<Terminal> {
    let mut out = Vec::new();
    for_each_terminal(g, rule, |t| {
        out.push(t);
        true
    });
    out
}
