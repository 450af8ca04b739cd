//! Scheme 2 (Zhang–Gupta §4.2, Figures 4–6): path matching on the grammar itself.
//!
//! # Rule summaries
//!
//! The expansion of a rule `X` moves through nesting levels relative to where it starts. Its
//! effect on the automaton's stack `(s1, …, sl)` has three parts, which is the paper's level
//! vector with its `fentry`/`fexit`/`freturn` flags made explicit:
//!
//! * **down segments** `D[0..k]`: `X` returns `k` times below its starting level. The letters
//!   `X` gives the invocation at relative level `−i` before it returns form `D[i]`; they
//!   advance `s(l−i)`, may complete occurrences, and the state is then discarded;
//! * **through segment** `T`: the letters at level `−k` after the last return continue the
//!   invocation `s(l−k)`, whose state `X` updates;
//! * **pushed segments** `U[0..p]`: invocations `X` enters and does not leave. A pushed invocation
//!   of `F` starts in state 0, so its state after `X` is its segment's `pre`; other functions push
//!   [`NIL`] and their letters are dropped;
//! * **internal**: occurrences that do not depend on the incoming stack (inside invocations
//!   that begin and end within `X`, or inside pushed ones).
//!
//! Each segment is a [`Seg`] (prefix/suffix/internal flags plus a count), so a summary takes
//! O(k + p) space — at most the paper's O(MNL) per rule. Summaries are combined left to right
//! over a rule's body in O((k + p)·m) worst case; the table for `P` is built once in O(m²).
//! Rules are summarized bottom-up on demand, with an explicit stack, so scheme 4 summarizes only
//! the rules below the partitions it has to scan ("rule contains F" pruning per query).
//!
//! # Matching (Figure 5)
//!
//! The start rule's body is scanned with an explicit stack of KMP states, applying each
//! symbol's summary. The first occurrence is located by descending into the first symbol whose
//! summary reports an occurrence, re-applying child summaries from the stack saved before it,
//! until a terminal is reached: O(depth · body · MNL) once per query.
//!
//! Semantics under return without an open invocation: the stack simply stays empty, and the
//! summaries clamp in the same way (`k` pops of an `l`-deep stack leave `max(l − k, 0)`).

use wpp_grammar::symbol::SymbolKind;
use wpp_grammar::{Grammar, RuleId, Symbol};
use wpp_trace::Alphabet;

use super::{classify, Kind, Mode, PathQuery, StreamMatch, NIL};
use crate::error::QueryError;
use crate::pattern::{Pattern, Seg};

/// A pushed segment of an invocation of another function.
const DEAD: Seg = Seg {
    len: 0,
    count: 0,
    pre: u16::MAX,
    suf: 0,
    at: 0,
};

#[inline]
fn is_dead(s: &Seg) -> bool {
    s.pre == u16::MAX
}

/// Where a rule's summary lives in the segment arena: `D` at `start..start+k`, `T` at
/// `start+k`, `U` at `start+k+1..start+k+1+p`.
#[derive(Clone, Copy, Debug)]
struct RuleSum {
    start: u64,
    k: u64,
    p: u64,
    internal: u64,
}

const UNCOMPUTED: u64 = u64::MAX;

/// The summary being built for one rule body.
#[derive(Default)]
struct Acc {
    d: Vec<Seg>,
    t: Seg,
    u: Vec<Seg>,
    internal: u64,
}

impl Acc {
    fn clear(&mut self) {
        self.d.clear();
        self.t = Seg::EMPTY;
        self.u.clear();
        self.internal = 0;
    }

    /// Appends one terminal.
    fn terminal(&mut self, p: &Pattern, kind: Kind) {
        match kind {
            Kind::Block(c) => {
                let seg = p.letter_seg(c);
                match self.u.last_mut() {
                    Some(u) if is_dead(u) => {}
                    Some(u) => {
                        self.internal += p.advance(u.pre, seg).1;
                        *u = p.concat(*u, seg);
                    }
                    None => self.t = p.concat(self.t, seg),
                }
            }
            Kind::Enter(target) => self.u.push(if target { Seg::EMPTY } else { DEAD }),
            Kind::Leave => {
                if self.u.pop().is_none() {
                    self.d.push(self.t);
                    self.t = Seg::EMPTY;
                }
            }
            Kind::Neutral => {}
        }
    }

