//! SEQUITUR and SEQUITUR(1): online, linear-time grammar compression (Nevill-Manning and Witten
//! 1997; Larus §3.1 and Figure 3, look-ahead variant §3.2).
//!
//! # The algorithm
//!
//! Symbols are appended to a stream's start rule one at a time. After each append the grammar is
//! repaired until two invariants hold again:
//!
//! * **digram uniqueness** — no pair of adjacent symbols occurs twice without overlapping. A
//!   repeated digram is replaced by a rule: an existing rule whose whole body is the digram, or
//!   a new one.
//! * **rule utility** — every rule other than a start rule is referenced at least twice; a rule
//!   left with one reference is inlined.
//!
//! **SEQUITUR(1)** (Larus §3.2) looks one symbol ahead before reducing the duplicate digram
//! `x y` that ends a start rule: if `y l` (with `l` the next input symbol) is the whole body of an
//! existing rule, it reads `l` and applies that rule instead. On `11111211111` this yields
//! `S → C2C, A → 11, C → AA1` where plain SEQUITUR yields `S → AB2BA, A → 11, B → A1`. To
//! know the look-ahead, the digram ending a start rule is checked when the stream's *next* symbol
//! arrives (or at [`Sequitur::finish`]).
//!
//! # Data structures
//!
//! * **Arena** — every symbol is a 12-byte node (`sym`, `prev`, `next` as `u32` indices) in
//!   one `Vec`. Each rule body is a circular doubly linked list through a *guard* node, whose
//!   `sym` names the rule. Freed nodes go on an intrusive free list and are reused, so after
//!   warm-up no input symbol allocates.
//! * **Digram index** — an open-addressing hash table keyed by the symbol pair (`table.rs`).
//! * **Rules** — a slot per rule with its guard and reference count; freed slots are recycled.
//! * **Work stack** — nodes whose digram (the node and its successor) is new and must be
//!   checked. Figure 3's inner loop is driven by this stack rather than by recursion, so deep
//!   cascades cannot overflow the call stack, and checking is idempotent: a node whose digram is
//!   already the indexed occurrence, or that was freed meanwhile, is skipped.
//!
//! A symbol packs a terminal (`< 2^31`), a rule reference (`2^31 | r`) or a guard
//! (`2^31 | 2^30 | r`), so telling them apart is one comparison.
//!
//! # Streams
//!
//! Each thread's events form a stream with its own start rule; all streams share the digram
//! index and the rules, so a loop body executed by two threads becomes one rule. Digrams never
//! span streams because each start rule is its own guarded list. A start rule is never reused as
//! an ordinary rule even when its whole body equals a repeated digram.
//!
//! # Complexity
//!
//! Amortized O(1) per input symbol (Nevill-Manning and Witten's linearity argument; the work
//! stack changes the order of checks, not their number). Memory is 12 bytes per live node
//! (grammar symbols plus one guard per rule; the arena grows by half, not by doubling), 11–21
//! bytes per indexed digram, and 8 bytes per rule slot: on synthetic control-flow traces about
//! 25–30 bytes per grammar symbol in all.
//!
//! # Limits
//!
//! The input length is unbounded: nodes of rules that die return to a free list, so the arena
//! holds only the live grammar. The arena is capped at 2^31 − 2^22 nodes (the headroom covers the
//! few nodes one push's cascade of repairs can allocate) and 2^28 streams (the phrase compressor
//! makes each distinct phrase a stream), which keeps node indices below 2^32 − 2 and rule ids
//! below 2^30 − 1 (a stream's rule takes at least one node, any other rule three, so there are
//! at most 2^28 + 2^31 / 3 rules);
//! exceeding them is an error, not a panic.

mod table;

use table::DigramTable;
use wpp_trace::{Terminal, ThreadId};

use crate::grammar::{Grammar, RuleId, StartRule};
use crate::symbol::Symbol;

const RULE: u32 = 1 << 31;
const GUARD: u32 = RULE | (1 << 30);
const FREE: u32 = u32::MAX;
const NIL: u32 = u32::MAX;
/// `uses` of a start rule, which no rule references.
const START: u32 = u32::MAX;
const MAX_NODES: usize = (1 << 31) - (1 << 22);
const MAX_STREAMS: usize = 1 << 28;

/// One symbol of a rule body, or a rule's guard.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Node {
    sym: u32,
    prev: u32,
    next: u32,
}

