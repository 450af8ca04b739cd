//! Phrase compression: a cheap pre-pass cuts each stream into *phrases* at content-defined
//! boundaries and stores each distinct phrase once, so SEQUITUR (Larus §3.1) handles a
//! repeated phrase as one symbol instead of one symbol per event. This goes past the papers: it
//! trades some grammar size for a compressor that keeps up better with a running program.
//!
//! # The algorithm
//!
//! * **Boundaries** (content-defined chunking, as in LBFS and FastCDC, applied to events instead
//!   of bytes). A rolling hash over the last [`WINDOW`] terminals of a stream is updated per
//!   terminal; a phrase ends after a terminal whose hash has its top [`BOUNDARY_BITS`] bits
//!   clear, once the phrase has at least [`MIN_PHRASE`] terminals, or when it reaches
//!   [`MAX_PHRASE`]. A boundary depends only on the last few events, not on where the phrase
//!   began, so a repeated stretch of the trace is cut the same way wherever it occurs: a loop
//!   whose body contains a boundary k-gram yields the same phrases every iteration, whatever its
//!   alignment. A loop without one is cut at the length cap, which cycles through at most
//!   `period / gcd(period, MAX_PHRASE)` distinct phrases.
//! * **Dictionary.** A hash table keyed by the phrase's terminals maps each distinct phrase to
//!   a dense id. A repeated phrase costs one hash over its terminals and one comparison with the
//!   stored copy.
//! * **Levels.** The phrase symbols of level 0 are cut into phrases of phrases the same way
//!   (level 1, [`LEVELS`] in all), with a dictionary per level; the last level's phrase
//!   symbols go to SEQUITUR. (Measured on 40 MB prefixes of the bench traces: a second level
//!   halved the time on Lua and cost ~8% time and 15–40% size on zlib; a third was worse
//!   everywhere.)
//! * **One SEQUITUR for everything.** A *new* phrase becomes a stream of its own in the shared
//!   [`Sequitur`]: its symbols are pushed there once, so the dictionaries are compressed
//!   together with the rest (digrams shared between phrases become rules as usual). Every
//!   phrase, new or repeated, is then represented by one *phrase symbol* (terminal
//!   `2^30 + level · 2^29 + id`). SEQUITUR thus sees each distinct phrase's symbols once plus
//!   one symbol per top-level phrase, instead of every event.
//! * **Finish.** Phrase symbols become references to their phrase's rule; rules used once or
//!   with a one-symbol body are spliced into their users, and the rest are renumbered
//!   bottom-up.
//!
//! # What the grammar guarantees
//!
//! The expansion of each start rule is exactly its stream, and **rule utility** holds (every
//! non-start rule is used at least twice). **Digram uniqueness does not hold**: a digram can
//! occur once inside a phrase and again across a phrase boundary, where SEQUITUR never saw it.
//! So the grammar is usually larger than SEQUITUR's over the same events (on the bench traces
//! 0.97–1.6× its symbols, 1.0–1.5× its `.wpp` bytes), and [`crate::check::check_algorithm`]
//! checks only rule utility for it.
//!
//! # Cost and memory
//!
//! Per event: a shift, a multiply and a compare for the rolling hash, and a copy into the
//! stream's pending phrase. Per phrase: a hash over its terminals, a table probe, a comparison
//! and one push a level up (SEQUITUR's at the top); per *new* phrase, its symbols pushed into
//! SEQUITUR. How much faster than SEQUITUR this is depends on how repetitive the trace is: on
//! the bench traces (10^8-event prefixes) from 1.0× (bzip2 paths, high entropy: nearly every
//! phrase is new) to 5.4× (SQLite and Lua blocks); on a trace without repeats the pre-pass is
//! pure overhead. Memory: SEQUITUR's (for the grammar) plus the dictionaries, which hold each
//! distinct phrase's symbols once (4 bytes each, plus about 24 bytes per phrase), and a
//! SEQUITUR stream per distinct phrase: it grows with the number of distinct phrases, i.e. with
//! the grammar, never with the repetitions; measured peak 1–3.5× SEQUITUR's (the most on
//! high-entropy traces). [`PhraseCompressor::heap_bytes`] reports both.
//!
//! Limits: terminals below 2^30 (the phrase symbols take the upper half of SEQUITUR's terminal
//! space) and at most 2^28 distinct phrases (SEQUITUR's stream limit); past them pushing fails
//! with an error.
//!
//! ```
//! use wpp_grammar::phrase::PhraseCompressor;
//! use wpp_grammar::expand::Expander;
//! use wpp_trace::{Terminal, ThreadId};
//!
//! let mut c = PhraseCompressor::new();
//! let main = c.add_stream(ThreadId(0)).unwrap();
//! let input: Vec<Terminal> = (0..10_000).map(|i| Terminal(i % 7)).collect();
//! c.push_slice(main, &input).unwrap();
//! let g = c.finish(7).unwrap();
//! assert!(g.num_symbols() < 200);
//! let back: Vec<Terminal> = Expander::new(&g, g.starts()[0].rule).collect();
//! assert_eq!(back, input);
//! ```

