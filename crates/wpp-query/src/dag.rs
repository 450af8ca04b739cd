//! The WPP as a DAG (Larus §3.3): node frequencies, subpath frequencies counted on the grammar,
//! "executes before", and execution context.
//!
//! A grammar is a DAG whose interior nodes are rules and whose edges are the symbol
//! occurrences in rule bodies, ordered as in the body. Rules are numbered bottom-up, so every
//! pass below is a single loop over rule ids, upwards (children first) or downwards (parents
//! first); none expands the trace.
//!
//! * **Node frequency** ([`rule_frequencies`]): the number of DAG paths from the start rules
//!   to a node, i.e. how many times the rule is used in the full expansion. One downward pass,
//!   O(|G|).
//! * **Subpath frequency** ([`Subpaths::count`]): every occurrence of a string `q` (length `m`)
//!   has a unique lowest rule containing it whose body does not contain it inside one child
//!   rule. So the occurrences in rule `r` are those *crossing* boundaries of `r`'s body plus,
//!   for each child occurrence, the child's occurrences. Crossing occurrences are found by
//!   matching `q` (KMP) against the body with each child replaced by its first and last
//!   `m − 1` terminals (a separator between them when the child is longer than `2(m − 1)`).
//!   O(|G|·m) time; prefixes and suffixes are freed once their last parent is done, so space is
//!   O(m) per partially processed rule. First and last occurrences come out of the same pass.
//! * **Executes before** ([`Subpaths::executes_before`]): `p` executes before `q` in a thread if
//!   some occurrence of `p` ends before some occurrence of `q` starts: first end of `p` < last
//!   start of `q` — for single terminals Larus's "common ancestor in which an inorder traversal
//!   reaches p before q".
//! * **Execution context** ([`context`], [`call_stacks`]): the terminals around a position (the
//!   paths executed before and after, Larus §3.3) by a descent along rule lengths, and the call
//!   stack at positions by a pass over the start rule's body ([`crate::stack`]).

use wpp_grammar::symbol::SymbolKind;
use wpp_grammar::{Grammar, RuleId, Symbol};
use wpp_trace::{Terminal, ThreadId};

use crate::error::QueryError;
use crate::expand::expand_range;

/// How many times each rule occurs in the expansion of all start rules (saturating).
pub fn rule_frequencies(g: &Grammar) -> Vec<u64> {
    let mut freq = vec![0u64; g.num_rules()];
    for s in g.starts() {
        freq[s.rule.index()] = freq[s.rule.index()].saturating_add(1);
    }
    for r in g.rules().rev() {
        let f = freq[r.index()];
        if f == 0 {
            continue;
        }
        for s in g.body(r) {
            if let SymbolKind::Rule(c) = s.kind() {
                freq[c.index()] = freq[c.index()].saturating_add(f);
            }
        }
    }
    freq
}

/// How many times each terminal occurs in the expansion (saturating).
pub fn terminal_frequencies(g: &Grammar, rule_freq: &[u64]) -> Vec<u64> {
    let mut out = vec![0u64; g.num_terminals() as usize];
    for r in g.rules() {
        for s in g.body(r) {
            if let SymbolKind::Terminal(t) = s.kind() {
                out[t.index()] = out[t.index()].saturating_add(rule_freq[r.index()]);
            }
        }
    }
    out
}

/// Occurrences of one subpath in one thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct StreamCount {
    /// The thread.
    pub thread: u32,
    /// Number of occurrences (overlapping ones included).
    pub count: u64,
    /// Start position of the first occurrence.
    pub first: Option<u64>,
    /// Start position of the last occurrence.
    pub last: Option<u64>,
}

/// Subpath queries counted on the grammar.
pub struct Subpaths<'g> {
    g: &'g Grammar,
}

/// Per-rule results of one subpath.
#[derive(Clone, Copy)]
struct Occ {
    count: u64,
    first: Option<u64>,
    last: Option<u64>,
}

const SEP: u32 = u32::MAX;