#[derive(Clone, Copy, Debug)]
struct RuleSlot {
    guard: u32,
    uses: u32,
}

#[derive(Clone, Copy, Debug)]
struct Stream {
    thread: ThreadId,
    rule: u32,
    /// SEQUITUR(1): the digram ending the start rule waits for the look-ahead symbol.
    end_pending: bool,
}

/// The look-ahead in force while the work stack drains.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lookahead {
    /// Plain SEQUITUR, or the end of input: check everything now.
    Off,
    /// SEQUITUR(1) before appending this terminal to the current stream.
    Known(u32),
    /// SEQUITUR(1) after appending: defer a duplicate digram ending the current stream.
    Unknown,
}

/// Which member of the SEQUITUR family a [`Sequitur`] runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Variant {
    /// Nevill-Manning and Witten's algorithm (Larus §3.1).
    #[default]
    Sequitur,
    /// SEQUITUR(1), with one symbol of look-ahead (Larus §3.2).
    Sequitur1,
}

/// A stream of a [`Sequitur`] compressor, as returned by [`Sequitur::add_stream`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct StreamId(u32);

impl StreamId {
    /// The stream's position in order of creation.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// Why a symbol could not be pushed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SequiturError {
    /// Terminals must be below 2^31.
    #[error("terminal {0} is not below 2^31")]
    TerminalOutOfRange(u32),
    /// The grammar under construction reached 2^31 − 2^22 live symbols.
    #[error("the grammar grew past 2^31 - 2^22 symbols; split the trace")]
    GrammarTooLarge,
    /// More than 2^28 streams.
    #[error("more than 2^28 streams")]
    TooManyStreams,
    /// The stream id belongs to another compressor.
    #[error("stream {0} does not exist")]
    UnknownStream(u32),
}

/// An online SEQUITUR / SEQUITUR(1) compressor over one or more streams.
///
/// ```
/// use wpp_grammar::sequitur::{Sequitur, Variant};
/// use wpp_trace::{Terminal, ThreadId};
///
/// let mut s = Sequitur::new(Variant::Sequitur);
/// let main = s.add_stream(ThreadId(0)).unwrap();
/// for &c in b"abcabcabc" {
///     s.push(main, Terminal(u32::from(c))).unwrap();
/// }
/// let g = s.finish();
/// assert_eq!(g.num_rules(), 2); // S → AAA, A → abc
/// ```
pub struct Sequitur {
    variant: Variant,
    nodes: Vec<Node>,
    free_nodes: u32,
    rules: Vec<RuleSlot>,
    free_rules: Vec<u32>,
    table: DigramTable,
    streams: Vec<Stream>,
    work: Vec<u32>,
    /// The stream being pushed to and its guard, for SEQUITUR(1)'s end-of-stream tests.
    current: usize,
    current_guard: u32,
    lookahead: Lookahead,
    /// SEQUITUR(1): the last node of the current stream must be joined with the look-ahead.
    forced: Option<u32>,
    pushed: u64,
    num_terminals: u32,
}

#[inline]
fn is_guard(sym: u32) -> bool {
    sym >= GUARD
}

#[inline]
fn is_rule_ref(sym: u32) -> bool {
    sym & GUARD == RULE
}

impl Sequitur {
    /// An empty compressor without streams.
    pub fn new(variant: Variant) -> Sequitur {
        Sequitur {
            variant,
            nodes: Vec::new(),
            free_nodes: NIL,
            rules: Vec::new(),
            free_rules: Vec::new(),
            table: DigramTable::new(),
            streams: Vec::new(),
            work: Vec::new(),
            current: 0,
            current_guard: NIL,
            lookahead: Lookahead::Off,
            forced: None,
            pushed: 0,
            num_terminals: 0,
        }
    }

    /// Which variant this compressor runs.
    pub fn variant(&self) -> Variant {
        self.variant
    }

    /// Adds a stream (a thread's events) with its own start rule.
    pub fn add_stream(&mut self, thread: ThreadId) -> Result<StreamId, SequiturError> {
        if self.streams.len() >= MAX_STREAMS {
            return Err(SequiturError::TooManyStreams);
        }
        let rule = self.new_rule();
        self.rules[rule as usize].uses = START;
        self.streams.push(Stream {
            thread,
            rule,
            end_pending: false,
        });
        Ok(StreamId(self.streams.len() as u32 - 1))
    }