use hashbrown::HashTable;
use wpp_trace::{Terminal, ThreadId};

use crate::grammar::{Grammar, GrammarError, RuleId, StartRule};
use crate::sequitur::{Sequitur, SequiturError, StreamId, Variant};
use crate::symbol::{Symbol, SymbolKind};

/// Terminals the boundary hash looks at: each update shifts the hash by `64 / WINDOW` bits, so
/// a terminal's influence leaves the top bits after `WINDOW` more terminals.
pub const WINDOW: u32 = 8;
/// A boundary follows a terminal whose rolling hash has this many top bits clear, so the
/// expected distance between boundaries is about `2^BOUNDARY_BITS` past [`MIN_PHRASE`].
pub const BOUNDARY_BITS: u32 = 2;
/// No boundary is taken before a phrase has this many terminals.
pub const MIN_PHRASE: usize = 2;
/// A phrase is cut at this length even without a boundary (a loop whose body has no boundary).
pub const MAX_PHRASE: usize = 64;

/// Levels of phrases: level 0 cuts the events, level `k + 1` cuts the phrase symbols of level
/// `k` the same way (phrases of phrases), and the last level's phrase symbols go to the
/// thread's SEQUITUR stream.
pub const LEVELS: usize = 2;

/// Phrase `p` of level `k` is SEQUITUR terminal `PHRASE_BASE + k * LEVEL_SPAN + p`; the
/// events' terminals stay below `PHRASE_BASE`.
const PHRASE_BASE: u32 = 1 << 30;
const LEVEL_SPAN: u32 = PHRASE_BASE / LEVELS as u32;

/// Why a terminal could not be pushed or the grammar not built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PhraseError {
    /// SEQUITUR rejected the input (too long, too many phrases or threads).
    #[error(transparent)]
    Sequitur(#[from] SequiturError),
    /// A terminal at or above 2^30.
    #[error("terminal {0} is not below 2^30 (the phrase compressor's limit)")]
    TerminalOutOfRange(u32),
    /// The finished grammar exceeds the grammar's limits.
    #[error("cannot build the grammar: {0}")]
    Grammar(String),
}

impl From<GrammarError> for PhraseError {
    fn from(e: GrammarError) -> Self {
        PhraseError::Grammar(e.to_string())
    }
}

/// A stream of a [`PhraseCompressor`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PhraseStream(u32);

/// One level's phrase under construction in one stream.
struct Chunker {
    pending: Vec<Terminal>,
    roll: u64,
}

/// One thread: its SEQUITUR stream and a chunker per level.
struct Stream {
    id: StreamId,
    levels: [Chunker; LEVELS],
}

/// What each SEQUITUR stream holds, in order of creation.
#[derive(Clone, Copy)]
enum Owner {
    Thread(ThreadId),
    /// A phrase: its level and id.
    Phrase(usize, u32),
}