    /// Appends a summarized rule `(yd, yt, yu, internal)`.
    fn rule(&mut self, p: &Pattern, yd: &[Seg], yt: Seg, yu: &[Seg], internal: u64) {
        let pushed = self.u.len();
        for (i, &d) in yd.iter().enumerate() {
            if i < pushed {
                // The return ends an invocation this body pushed: all of it is internal.
                let u = self.u[pushed - 1 - i];
                if !is_dead(&u) {
                    self.internal += p.advance(u.pre, d).1;
                }
            } else if i == pushed {
                self.d.push(p.concat(self.t, d));
            } else {
                self.d.push(d);
            }
        }
        let k = yd.len();
        if k < pushed {
            let idx = pushed - 1 - k;
            self.u.truncate(idx + 1);
            let u = &mut self.u[idx];
            if !is_dead(u) {
                self.internal += p.advance(u.pre, yt).1;
                *u = p.concat(*u, yt);
            }
        } else {
            self.u.clear();
            self.t = if k == pushed {
                p.concat(self.t, yt)
            } else {
                yt
            };
        }
        self.u.extend_from_slice(yu);
        self.internal += internal;
    }
}

/// Scheme 2's per-query state: the pattern, terminal kinds and rule summaries.
pub struct Matcher<'g> {
    g: &'g Grammar,
    pattern: Pattern,
    kinds: Vec<Kind>,
    sums: Vec<RuleSum>,
    summarized: usize,
    segs: Vec<Seg>,
    acc: Acc,
    work: Vec<(RuleId, usize)>,
    snapshot: Vec<u16>,
}