    /// Declares that the grammar is over at least `n` terminals (e.g. an alphabet's size), so
    /// that [`finish`](Self::finish) reports `n` even if the largest terminals never occur.
    pub fn reserve_terminals(&mut self, n: u32) {
        self.num_terminals = self.num_terminals.max(n);
    }

    /// Appends one terminal to `stream` and restores the invariants.
    pub fn push(&mut self, stream: StreamId, t: Terminal) -> Result<(), SequiturError> {
        self.select(stream)?;
        self.push_current(t)
    }

    /// Appends terminals to `stream`, as repeated [`push`](Self::push).
    pub fn push_slice(&mut self, stream: StreamId, ts: &[Terminal]) -> Result<(), SequiturError> {
        self.select(stream)?;
        ts.iter().try_for_each(|&t| self.push_current(t))
    }

    /// Number of symbols pushed so far, over all streams.
    pub fn input_len(&self) -> u64 {
        self.pushed
    }

    /// Number of indexed digrams (about the current number of grammar symbols).
    pub fn num_digrams(&self) -> usize {
        self.table.len()
    }

    /// Bytes of heap memory held by the compressor's tables.
    pub fn heap_bytes(&self) -> usize {
        self.nodes.capacity() * std::mem::size_of::<Node>()
            + self.rules.capacity() * std::mem::size_of::<RuleSlot>()
            + self.free_rules.capacity() * 4
            + self.streams.capacity() * std::mem::size_of::<Stream>()
            + self.work.capacity() * 4
            + self.table.heap_bytes()
    }

    fn select(&mut self, stream: StreamId) -> Result<(), SequiturError> {
        let s = self
            .streams
            .get(stream.index())
            .ok_or(SequiturError::UnknownStream(stream.0))?;
        self.current = stream.index();
        self.current_guard = self.rules[s.rule as usize].guard;
        Ok(())
    }

    fn push_current(&mut self, t: Terminal) -> Result<(), SequiturError> {
        if t.0 >= Terminal::LIMIT {
            return Err(SequiturError::TerminalOutOfRange(t.0));
        }
        if self.nodes.len() >= MAX_NODES {
            return Err(SequiturError::GrammarTooLarge);
        }
        self.pushed += 1;
        self.num_terminals = self.num_terminals.max(t.0 + 1);
        match self.variant {
            Variant::Sequitur => {
                let n = self.append(t.0);
                self.work.push(self.nodes[n as usize].prev);
                self.drain();
            }
            Variant::Sequitur1 => self.push_lookahead(t.0),
        }
        Ok(())
    }

    /// SEQUITUR(1): first settle the digram that ended the stream, now that its look-ahead `t`
    /// is known; then append `t`, applying the rule the look-ahead pointed to if there was one.
    fn push_lookahead(&mut self, t: u32) {
        if std::mem::take(&mut self.streams[self.current].end_pending) {
            self.lookahead = Lookahead::Known(t);
            let last = self.nodes[self.current_guard as usize].prev;
            self.work.push(self.nodes[last as usize].prev);
            self.drain();
        }
        self.lookahead = Lookahead::Unknown;
        self.append(t);
        match self.forced.take() {
            Some(y) => {
                self.work.push(self.nodes[y as usize].prev);
                self.check(y, false);
                self.drain();
            }
            None => self.streams[self.current].end_pending = true,
        }
        self.lookahead = Lookahead::Off;
    }

    /// Appends terminal `t` to the current stream and returns its node.
    fn append(&mut self, t: u32) -> u32 {
        let g = self.current_guard;
        let last = self.nodes[g as usize].prev;
        let n = self.alloc(t);
        self.link(last, n);
        self.link(n, g);
        n
    }

    /// Finishes the pending SEQUITUR(1) checks and returns the grammar, rules numbered
    /// bottom-up in DFS post-order from the start rules (stream order), one start rule per
    /// stream. The grammar is over `max(largest terminal + 1, reserve_terminals)` terminals.
    pub fn finish(mut self) -> Grammar {
        self.lookahead = Lookahead::Off;
        for i in 0..self.streams.len() {
            if std::mem::take(&mut self.streams[i].end_pending) {
                self.current = i;
                self.current_guard = self.rules[self.streams[i].rule as usize].guard;
                let last = self.nodes[self.current_guard as usize].prev;
                self.work.push(self.nodes[last as usize].prev);
                self.drain();
            }
        }
        // Free what is no longer needed before the grammar is built next to the arena.
        drop(std::mem::replace(&mut self.table, DigramTable::new()));
        self.nodes.shrink_to_fit();
        self.into_grammar()
    }