/// Where a phrase is stored, as a dictionary table entry: the probe that finds it reads the
/// phrase's symbols directly (one cache miss fewer than going through a table of offsets).
#[derive(Clone, Copy)]
struct Slot {
    start: usize,
    len: u32,
    id: u32,
}

/// Each distinct phrase once, with its id.
#[derive(Default)]
struct Dictionary {
    /// Phrases, keyed by the hash of their symbols.
    table: HashTable<Slot>,
    /// The phrases' symbols, one after the other.
    terminals: Vec<Terminal>,
    len: u32,
}

impl Dictionary {
    /// The id of `phrase` and whether it is new (then it has just been added).
    fn intern(&mut self, phrase: &[Terminal]) -> (u32, bool) {
        let hash = phrase_hash(phrase);
        let Dictionary {
            table,
            terminals,
            len,
        } = self;
        let stored = |e: &Slot| &terminals[e.start..e.start + e.len as usize];
        let found = table.find(hash, |e| {
            e.len as usize == phrase.len() && stored(e) == phrase
        });
        if let Some(e) = found {
            return (e.id, false);
        }
        let slot = Slot {
            start: terminals.len(),
            len: phrase.len() as u32,
            id: *len,
        };
        *len += 1;
        terminals.extend_from_slice(phrase);
        table.insert_unique(hash, slot, |e| {
            phrase_hash(&terminals[e.start..e.start + e.len as usize])
        });
        (slot.id, true)
    }

    fn len(&self) -> usize {
        self.len as usize
    }

    fn heap_bytes(&self) -> usize {
        self.table.capacity() * (std::mem::size_of::<Slot>() + 1) + self.terminals.capacity() * 4
    }
}