fn kmp_failure(q: &[Terminal]) -> Vec<usize> {
    let mut fail = vec![0usize; q.len() + 1];
    let mut k = 0;
    for i in 1..q.len() {
        while k > 0 && q[i] != q[k] {
            k = fail[k];
        }
        if q[i] == q[k] {
            k += 1;
        }
        fail[i + 1] = k;
    }
    fail
}

impl<'g> Subpaths<'g> {
    /// Queries on `g`.
    pub fn new(g: &'g Grammar) -> Self {
        Subpaths { g }
    }

    /// Occurrences of `q` in each thread.
    pub fn count(&self, q: &[Terminal]) -> Result<Vec<StreamCount>, QueryError> {
        if q.is_empty() {
            return Err(QueryError::BadQuery("the subpath is empty".into()));
        }
        let occ = self.occurrences(q);
        Ok(self
            .g
            .starts()
            .iter()
            .map(|s| {
                let o = occ[s.rule.index()];
                StreamCount {
                    thread: s.thread.0,
                    count: o.count,
                    first: o.first,
                    last: o.last,
                }
            })
            .collect())
    }

    /// Whether, in `thread`, some occurrence of `p` ends before some occurrence of `q` starts.
    pub fn executes_before(
        &self,
        thread: ThreadId,
        p: &[Terminal],
        q: &[Terminal],
    ) -> Result<bool, QueryError> {
        let find = |x: &[Terminal]| -> Result<Option<StreamCount>, QueryError> {
            Ok(self.count(x)?.into_iter().find(|s| s.thread == thread.0))
        };
        let (Some(a), Some(b)) = (find(p)?, find(q)?) else {
            return Ok(false);
        };
        Ok(match (a.first, b.last) {
            (Some(pf), Some(ql)) => pf + p.len() as u64 <= ql,
            _ => false,
        })
    }

    /// Bottom-up pass computing each rule's occurrences of `q`.
    fn occurrences(&self, q: &[Terminal]) -> Vec<Occ> {
        let g = self.g;
        let keep = q.len() - 1;
        let fail = kmp_failure(q);
        let mut remaining = g.reference_counts();
        let mut pre: Vec<Vec<Terminal>> = vec![Vec::new(); g.num_rules()];
        let mut suf: Vec<Vec<Terminal>> = vec![Vec::new(); g.num_rules()];
        let mut occ = vec![
            Occ {
                count: 0,
                first: None,
                last: None
            };
            g.num_rules()
        ];
        // The body with children abbreviated: (terminal or SEP, region, offset in the rule).
        let mut buf: Vec<(u32, u32, u64)> = Vec::new();
        for r in g.rules() {
            buf.clear();
            let mut o = Occ {
                count: 0,
                first: None,
                last: None,
            };
            let mut at = 0u64;
            for (region, &s) in g.body(r).iter().enumerate() {
                let region = region as u32;
                match s.kind() {
                    SymbolKind::Terminal(t) => buf.push((t.0, u32::MAX, at)),
                    SymbolKind::Rule(c) => {
                        let len = g.expanded_len(c);
                        abbreviate(
                            &pre[c.index()],
                            &suf[c.index()],
                            len,
                            keep,
                            region,
                            at,
                            &mut buf,
                        );
                        let co = occ[c.index()];
                        o.count = o.count.saturating_add(co.count);
                        o.first = min_opt(o.first, co.first.map(|f| at + f));
                        o.last = max_opt(o.last, co.last.map(|l| at + l));
                    }
                }
                at += g.symbol_len(s);
            }
            crossing(q, &fail, &buf, &mut o);
            occ[r.index()] = o;
            pre[r.index()] = edge(g, r, &pre, keep, false);
            suf[r.index()] = edge(g, r, &suf, keep, true);
            release(g, r, &mut remaining, &mut pre, &mut suf);
        }
        occ
    }
}