    fn into_grammar(self) -> Grammar {
        let order = self.bottom_up_order();
        let mut new_id = vec![u32::MAX; self.rules.len()];
        for (i, &r) in order.iter().enumerate() {
            new_id[r as usize] = i as u32;
        }
        let bodies = order.iter().map(|&r| {
            let guard = self.rules[r as usize].guard;
            let first = self.nodes[guard as usize].next;
            let (nodes, new_id) = (&self.nodes, &new_id);
            std::iter::successors(Some(first), move |&n| Some(nodes[n as usize].next))
                .take_while(move |&n| n != guard)
                .map(move |n| match nodes[n as usize].sym {
                    s if is_rule_ref(s) => Symbol::rule(RuleId(new_id[(s & !RULE) as usize])),
                    s => Symbol::terminal(Terminal(s)),
                })
        });
        let starts = self
            .streams
            .iter()
            .map(|s| StartRule {
                thread: s.thread,
                rule: RuleId(new_id[s.rule as usize]),
            })
            .collect();
        Grammar::new(self.num_terminals, bodies, starts)
            .expect("SEQUITUR's rules are acyclic, in range and shorter than 2^31 symbols")
    }

    /// Rules reachable from the start rules in DFS post-order (children before parents).
    fn bottom_up_order(&self) -> Vec<u32> {
        let mut done = vec![false; self.rules.len()];
        let mut order = Vec::new();
        let mut stack: Vec<(u32, u32)> = Vec::new();
        for s in &self.streams {
            let guard = self.rules[s.rule as usize].guard;
            stack.push((s.rule, self.nodes[guard as usize].next));
            while let Some(top) = stack.last_mut() {
                let (rule, cursor) = *top;
                let node = self.nodes[cursor as usize];
                if cursor == self.rules[rule as usize].guard {
                    stack.pop();
                    done[rule as usize] = true;
                    order.push(rule);
                    continue;
                }
                top.1 = node.next;
                if is_rule_ref(node.sym) && !done[(node.sym & !RULE) as usize] {
                    let child = node.sym & !RULE;
                    let g = self.rules[child as usize].guard;
                    stack.push((child, self.nodes[g as usize].next));
                }
            }
        }
        order
    }

    // ---- arena ----

    fn alloc(&mut self, sym: u32) -> u32 {
        if is_rule_ref(sym) {
            self.rules[(sym & !RULE) as usize].uses += 1;
        }
        let node = Node {
            sym,
            prev: NIL,
            next: NIL,
        };
        if self.free_nodes != NIL {
            let n = self.free_nodes;
            self.free_nodes = self.nodes[n as usize].next;
            self.nodes[n as usize] = node;
            n
        } else {
            self.grow_arena();
            self.nodes.push(node);
            self.nodes.len() as u32 - 1
        }
    }

    /// Before the arena's next node: widens the digram index's node indices if needed, and
    /// grows by half instead of doubling, to keep slack within the memory budget.
    fn grow_arena(&mut self) {
        if self.nodes.len() as u64 >= self.table.node_limit() {
            self.table.widen(&self.nodes);
        }
        if self.nodes.len() == self.nodes.capacity() {
            self.nodes.reserve_exact(self.nodes.len() / 2 + 1024);
        }
    }

    /// Frees a node; a rule reference gives up its use.
    fn release(&mut self, n: u32) {
        let sym = self.nodes[n as usize].sym;
        if is_rule_ref(sym) {
            self.rules[(sym & !RULE) as usize].uses -= 1;
        }
        self.nodes[n as usize] = Node {
            sym: FREE,
            prev: NIL,
            next: self.free_nodes,
        };
        self.free_nodes = n;
    }

    fn new_rule(&mut self) -> u32 {
        let r = match self.free_rules.pop() {
            Some(r) => r,
            None => {
                self.rules.push(RuleSlot {
                    guard: NIL,
                    uses: 0,
                });
                self.rules.len() as u32 - 1
            }
        };
        let g = self.alloc(GUARD | r);
        self.link(g, g);
        self.rules[r as usize] = RuleSlot { guard: g, uses: 0 };
        r
    }