/// Hash of a phrase's terminals: a multiply-rotate fold, then a finalizer (murmur3's fmix64),
/// because the hash table takes its bucket from the low bits, which the fold mixes poorly.
fn phrase_hash(phrase: &[Terminal]) -> u64 {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let h = phrase.iter().fold(phrase.len() as u64, |h, t| {
        (h.rotate_left(5) ^ u64::from(t.0)).wrapping_mul(K)
    });
    let h = (h ^ (h >> 33)).wrapping_mul(0xff51_afd7_ed55_8ccd);
    let h = (h ^ (h >> 33)).wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// The rolling boundary hash after `t`: the old hash shifted left by `64 / WINDOW` bits, xor a
/// multiplicative mix of `t`, so the top bits depend on the last [`WINDOW`] terminals only.
#[inline]
fn roll(h: u64, t: Terminal) -> u64 {
    (h << (64 / WINDOW)) ^ (u64::from(t.0) + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

/// Whether a phrase of `len` terminals whose last terminal left the rolling hash `h` ends here.
#[inline]
fn is_boundary(h: u64, len: usize) -> bool {
    (len >= MIN_PHRASE && h >> (64 - BOUNDARY_BITS) == 0) || len >= MAX_PHRASE
}

/// An online phrase compressor over one or more streams (see the [module docs](self)).
pub struct PhraseCompressor {
    seq: Sequitur,
    streams: Vec<Stream>,
    /// The owner of each SEQUITUR stream.
    owners: Vec<Owner>,
    dicts: [Dictionary; LEVELS],
    /// The first error: after it the state may be half-updated, so every later call fails.
    failed: Option<PhraseError>,
}

impl Default for PhraseCompressor {
    fn default() -> Self {
        PhraseCompressor::new()
    }
}

impl PhraseCompressor {
    /// An empty compressor.
    pub fn new() -> PhraseCompressor {
        PhraseCompressor {
            seq: Sequitur::new(Variant::Sequitur),
            streams: Vec::new(),
            owners: Vec::new(),
            dicts: Default::default(),
            failed: None,
        }
    }

    /// Adds a stream (a thread's events) with its own start rule.
    pub fn add_stream(&mut self, thread: ThreadId) -> Result<PhraseStream, PhraseError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let id = self.seq.add_stream(thread)?;
        self.owners.push(Owner::Thread(thread));
        let levels = std::array::from_fn(|_| Chunker {
            pending: Vec::with_capacity(MAX_PHRASE),
            roll: 0,
        });
        self.streams.push(Stream { id, levels });
        Ok(PhraseStream(self.streams.len() as u32 - 1))
    }

    /// Appends one terminal to `stream`. After an error (a limit was reached) every later
    /// call, [`finish`](Self::finish) included, fails with the same error.
    #[inline]
    pub fn push(&mut self, stream: PhraseStream, t: Terminal) -> Result<(), PhraseError> {
        if t.0 >= PHRASE_BASE {
            return Err(PhraseError::TerminalOutOfRange(t.0));
        }
        self.feed(stream, 0, t)
    }

    /// Appends terminals to `stream`, as repeated [`push`](Self::push).
    pub fn push_slice(&mut self, stream: PhraseStream, ts: &[Terminal]) -> Result<(), PhraseError> {
        ts.iter().try_for_each(|&t| self.push(stream, t))
    }

    /// Appends `t` to the stream's phrase of `level`, ending the phrase at a boundary.
    #[inline]
    fn feed(&mut self, stream: PhraseStream, level: usize, t: Terminal) -> Result<(), PhraseError> {
        let c = &mut self.streams[stream.0 as usize].levels[level];
        c.pending.push(t);
        c.roll = roll(c.roll, t);
        if is_boundary(c.roll, c.pending.len()) {
            self.end_phrase(stream, level)?;
        }
        Ok(())
    }

    /// [`end_phrase_unchecked`](Self::end_phrase_unchecked), remembering its first error.
    fn end_phrase(&mut self, stream: PhraseStream, level: usize) -> Result<(), PhraseError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        self.end_phrase_unchecked(stream, level)
            .inspect_err(|e| self.failed = Some(e.clone()))
    }

    /// Looks the stream's pending phrase of `level` up (a new one gets its SEQUITUR stream and
    /// its symbols pushed there) and passes its phrase symbol up a level, or to the thread's
    /// SEQUITUR stream from the last level.
    fn end_phrase_unchecked(
        &mut self,
        stream: PhraseStream,
        level: usize,
    ) -> Result<(), PhraseError> {
        let PhraseCompressor {
            seq,
            streams,
            owners,
            dicts,
            ..
        } = self;
        let s = &mut streams[stream.0 as usize];
        let c = &mut s.levels[level];
        if c.pending.is_empty() {
            return Ok(());
        }
        let (id, new) = dicts[level].intern(&c.pending);
        if new {
            // The thread is irrelevant: the phrase's start rule becomes an ordinary rule.
            let p = seq.add_stream(ThreadId(u32::MAX))?;
            owners.push(Owner::Phrase(level, id));
            seq.push_slice(p, &c.pending)?;
        }
        c.pending.clear();
        let symbol = Terminal(PHRASE_BASE + level as u32 * LEVEL_SPAN + id);
        if level + 1 < LEVELS {
            self.feed(stream, level + 1, symbol)
        } else {
            Ok(seq.push(s.id, symbol)?)
        }
    }

    /// Distinct phrases so far, over all levels.
    pub fn num_phrases(&self) -> usize {
        self.dicts.iter().map(Dictionary::len).sum()
    }

    /// Heap bytes of SEQUITUR's tables and the dictionaries.
    pub fn heap_bytes(&self) -> usize {
        self.seq.heap_bytes() + self.dicts.iter().map(Dictionary::heap_bytes).sum::<usize>()
    }

    /// Ends every stream's last phrases and builds the grammar over `num_terminals` terminals
    /// (raised to the largest pushed terminal plus one if that is more).
    pub fn finish(mut self, num_terminals: u32) -> Result<Grammar, PhraseError> {
        for i in 0..self.streams.len() {
            for level in 0..LEVELS {
                self.end_phrase(PhraseStream(i as u32), level)?;
            }
        }
        let max_terminal = self.dicts[0].terminals.iter().map(|t| t.0 + 1).max();
        let num_terminals = num_terminals.max(max_terminal.unwrap_or(0));
        let mut phrase_rule: [Vec<RuleId>; LEVELS] =
            std::array::from_fn(|k| vec![RuleId(0); self.dicts[k].len()]);
        // The dictionaries' copies of the phrases are not needed any more: free them before
        // the grammar is built, which is the peak of memory.
        drop(std::mem::take(&mut self.dicts));
        let owners = std::mem::take(&mut self.owners);
        let g = self.seq.finish();
        let mut starts = Vec::new();
        for (start, owner) in g.starts().iter().zip(owners) {
            match owner {
                Owner::Thread(thread) => starts.push(StartRule {
                    thread,
                    rule: start.rule,
                }),
                Owner::Phrase(level, p) => phrase_rule[level][p as usize] = start.rule,
            }
        }
        let resolve = |s: Symbol| match s.kind() {
            SymbolKind::Terminal(t) if t.0 >= PHRASE_BASE => {
                let (level, id) = (
                    (t.0 - PHRASE_BASE) / LEVEL_SPAN,
                    (t.0 - PHRASE_BASE) % LEVEL_SPAN,
                );
                Symbol::rule(phrase_rule[level as usize][id as usize])
            }
            _ => s,
        };
        Ok(normalize(&g, resolve, num_terminals, &starts)?)
    }
}

/// Rebuilds `g` with each symbol mapped through `resolve` (which may turn terminals into rule
/// references), keeping the rules reachable from `starts`: rules used once or with a body of
/// one symbol are spliced into their users, the others renumbered bottom-up.
fn normalize(
    g: &Grammar,
    resolve: impl Fn(Symbol) -> Symbol,
    num_terminals: u32,
    starts: &[StartRule],
) -> Result<Grammar, GrammarError> {
    let order = post_order(g, &resolve, starts);
    let mut uses = vec![0u32; g.num_rules()];
    for &r in &order {
        for &s in g.body(r) {
            if let SymbolKind::Rule(q) = resolve(s).kind() {
                uses[q.index()] = uses[q.index()].saturating_add(1);
            }
        }
    }
    let mut is_start = vec![false; g.num_rules()];
    starts.iter().for_each(|s| is_start[s.rule.index()] = true);
    let spliced = |r: RuleId| !is_start[r.index()] && (uses[r.index()] < 2 || g.body(r).len() < 2);
    let mut new_id = vec![u32::MAX; g.num_rules()];
    let kept: Vec<RuleId> = order.into_iter().filter(|&r| !spliced(r)).collect();
    for (i, &r) in kept.iter().enumerate() {
        new_id[r.index()] = i as u32;
    }
    let bodies = kept.iter().map(|&r| {
        let mut body = Vec::with_capacity(g.body(r).len());
        let mut stack = vec![g.body(r).iter()];
        while let Some(top) = stack.last_mut() {
            let Some(&s) = top.next() else {
                stack.pop();
                continue;
            };
            match resolve(s).kind() {
                SymbolKind::Rule(q) if spliced(q) => stack.push(g.body(q).iter()),
                SymbolKind::Rule(q) => body.push(Symbol::rule(RuleId(new_id[q.index()]))),
                SymbolKind::Terminal(t) => body.push(Symbol::terminal(t)),
            }
        }
        body
    });
    let starts = starts
        .iter()
        .map(|s| StartRule {
            thread: s.thread,
            rule: RuleId(new_id[s.rule.index()]),
        })
        .collect();
    Grammar::new(num_terminals, bodies, starts)
}

/// The rules reachable from `starts` (through `resolve`d symbols), children before parents.
fn post_order(
    g: &Grammar,
    resolve: impl Fn(Symbol) -> Symbol,
    starts: &[StartRule],
) -> Vec<RuleId> {
    let mut seen = vec![false; g.num_rules()];
    let mut order = Vec::new();
    for s in starts {
        if std::mem::replace(&mut seen[s.rule.index()], true) {
            continue;
        }
        let mut stack = vec![(s.rule, g.body(s.rule).iter())];
        while let Some((rule, body)) = stack.last_mut() {
            let rule = *rule;
            match body.next().map(|&x| resolve(x).kind()) {
                Some(SymbolKind::Rule(q)) if !seen[q.index()] => {
                    seen[q.index()] = true;
                    stack.push((q, g.body(q).iter()));
                }
                Some(_) => {}
                None => {
                    stack.pop();
                    order.push(rule);
                }
            }
        }
    }
    order
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::{check_digram_uniqueness, check_rule_utility};
    use crate::expand::Expander;
    use proptest::prelude::*;

    /// Hands `streams` to `push` interleaved in uneven slices, as a runtime's buffers arrive.
    fn interleave(streams: &[Vec<u32>], mut push: impl FnMut(usize, &[Terminal])) {
        let mut pos = vec![0; streams.len()];
        let mut step = 1;
        while pos.iter().zip(streams).any(|(&p, s)| p < s.len()) {
            for (i, s) in streams.iter().enumerate() {
                let end = (pos[i] + step).min(s.len());
                let ts: Vec<Terminal> = s[pos[i]..end].iter().map(|&t| Terminal(t)).collect();
                push(i, &ts);
                pos[i] = end;
                step = step % 97 + 13;
            }
        }
    }

    fn compress(streams: &[Vec<u32>]) -> Grammar {
        let mut c = PhraseCompressor::new();
        let ids: Vec<_> = (0..streams.len())
            .map(|i| c.add_stream(ThreadId(i as u32)).unwrap())
            .collect();
        interleave(streams, |i, ts| c.push_slice(ids[i], ts).unwrap());
        c.finish(0).unwrap()
    }

    /// SEQUITUR's grammar for the same streams, pushed in the same order.
    fn sequitur(streams: &[Vec<u32>]) -> Grammar {
        let mut c = Sequitur::new(Variant::Sequitur);
        let ids: Vec<_> = (0..streams.len())
            .map(|i| c.add_stream(ThreadId(i as u32)).unwrap())
            .collect();
        interleave(streams, |i, ts| c.push_slice(ids[i], ts).unwrap());
        c.finish()
    }

    /// The oracle: each start rule expands to its stream, and rule utility holds.
    fn assert_exact(streams: &[Vec<u32>]) -> Grammar {
        let g = compress(streams);
        assert_eq!(g.starts().len(), streams.len());
        for (s, want) in g.starts().iter().zip(streams) {
            let got: Vec<u32> = Expander::new(&g, s.rule).map(|t| t.0).collect();
            assert_eq!(&got, want, "thread {}", s.thread.0);
        }
        check_rule_utility(&g).unwrap();
        g
    }

    /// Phrases (as boundaries) that the chunker cuts from `ts`, from a fresh state.
    fn phrases(ts: &[u32]) -> Vec<Vec<u32>> {
        let (mut out, mut cur, mut h) = (Vec::new(), Vec::new(), 0);
        for &t in ts {
            cur.push(t);
            h = roll(h, Terminal(t));
            if is_boundary(h, cur.len()) {
                out.push(std::mem::take(&mut cur));
            }
        }
        out.push(cur);
        out
    }

    /// A loop-shaped stream: `outer` iterations of a body of `len` events with an inner
    /// repetition, as block traces look.
    fn loops(outer: u32, len: u32, alphabet: u32) -> Vec<u32> {
        (0..outer)
            .flat_map(|i| (0..len).map(move |j| (j * 7 + (i % 3) * (j % 2)) % alphabet))
            .collect()
    }

    #[test]
    fn repetitive_streams_compress_far_below_their_length() {
        let s = loops(20_000, 37, 50);
        let streams = [s.clone(), s[5..].to_vec()];
        let g = assert_exact(&streams);
        let (p, q) = (g.num_symbols(), sequitur(&streams).num_symbols());
        assert!(p * 100 < s.len() && p < 2 * q, "{p} symbols, SEQUITUR {q}");
    }

    /// Positions in `ts` after which the chunker ends a phrase.
    fn ends(ts: &[u32]) -> Vec<usize> {
        phrases(ts)
            .iter()
            .scan(0, |end, p| {
                *end += p.len();
                Some(*end)
            })
            .collect()
    }

    #[test]
    fn boundaries_do_not_depend_on_alignment() {
        let s: Vec<u32> = (0..5_000u32).map(|i| (i * i) % 101).collect();
        let a = ends(&s);
        let shifted: Vec<u32> = [7, 8, 9].iter().chain(&s).copied().collect();
        let b: Vec<usize> = ends(&shifted)
            .iter()
            .filter_map(|e| e.checked_sub(3))
            .collect();
        // Once both cuts share a boundary, they coincide from there on.
        let first = *a.iter().find(|e| b.contains(e)).expect("a common boundary");
        assert!(first < 200, "first common boundary at {first}");
        let after = |v: &[usize]| {
            v.iter()
                .copied()
                .filter(|&e| e >= first)
                .collect::<Vec<_>>()
        };
        assert!(a.len() > 20);
        assert_eq!(after(&a), after(&b));
        assert!(phrases(&s).iter().all(|p| p.len() <= MAX_PHRASE));
    }

    #[test]
    fn a_loop_without_a_boundary_is_cut_at_the_cap() {
        // In a constant stream the rolling hash is constant after WINDOW terminals, so the
        // phrases all end at the same limit: the minimum or the cap.
        let s = vec![3; 10 * MAX_PHRASE + 5];
        let p = phrases(&s);
        let len = p[1].len();
        assert!(len == MIN_PHRASE || len == MAX_PHRASE, "{len}");
        assert!(p[1..p.len() - 1].iter().all(|x| x.len() == len));
        let g = assert_exact(&[s]);
        assert!(g.num_symbols() < 300);
    }

    #[test]
    fn digram_uniqueness_is_not_claimed() {
        // The same digram inside two different phrases: rule utility holds, uniqueness not.
        let s: Vec<u32> = (0..4_000u32)
            .map(|i| i.wrapping_mul(2_654_435_761) % 9)
            .collect();
        let g = assert_exact(&[s]);
        assert!(check_digram_uniqueness(&g).is_err());
    }

    #[test]
    fn empty_and_single_event_streams() {
        assert_exact(&[vec![], vec![4], vec![1, 1]]);
        let mut c = PhraseCompressor::new();
        c.add_stream(ThreadId(0)).unwrap();
        let g = c.finish(3).unwrap();
        assert_eq!(g.num_terminals(), 3);
        assert_eq!(g.expanded_len(g.starts()[0].rule), 0);
    }

    #[test]
    fn terminals_from_2_to_the_30_are_refused_without_harm() {
        let mut c = PhraseCompressor::new();
        let s = c.add_stream(ThreadId(0)).unwrap();
        c.push(s, Terminal(5)).unwrap();
        let e = c.push(s, Terminal(PHRASE_BASE)).unwrap_err();
        assert_eq!(e, PhraseError::TerminalOutOfRange(PHRASE_BASE));
        c.push(s, Terminal(6)).unwrap();
        let g = c.finish(7).unwrap();
        let back: Vec<u32> = Expander::new(&g, g.starts()[0].rule).map(|t| t.0).collect();
        assert_eq!(back, [5, 6]);
    }

    proptest! {
        #[test]
        fn random_streams_expand_exactly(
            streams in prop::collection::vec(prop::collection::vec(0u32..6, 0..3_000), 1..4)
        ) {
            assert_exact(&streams);
        }

        #[test]
        fn repetitive_streams_expand_exactly(
            pieces in prop::collection::vec(prop::collection::vec(0u32..40, 1..60), 1..6),
            order in prop::collection::vec((0usize..6, 1usize..40), 1..40),
        ) {
            let s: Vec<u32> = order
                .iter()
                .flat_map(|&(i, n)| {
                    let p = &pieces[i % pieces.len()];
                    std::iter::repeat_n(p.iter().copied(), n).flatten()
                })
                .collect();
            let half = s.len() / 2;
            assert_exact(&[s.clone(), s[half..].to_vec()]);
        }
    }
}