impl<'g> Matcher<'g> {
    /// Compiles the query against a grammar. No rule is summarized yet.
    pub fn new(
        g: &'g Grammar,
        alphabet: &Alphabet,
        query: &PathQuery,
    ) -> Result<Matcher<'g>, QueryError> {
        super::check_alphabet(g, alphabet)?;
        let pattern = Pattern::new(&query.path)?;
        let kinds = classify(alphabet, query.function, &pattern);
        Ok(Matcher {
            g,
            pattern,
            kinds,
            sums: vec![
                RuleSum {
                    start: UNCOMPUTED,
                    k: 0,
                    p: 0,
                    internal: 0,
                };
                g.num_rules()
            ],
            summarized: 0,
            segs: Vec::new(),
            acc: Acc::default(),
            work: Vec::new(),
            snapshot: Vec::new(),
        })
    }

    /// Number of rules summarized so far (scheme 4 summarizes fewer).
    pub fn rules_summarized(&self) -> usize {
        self.summarized
    }

    /// Summarizes `rule` and every rule below it that is not yet summarized, post-order.
    fn ensure(&mut self, rule: RuleId) {
        if self.sums[rule.index()].start != UNCOMPUTED {
            return;
        }
        self.work.push((rule, 0));
        while let Some(&mut (r, ref mut cursor)) = self.work.last_mut() {
            let body = self.g.body(r);
            let pending = body[*cursor..].iter().position(|s| match s.kind() {
                SymbolKind::Rule(c) => self.sums[c.index()].start == UNCOMPUTED,
                SymbolKind::Terminal(_) => false,
            });
            match pending {
                Some(i) => {
                    *cursor += i + 1;
                    let SymbolKind::Rule(c) = body[*cursor - 1].kind() else {
                        unreachable!("pending symbols are rules")
                    };
                    self.work.push((c, 0));
                }
                None => {
                    self.work.pop();
                    self.summarize(r);
                }
            }
        }
    }

    /// Builds the summary of `r`, whose children are all summarized.
    fn summarize(&mut self, r: RuleId) {
        let mut acc = std::mem::take(&mut self.acc);
        acc.clear();
        for &sym in self.g.body(r) {
            match sym.kind() {
                SymbolKind::Terminal(t) => acc.terminal(&self.pattern, self.kinds[t.index()]),
                SymbolKind::Rule(c) => {
                    let s = self.sums[c.index()];
                    let base = s.start as usize;
                    let k = s.k as usize;
                    let segs = &self.segs[base..base + k + 1 + s.p as usize];
                    acc.rule(
                        &self.pattern,
                        &segs[..k],
                        segs[k],
                        &segs[k + 1..],
                        s.internal,
                    );
                }
            }
        }
        debug_assert_eq!(self.sums[r.index()].start, UNCOMPUTED, "summarized once");
        self.summarized += 1;
        self.sums[r.index()] = RuleSum {
            start: self.segs.len() as u64,
            k: acc.d.len() as u64,
            p: acc.u.len() as u64,
            internal: acc.internal,
        };
        self.segs.extend_from_slice(&acc.d);
        self.segs.push(acc.t);
        self.segs.extend_from_slice(&acc.u);
        self.acc = acc;
    }

    /// Applies a symbol to the explicit stack, summarizing it first if needed; returns the
    /// occurrences that end inside it.
    pub(crate) fn apply(&mut self, stack: &mut Vec<u16>, sym: Symbol) -> u64 {
        match sym.kind() {
            SymbolKind::Terminal(t) => self.apply_terminal(stack, self.kinds[t.index()]),
            SymbolKind::Rule(r) => {
                self.ensure(r);
                self.apply_rule(stack, r)
            }
        }
    }

    fn apply_terminal(&self, stack: &mut Vec<u16>, kind: Kind) -> u64 {
        match kind {
            Kind::Block(c) => match stack.last_mut() {
                Some(s) if *s != NIL => {
                    let (t, n) = self.pattern.advance(*s, self.pattern.letter_seg(c));
                    *s = t;
                    n
                }
                _ => 0,
            },
            Kind::Enter(target) => {
                stack.push(if target { 0 } else { NIL });
                0
            }
            Kind::Leave => {
                stack.pop();
                0
            }
            Kind::Neutral => 0,
        }
    }

    fn apply_rule(&self, stack: &mut Vec<u16>, r: RuleId) -> u64 {
        let s = self.sums[r.index()];
        let (base, k) = (s.start as usize, s.k as usize);
        let segs = &self.segs[base..base + k + 1 + s.p as usize];
        let l = stack.len();
        let mut n = s.internal;
        for (i, &d) in segs[..k].iter().enumerate().take(l) {
            let st = stack[l - 1 - i];
            if st != NIL {
                n += self.pattern.advance(st, d).1;
            }
        }
        if k < l {
            let st = &mut stack[l - 1 - k];
            if *st != NIL {
                let (t, c) = self.pattern.advance(*st, segs[k]);
                *st = t;
                n += c;
            }
        }
        stack.truncate(l.saturating_sub(k));
        stack.extend(
            segs[k + 1..]
                .iter()
                .map(|u| if is_dead(u) { NIL } else { u.pre }),
        );
        n
    }

    /// Scans `symbols` (a run of a start rule's body beginning at expanded position `offset`)
    /// from `stack`. Adds the occurrences to `count`; records the first one in `first` if it is
    /// still `None`. Returns `false` if the scan stopped at the first occurrence
    /// ([`Mode::First`]).
    pub(crate) fn scan(
        &mut self,
        stack: &mut Vec<u16>,
        symbols: &[Symbol],
        mut offset: u64,
        mode: Mode,
        first: &mut Option<u64>,
        count: &mut u64,
    ) -> bool {
        for &sym in symbols {
            if first.is_none() {
                let mut snap = std::mem::take(&mut self.snapshot);
                snap.clear();
                snap.extend_from_slice(stack);
                let n = self.apply(stack, sym);
                if n > 0 {
                    *first = Some(self.locate(&mut snap, sym, offset));
                    *count += n;
                    if mode == Mode::First {
                        self.snapshot = snap;
                        return false;
                    }
                }
                self.snapshot = snap;
            } else {
                *count += self.apply(stack, sym);
            }
            offset += self.g.symbol_len(sym);
        }
        true
    }

    /// The position of the first occurrence ending inside `sym` (which starts at `offset`),
    /// given the stack before it.
    fn locate(&mut self, stack: &mut Vec<u16>, mut sym: Symbol, mut offset: u64) -> u64 {
        let mut before = Vec::with_capacity(stack.len());
        'descend: loop {
            let SymbolKind::Rule(r) = sym.kind() else {
                return offset;
            };
            for &child in self.g.body(r) {
                before.clear();
                before.extend_from_slice(stack);
                if self.apply(stack, child) > 0 {
                    std::mem::swap(stack, &mut before);
                    sym = child;
                    continue 'descend;
                }
                offset += self.g.symbol_len(child);
            }
            unreachable!("a summary reported an occurrence that no child contains");
        }
    }
}

/// Scheme 2 on every thread of a grammar.
pub fn run(
    g: &Grammar,
    alphabet: &Alphabet,
    query: &PathQuery,
    mode: Mode,
) -> Result<Vec<StreamMatch>, QueryError> {
    let mut m = Matcher::new(g, alphabet, query)?;
    let mut out = Vec::with_capacity(g.starts().len());
    for start in g.starts() {
        let (mut first, mut count) = (None, 0);
        let mut stack = Vec::new();
        m.scan(
            &mut stack,
            g.body(start.rule),
            0,
            mode,
            &mut first,
            &mut count,
        );
        out.push(StreamMatch::new(start.thread, first, count, mode));
    }
    Ok(out)
}