    #[inline]
    fn link(&mut self, a: u32, b: u32) {
        self.nodes[a as usize].next = b;
        self.nodes[b as usize].prev = a;
    }

    // ---- digram index ----

    /// Drops the digram starting at `n` from the index if `n` is its indexed occurrence. In a
    /// run `aaa` only one of the two overlapping `aa` is indexed; when that one goes, the other
    /// is queued so that it gets indexed in turn.
    fn unindex(&mut self, n: u32) {
        let node = self.nodes[n as usize];
        let next = self.nodes[node.next as usize];
        if is_guard(node.sym) || is_guard(next.sym) || !self.table.remove(node.sym, next.sym, n) {
            return;
        }
        if node.sym == next.sym {
            if self.nodes[node.prev as usize].sym == node.sym {
                self.work.push(node.prev);
            }
            if self.nodes[next.next as usize].sym == node.sym {
                self.work.push(node.next);
            }
        }
    }

    fn drain(&mut self) {
        while let Some(n) = self.work.pop() {
            self.check(n, true);
        }
    }

    /// Figure 3's digram-uniqueness step for the digram starting at `n`: index it if new,
    /// reduce it if it repeats a non-overlapping occurrence. With `may_defer`, SEQUITUR(1) may
    /// postpone a duplicate that ends the current stream (see `defer_end`).
    fn check(&mut self, n: u32, may_defer: bool) {
        let node = self.nodes[n as usize];
        if node.sym == FREE || is_guard(node.sym) {
            return;
        }
        let b = self.nodes[node.next as usize].sym;
        if is_guard(b) {
            return;
        }
        match self.table.find(&self.nodes, node.sym, b) {
            Err(slot) => self.table.insert(&self.nodes, slot, (node.sym, b), n),
            Ok(m) if m == n || m == node.next || self.nodes[m as usize].next == n => {}
            Ok(m) => match self.whole_rule(m) {
                Some(r) => self.reuse(n, r),
                None if may_defer && self.defer_end(node.next) => {}
                None => self.reduce(n, m),
            },
        }
    }

    /// SEQUITUR(1) for a duplicate digram `x y` that would need a new rule and whose `y` ends
    /// the current stream: before the
    /// look-ahead is known, wait for it; once it is (`l`), leave `x y` alone if `y l` is the
    /// whole body of a rule, which the caller applies right after appending `l`.
    /// (Larus §3.2 looks ahead only "before introducing a new rule".)
    fn defer_end(&mut self, y: u32) -> bool {
        if self.nodes[y as usize].next != self.current_guard {
            return false;
        }
        match self.lookahead {
            Lookahead::Off => false,
            Lookahead::Unknown => {
                self.streams[self.current].end_pending = true;
                true
            }
            Lookahead::Known(l) => {
                let ys = self.nodes[y as usize].sym;
                let hit = matches!(self.table.find(&self.nodes, ys, l),
                    Ok(m) if self.whole_rule(m).is_some());
                if hit {
                    self.forced = Some(y);
                }
                hit
            }
        }
    }

    /// The rule whose entire body is the digram starting at `m`, unless it is a start rule.
    /// The list through `m` is then a triangle — guard, `m`, successor — so `m`'s predecessor
    /// is its successor's successor; testing that needs no node beyond the two `find` read.
    #[inline]
    fn whole_rule(&self, m: u32) -> Option<u32> {
        let node = self.nodes[m as usize];
        let p = node.prev;
        if self.nodes[node.next as usize].next != p {
            return None;
        }
        let r = self.nodes[p as usize].sym & !GUARD;
        (self.rules[r as usize].uses != START).then_some(r)
    }

    /// Replaces the digram at `ss` by rule `r`, whose whole body it repeats.
    fn reuse(&mut self, ss: u32, r: u32) {
        self.substitute(ss, r);
        self.enforce_utility(r);
    }

    /// Replaces the digram at `ss` and its indexed occurrence at `m` by a new rule.
    fn reduce(&mut self, ss: u32, m: u32) {
        let r = self.new_pair_rule(ss, m);
        self.enforce_utility(r);
    }