/// Appends child `c`'s abbreviation: its whole expansion if at most `2·keep` long, else its
/// first and last `keep` terminals around a separator. Terminals of rule children carry the
/// child's region; terminals directly in the body carry `u32::MAX` (never "inside a child").
fn abbreviate(
    pre: &[Terminal],
    suf: &[Terminal],
    len: u64,
    keep: usize,
    region: u32,
    at: u64,
    buf: &mut Vec<(u32, u32, u64)>,
) {
    let k = keep as u64;
    if len <= 2 * k {
        let tail = (2 * k).saturating_sub(len).min(suf.len() as u64) as usize;
        let whole = pre
            .iter()
            .chain(if len > k { &suf[tail..] } else { &[][..] });
        for (i, t) in whole.enumerate() {
            buf.push((t.0, region, at + i as u64));
        }
    } else {
        for (i, t) in pre.iter().enumerate() {
            buf.push((t.0, region, at + i as u64));
        }
        buf.push((SEP, region, 0));
        for (i, t) in suf.iter().enumerate() {
            buf.push((t.0, region, at + len - k + i as u64));
        }
    }
}

/// Counts matches of `q` in the abbreviated body that are not inside one child.
fn crossing(q: &[Terminal], fail: &[usize], buf: &[(u32, u32, u64)], o: &mut Occ) {
    let m = q.len();
    let mut k = 0usize;
    for (e, &(t, region, _)) in buf.iter().enumerate() {
        if t == SEP {
            k = 0;
            continue;
        }
        while k > 0 && q[k].0 != t {
            k = fail[k];
        }
        if q[k].0 == t {
            k += 1;
        }
        if k == m {
            let (_, start_region, start) = buf[e + 1 - m];
            if start_region != region || region == u32::MAX {
                o.count = o.count.saturating_add(1);
                o.first = min_opt(o.first, Some(start));
                o.last = max_opt(o.last, Some(start));
            }
            k = fail[m];
        }
    }
}

/// The first (or, with `from_end`, last) `keep` terminals of rule `r`, from its children's.
fn edge(
    g: &Grammar,
    r: RuleId,
    parts: &[Vec<Terminal>],
    keep: usize,
    from_end: bool,
) -> Vec<Terminal> {
    let mut out = Vec::with_capacity(keep);
    let body = g.body(r);
    let take = |s: &Symbol, out: &mut Vec<Terminal>| {
        let need = keep - out.len();
        match s.kind() {
            SymbolKind::Terminal(t) => out.push(t),
            SymbolKind::Rule(c) => {
                let p = &parts[c.index()];
                if from_end {
                    out.extend(p.iter().rev().take(need));
                } else {
                    out.extend(p.iter().take(need));
                }
            }
        }
    };
    if from_end {
        for s in body.iter().rev() {
            if out.len() == keep {
                break;
            }
            take(s, &mut out);
        }
        out.reverse();
    } else {
        for s in body {
            if out.len() == keep {
                break;
            }
            take(s, &mut out);
        }
    }
    out
}

/// Frees the prefixes and suffixes of `r`'s children whose last parent is `r`.
fn release(
    g: &Grammar,
    r: RuleId,
    remaining: &mut [u32],
    pre: &mut [Vec<Terminal>],
    suf: &mut [Vec<Terminal>],
) {
    for s in g.body(r) {
        if let SymbolKind::Rule(c) = s.kind() {
            remaining[c.index()] -= 1;
            if remaining[c.index()] == 0 {
                pre[c.index()] = Vec::new();
                suf[c.index()] = Vec::new();
            }
        }
    }
}

fn min_opt(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

fn max_opt(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.max(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

/// The execution context of positions `pos..pos + len` of `rule`: up to `before` terminals
/// before and `after` terminals after.
pub fn context(
    g: &Grammar,
    rule: RuleId,
    pos: u64,
    len: u64,
    before: u64,
    after: u64,
) -> (Vec<Terminal>, Vec<Terminal>) {
    let (mut b, mut a) = (Vec::new(), Vec::new());
    expand_range(g, rule, pos.saturating_sub(before), pos, &mut b);
    let end = pos.saturating_add(len);
    expand_range(g, rule, end, end.saturating_add(after), &mut a);
    (b, a)
}

pub use crate::stack::call_stacks;