    /// Rule utility after a reduction: the symbols of `r`'s two-symbol body each lost a
    /// reference, and a rule left with one is inlined.
    fn enforce_utility(&mut self, r: u32) {
        let g = self.rules[r as usize].guard;
        let first = self.nodes[g as usize].next;
        self.inline_if_underused(first);
        let last = self.nodes[g as usize].prev;
        self.inline_if_underused(last);
    }

    /// Creates the rule `r → a b` for the digram at `ss` and `m`; its body becomes the indexed
    /// occurrence, taking over `m`'s table entry.
    fn new_pair_rule(&mut self, ss: u32, m: u32) -> u32 {
        let a = self.nodes[ss as usize].sym;
        let b = self.nodes[self.nodes[ss as usize].next as usize].sym;
        let r = self.new_rule();
        let g = self.rules[r as usize].guard;
        let x = self.alloc(a);
        let y = self.alloc(b);
        self.link(g, x);
        self.link(x, y);
        self.link(y, g);
        self.table.repoint((a, b), m, x);
        self.substitute(m, r);
        self.substitute(ss, r);
        r
    }

    /// Replaces the digram starting at `n` by a reference to rule `r` and queues the two new
    /// digrams around it, left first. The digram itself is never the indexed occurrence here
    /// (it repeats the one indexed), and since both its nodes go, so do any digrams overlapping
    /// it; only its neighbours' digrams need unindexing.
    fn substitute(&mut self, n: u32, r: u32) {
        let n2 = self.nodes[n as usize].next;
        let q = self.nodes[n as usize].prev;
        let o = self.nodes[n2 as usize].next;
        self.unindex(q);
        self.unindex(n2);
        self.release(n);
        self.release(n2);
        let x = self.alloc(RULE | r);
        self.link(q, x);
        self.link(x, o);
        self.work.push(x);
        self.work.push(q);
    }

    /// Rule utility: if `n` refers to a rule used only here, splice that rule's body in place
    /// of `n` and delete the rule.
    fn inline_if_underused(&mut self, n: u32) {
        let sym = self.nodes[n as usize].sym;
        if !is_rule_ref(sym) || self.rules[(sym & !RULE) as usize].uses != 1 {
            return;
        }
        let r = sym & !RULE;
        let g = self.rules[r as usize].guard;
        let (first, last) = (self.nodes[g as usize].next, self.nodes[g as usize].prev);
        let (left, right) = (self.nodes[n as usize].prev, self.nodes[n as usize].next);
        self.unindex(left);
        self.unindex(n);
        self.link(left, first);
        self.link(last, right);
        self.release(n);
        self.release(g);
        self.free_rules.push(r);
        self.work.push(last);
        self.work.push(left);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(s: &mut Sequitur, input: &[u32]) -> Grammar {
        let id = s.add_stream(ThreadId(0)).unwrap();
        for &t in input {
            s.push(id, Terminal(t)).unwrap();
        }
        let mut out = Sequitur::new(s.variant);
        std::mem::swap(s, &mut out);
        out.finish()
    }

    /// Tags only skip work: a table that starts with 8-bit indices, and so widens as the arena
    /// passes 254 and 4094 nodes, builds exactly the same grammar, which keeps SEQUITUR's
    /// invariants and expands to the input. Widening moves entries; a reduction whose new
    /// rule's nodes widen the table between its `find` and its `repoint` once wrote to a slot
    /// that no longer held its digram (one input in five here broke digram uniqueness).
    #[test]
    fn widening_the_digram_index_changes_nothing() {
        for seed in 0..60u64 {
            let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
            let alphabet = 2 + (seed as u32 % 40);
            let input: Vec<u32> = (0..20_000)
                .map(|_| {
                    x = x
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    (x >> 33) as u32 % alphabet
                })
                .collect();
            for variant in [Variant::Sequitur, Variant::Sequitur1] {
                let mut narrow = Sequitur::new(variant);
                narrow.table = DigramTable::with_index_bits(8);
                let a = run(&mut narrow, &input);
                let b = run(&mut Sequitur::new(variant), &input);
                assert_eq!(crate::check::check(&a), Ok(()), "seed {seed}");
                let mut expanded = Vec::new();
                crate::expand::expand_into(&a, a.starts()[0].rule, &mut expanded);
                assert!(expanded.iter().map(|t| t.0).eq(input.iter().copied()));
                assert_eq!(a, b, "seed {seed}, {variant:?}");
            }
        }
    }
}
