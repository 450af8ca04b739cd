//! Cross-checks every query of this crate on a real recording against brute force (issue 5's
//! acceptance "the same on real recordings"); `bench/check.sh` runs it on the block traces of
//! its workloads.
//!
//! ```text
//! wpp-query-check [--events N] [--seed S] [--name NAME] TRACE...
//! ```
//!
//! For each trace, the first `N` events (default 10^6; every thread) are compressed with each
//! algorithm (SEQUITUR, SEQUITUR(1), frequency, phrase), on one thread and in parallel (two
//! threads, ~8 chunks joined: [`wpp_grammar::parallel`]), and on each grammar:
//!
//! * **round trip**: every thread's start rule expands to its stream;
//! * **path matching** (Zhang–Gupta §4): schemes 1, 2 and 4 (partition index written, read back
//!   and validated), counting all occurrences and stopping at the first, give per thread the
//!   count and first position of [`oracle::path_occurrences`] on the events, for the rare,
//!   medium and frequent path chosen as in `wpp-query-bench` (chunk coverage ~1, ~½, ~all),
//!   paths cut from random invocations (1–12 own blocks), random sequences of a function's own
//!   blocks (most never occur), and an occurring path extended by a block the function does not
//!   have (never occurs);
//! * **hot subpaths** (Larus Figure 7), with unit and with per-terminal costs: every reported
//!   subpath has a length in range, cost = frequency × its terminals' costs ≥ C, occurs at least
//!   its frequency times in the trace (naive count of every window), and is at the reported
//!   offset of its rule;
//! * **subpath frequency** (Larus §3.3): for windows cut from random positions of the trace and
//!   random terminal sequences, the count, first and last start of [`oracle::subpath_occurrences`].
//! * **exact hot paths** (`wpp hot`): the reported function-qualified strings and their counts
//!   are exactly the minimal hot strings found by counting every window of every length on
//!   [`oracle::qualified_events`] (computed once per trace); sorted by cost; when none is hot,
//!   the reported costliest is the costliest window of all.
//!
//! Scheme 3 (a chunked container, zstd and gzip, ~64 chunks) does not depend on the grammar and
//! is checked once per trace on the same paths. Prints one `PASS`/`FAIL` line per trace and
//! grammar and one for scheme 3; exit status 1 if any failed, 2 if a trace cannot be read.

use std::collections::BTreeMap;
use std::io::Cursor;
use std::path::{Path, PathBuf};
use std::time::Instant;

use rustc_hash::{FxHashMap, FxHashSet};
use wpp_grammar::expand::expand_into;
use wpp_grammar::parallel::{self, Parallelism};
use wpp_grammar::{compress_threads, Algorithm, Grammar, RuleId};
use wpp_query::dag::Subpaths;
use wpp_query::expand::expand_range;
use wpp_query::hot::exact::hot_paths;
use wpp_query::hot::{hot_subpaths, HotConfig};
use wpp_query::matching::chunked::{self, ChunkWriter, ChunkedTrace, Codec};
use wpp_query::matching::levels::LevelIndex;
use wpp_query::matching::partition::{self, PartitionIndex};
use wpp_query::matching::{compressed, scheme1, Mode, PathQuery, StreamMatch};
use wpp_query::oracle;
use wpp_trace::file::threads::split_threads;
use wpp_trace::{Alphabet, BlockId, Event, FunctionId, ProgramDb, Terminal, ThreadId};

/// Deterministic sampling (SplitMix64): the same seed checks the same queries.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`).
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// One thread's stream: its events and their terminals.
struct Stream {
    thread: ThreadId,
    events: Vec<Event>,
    terms: Vec<Terminal>,
}

/// Per thread: (first, count), threads without occurrences left out.
type Answers = BTreeMap<u32, (Option<u64>, u64)>;

/// A path query with the oracle's answers counting all occurrences and stopping at the first.
type Expected = (PathQuery, [Answers; 2]);

const MODES: [Mode; 2] = [Mode::Count, Mode::First];

fn answers(v: &[StreamMatch], mode: Mode) -> Answers {
    v.iter()
        .map(|s| {
            let count = if mode == Mode::Count {
                s.count.unwrap_or(0)
            } else {
                u64::from(s.first.is_some())
            };
            (s.thread, (s.first, count))
        })
        .filter(|(_, a)| *a != (None, 0))
        .collect()
}

/// The oracle's answers, shaped like [`answers`] of `mode`.
fn oracle_answers(streams: &[Stream], q: &PathQuery, mode: Mode) -> Answers {
    streams
        .iter()
        .map(|s| {
            let (first, count) = oracle::path_occurrences(&s.events, q.function, &q.path);
            let count = if mode == Mode::Count {
                count
            } else {
                u64::from(first.is_some())
            };
            (s.thread.0, (first, count))
        })
        .filter(|(_, a)| *a != (None, 0))
        .collect()
}

/// The first `n` events of a trace, split into threads.
fn read(path: &Path, n: u64) -> Result<(ProgramDb, Vec<Event>, Alphabet, Vec<Stream>), String> {
    let err = |e: wpp_trace::TraceError| format!("cannot read {}: {e}", path.display());
    let mut r = wpp_paths::trace::open(path).map_err(err)?;
    let db = r.program().clone();
    let mut all = Vec::new();
    while let Some(batch) = r.next_batch().map_err(err)? {
        let room = (n as usize).saturating_sub(all.len());
        all.extend_from_slice(&batch[..batch.len().min(room)]);
        if all.len() as u64 >= n {
            break;
        }
    }
    let mut alphabet = Alphabet::new();
    let mut streams = Vec::new();
    for (thread, events) in split_threads(&all) {
        let terms = events
            .iter()
            .map(|&e| alphabet.intern(e))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| format!("{}: more distinct events than terminals", path.display()))?;
        streams.push(Stream {
            thread,
            events,
            terms,
        });
    }
    Ok((db, all, alphabet, streams))
}

/// The queries, without duplicates: rare, medium and frequent by chunk coverage, windows of
/// random invocations, random block sequences and a path that cannot occur. Chosen on the
/// longest thread.
fn queries(
    streams: &[Stream],
    container: &ChunkedTrace<Cursor<Vec<u8>>>,
    rng: &mut Rng,
) -> Vec<PathQuery> {
    let Some((ti, main)) = streams
        .iter()
        .enumerate()
        .max_by_key(|(_, s)| s.events.len())
    else {
        return Vec::new();
    };
    let mut out = coverage_queries(&main.events, &container.per_thread[ti].1);
    let (windows, own) = window_queries(&main.events, rng);
    out.extend(windows);
    out.extend(random_queries(&own, rng));
    let mut unique: Vec<PathQuery> = Vec::with_capacity(out.len());
    for q in out {
        if !unique.contains(&q) {
            unique.push(q);
        }
    }
    if let Some(q) = unique.first() {
        // The first path followed by a block the function never ran: it cannot occur.
        let foreign = own
            .iter()
            .find(|(f, _)| *f == q.function)
            .and_then(|(_, b)| b.last())
            .map_or(0, |b| b.0 + 1);
        let mut path = q.path.clone();
        path.push(BlockId(foreign));
        unique.push(PathQuery {
            function: q.function,
            path,
        });
    }
    unique
}

/// Rare, medium, frequent: the most frequent 3-block path of the function whose chunk
/// coverage is closest to 1, half and all of the thread's chunks.
fn coverage_queries(events: &[Event], levels: &LevelIndex) -> Vec<PathQuery> {
    let paths = oracle::most_frequent_paths::<3>(events);
    let mut by_cov: Vec<(usize, FunctionId)> =
        paths.keys().map(|&f| (levels.coverage(f), f)).collect();
    by_cov.sort();
    [1, levels.len() / 2, levels.len()]
        .into_iter()
        .filter_map(|target| by_cov.iter().min_by_key(|(c, _)| c.abs_diff(target)))
        .map(|&(_, f)| PathQuery {
            function: f,
            path: paths[&f].0.to_vec(),
        })
        .collect()
}

/// The own blocks (1 to 12 of them) of the invocation running at 10 random blocks of the
/// trace, up to that block; and each function's blocks seen, sorted.
fn window_queries(
    events: &[Event],
    rng: &mut Rng,
) -> (Vec<PathQuery>, Vec<(FunctionId, Vec<BlockId>)>) {
    let mut cut_at: Vec<usize> = (0..10)
        .map(|_| rng.below(events.len().max(1) as u64) as usize)
        .collect();
    cut_at.sort_unstable();
    let mut next = cut_at.iter().peekable();
    let mut out = Vec::new();
    let mut own: FxHashMap<FunctionId, FxHashSet<BlockId>> = FxHashMap::default();
    let mut stack: Vec<(FunctionId, Vec<BlockId>)> = Vec::new();
    for (i, &e) in events.iter().enumerate() {
        match e {
            Event::Enter(f) => stack.push((f, Vec::new())),
            Event::Leave => {
                stack.pop();
            }
            Event::Block(b) => {
                let Some((f, blocks)) = stack.last_mut() else {
                    continue;
                };
                blocks.push(b);
                own.entry(*f).or_default().insert(b);
                while next.peek().is_some_and(|&&c| c <= i) {
                    next.next();
                    let len = 1 + rng.below(12.min(blocks.len() as u64)) as usize;
                    out.push(PathQuery {
                        function: *f,
                        path: blocks[blocks.len() - len..].to_vec(),
                    });
                }
            }
            Event::Path(_) | Event::Thread(_) => {}
        }
    }
    let mut own: Vec<(FunctionId, Vec<BlockId>)> = own
        .into_iter()
        .map(|(f, s)| {
            let mut v: Vec<BlockId> = s.into_iter().collect();
            v.sort_unstable();
            (f, v)
        })
        .collect();
    own.sort_unstable();
    (out, own)
}

/// Six random sequences (1 to 8 blocks) of a random function's own blocks; most never occur.
fn random_queries(own: &[(FunctionId, Vec<BlockId>)], rng: &mut Rng) -> Vec<PathQuery> {
    if own.is_empty() {
        return Vec::new();
    }
    (0..6)
        .map(|_| {
            let (f, blocks) = &own[rng.below(own.len() as u64) as usize];
            let len = 1 + rng.below(8) as usize;
            let path = (0..len)
                .map(|_| blocks[rng.below(blocks.len() as u64) as usize])
                .collect();
            PathQuery { function: *f, path }
        })
        .collect()
}

/// Schemes 1, 2 and 4 on one grammar against the oracle; returns the number of (query, mode)
/// pairs checked.
fn check_matching(
    g: &Grammar,
    alphabet: &Alphabet,
    expected: &[Expected],
    fails: &mut Vec<String>,
) -> usize {
    let index = match PartitionIndex::build(g, alphabet, 64)
        .and_then(|i| PartitionIndex::from_bytes(&i.to_bytes(), 0))
        .and_then(|i| i.validate(g).map(|()| i))
    {
        Ok(i) => i,
        Err(e) => {
            fails.push(format!("scheme 4 index: {e}"));
            return 0;
        }
    };
    let mut checked = 0;
    for (q, want) in expected {
        for (mode, want) in MODES.into_iter().zip(want) {
            let got = [
                ("scheme 1", scheme1::run(g, alphabet, q, mode)),
                ("scheme 2", compressed::run(g, alphabet, q, mode)),
                (
                    "scheme 4",
                    partition::run(g, alphabet, &index, q, mode).map(|r| r.0),
                ),
            ];
            for (name, r) in got {
                judge(name, q, mode, r, want, fails);
            }
            checked += 1;
        }
    }
    checked
}

/// Records a failure unless `got` (scheme `name`'s answer to `q` in `mode`) is the oracle's.
fn judge<E: std::fmt::Display>(
    name: impl std::fmt::Display,
    q: &PathQuery,
    mode: Mode,
    got: Result<Vec<StreamMatch>, E>,
    want: &Answers,
    fails: &mut Vec<String>,
) {
    match got {
        Ok(v) if answers(&v, mode) == *want => {}
        Ok(v) => fails.push(format!(
            "{name} {mode:?} {q:?}: {:?}, oracle {want:?}",
            answers(&v, mode)
        )),
        Err(e) => fails.push(format!("{name} {mode:?} {q:?}: {e}")),
    }
}

/// Scheme 3 (zstd and gzip containers of the interleaved trace) against the oracle.
fn check_chunked(
    db: &ProgramDb,
    all: &[Event],
    chunk_bytes: usize,
    expected: &[Expected],
    fails: &mut Vec<String>,
) -> usize {
    let mut checked = 0;
    for codec in [Codec::Zstd(3), Codec::Gzip(6)] {
        let mut c = container(db, all, codec, chunk_bytes);
        for (q, want) in expected {
            for (mode, want) in MODES.into_iter().zip(want) {
                let got = chunked::run(&mut c, q, mode).map(|r| r.0);
                judge(format!("scheme 3 {codec:?}"), q, mode, got, want, fails);
                checked += 1;
            }
        }
    }
    checked
}

fn container(
    db: &ProgramDb,
    all: &[Event],
    codec: Codec,
    chunk_bytes: usize,
) -> ChunkedTrace<Cursor<Vec<u8>>> {
    let mut w = ChunkWriter::new(Vec::new(), db, codec, chunk_bytes).expect("in memory");
    for &e in all {
        w.push(e).expect("in memory");
    }
    let (bytes, _) = w.finish().expect("in memory");
    ChunkedTrace::open(Cursor::new(bytes)).expect("a container this program wrote")
}

/// Every reported hot subpath, checked by brute force; returns how many were checked.
fn check_hot(g: &Grammar, streams: &[Stream], fails: &mut Vec<String>) -> usize {
    let n: u64 = streams.iter().map(|s| s.terms.len() as u64).sum();
    let terminals = g.num_terminals() as usize;
    let weighted: Vec<u64> = (0..terminals as u64).map(|t| 1 + t % 5).collect();
    let configs = [
        (
            None,
            HotConfig {
                min_length: 2,
                max_length: 8,
                min_cost: (n / 50).max(2),
            },
        ),
        (
            Some(&weighted[..]),
            HotConfig {
                min_length: 1,
                max_length: 16,
                min_cost: (n / 20).max(2),
            },
        ),
    ];
    let mut checked = 0;
    for (costs, cfg) in configs {
        let hot = match hot_subpaths(g, costs, cfg) {
            Ok(h) => h,
            Err(e) => {
                fails.push(format!("hot subpaths {cfg:?}: {e}"));
                continue;
            }
        };
        // Naive counts of every window of every reported length.
        let wanted: FxHashSet<&[u32]> = hot.iter().map(|h| &h.terminals[..]).collect();
        let lengths: FxHashSet<usize> = wanted.iter().map(|w| w.len()).collect();
        let mut seen: FxHashMap<Vec<u32>, u64> = FxHashMap::default();
        for s in streams {
            let raw: Vec<u32> = s.terms.iter().map(|t| t.0).collect();
            for &len in &lengths {
                for w in raw.windows(len) {
                    if wanted.contains(w) {
                        *seen.entry(w.to_vec()).or_default() += 1;
                    }
                }
            }
        }
        for h in &hot {
            let len = h.terminals.len();
            let sum: u64 = h
                .terminals
                .iter()
                .map(|&t| costs.map_or(1, |c| c[t as usize]))
                .sum();
            let occurs = seen.get(&h.terminals).copied().unwrap_or(0);
            let mut at = Vec::new();
            expand_range(g, RuleId(h.rule), h.offset, h.offset + len as u64, &mut at);
            let here = at.iter().map(|t| t.0).eq(h.terminals.iter().copied());
            if !(cfg.min_length..=cfg.max_length).contains(&len)
                || h.cost != sum * h.frequency
                || h.cost < cfg.min_cost
                || occurs < h.frequency
                || !here
            {
                fails.push(format!(
                    "hot subpath {h:?} ({cfg:?}): length {len}, terminal cost {sum}, occurs {occurs}, at its rule offset: {here}"
                ));
            }
            checked += 1;
        }
    }
    checked
}

type Key = Vec<(u32, Option<u32>)>;

/// The exact hot paths of a trace by brute force: every window of every length counted on the
/// function-qualified streams, then the hot ones with no hot window inside (the definition in
/// [`wpp_query::hot::exact`]), and the costliest window of all.
struct HotOracle {
    cfg: HotConfig,
    minimal: FxHashMap<Key, u64>,
    costliest: u64,
}

impl HotOracle {
    fn new(streams: &[Stream]) -> Self {
        let n: u64 = streams.iter().map(|s| s.terms.len() as u64).sum();
        let cfg = HotConfig {
            min_length: 2,
            max_length: 8,
            min_cost: (n / 100).max(2),
        };
        let mut counts: FxHashMap<Key, u64> = FxHashMap::default();
        for s in streams {
            let q: Key = s
                .terms
                .iter()
                .zip(oracle::qualified_events(&s.events))
                .map(|(t, (_, f))| (t.0, f.map(|f| f.0)))
                .collect();
            for len in cfg.min_length..=cfg.max_length {
                for w in q.windows(len) {
                    *counts.entry(w.to_vec()).or_default() += 1;
                }
            }
        }
        let cost = |k: &[(u32, Option<u32>)]| counts.get(k).map_or(0, |&c| c * k.len() as u64);
        let hot = |k: &[(u32, Option<u32>)]| cost(k) >= cfg.min_cost;
        let minimal = counts
            .keys()
            .filter(|k| hot(k) && !(cfg.min_length..k.len()).any(|m| k.windows(m).any(hot)))
            .map(|k| (k.clone(), counts[k]))
            .collect();
        let costliest = counts.keys().map(|k| cost(k)).max().unwrap_or(0);
        HotOracle {
            cfg,
            minimal,
            costliest,
        }
    }
}

/// The exact hot paths (`wpp hot`) against [`HotOracle`]: the same strings with the same
/// counts and costs, sorted by cost; when none, the costliest string's cost. Returns how many.
fn check_hot_paths(
    g: &Grammar,
    alphabet: &Alphabet,
    want: &HotOracle,
    fails: &mut Vec<String>,
) -> usize {
    let cfg = want.cfg;
    let found = match hot_paths(g, alphabet, None, cfg) {
        Ok(f) => f,
        Err(e) => {
            fails.push(format!("hot paths {cfg:?}: {e}"));
            return 0;
        }
    };
    let mut got: FxHashMap<Key, u64> = FxHashMap::default();
    for p in &found.paths {
        let k: Key = p
            .terminals
            .iter()
            .copied()
            .zip(p.functions.iter().copied())
            .collect();
        if p.cost != p.count * k.len() as u64 || got.insert(k, p.count).is_some() {
            fails.push(format!(
                "hot path {p:?} ({cfg:?}): repeated or cost not count × length"
            ));
        }
    }
    if got != want.minimal {
        let missing = want
            .minimal
            .keys()
            .filter(|k| !got.contains_key(*k))
            .count();
        let wrong = got
            .iter()
            .filter(|(k, c)| want.minimal.get(*k) != Some(c))
            .count();
        fails.push(format!(
            "hot paths ({cfg:?}): {missing} minimal hot strings missing, {wrong} reported wrongly"
        ));
    }
    if found.paths.windows(2).any(|w| w[0].cost < w[1].cost) {
        fails.push("hot paths not sorted by cost".into());
    }
    if let Some(b) = &found.best {
        if b.cost != want.costliest {
            fails.push(format!(
                "costliest {b:?}: the trace's costliest costs {}",
                want.costliest
            ));
        }
    }
    got.len()
}

/// Subpath frequencies of sampled windows and random sequences against naive counting.
fn check_subpaths(
    g: &Grammar,
    streams: &[Stream],
    rng: &mut Rng,
    fails: &mut Vec<String>,
) -> usize {
    let sub = Subpaths::new(g);
    let terminals = u64::from(g.num_terminals()).max(1);
    let mut qs: Vec<Vec<Terminal>> = Vec::new();
    for _ in 0..16 {
        let s = &streams[rng.below(streams.len() as u64) as usize].terms;
        let len = 1 + rng.below(8) as usize;
        if s.len() >= len {
            let at = rng.below((s.len() - len + 1) as u64) as usize;
            qs.push(s[at..at + len].to_vec());
        }
    }
    for _ in 0..4 {
        let len = 1 + rng.below(4) as usize;
        qs.push(
            (0..len)
                .map(|_| Terminal(rng.below(terminals) as u32))
                .collect(),
        );
    }
    for q in &qs {
        let got = match sub.count(q) {
            Ok(v) => v,
            Err(e) => {
                fails.push(format!("subpath {q:?}: {e}"));
                continue;
            }
        };
        for (s, c) in streams.iter().zip(&got) {
            let want = oracle::subpath_occurrences(&s.terms, q);
            if (c.count, c.first, c.last) != want || c.thread != s.thread.0 {
                fails.push(format!(
                    "subpath {q:?} in thread {}: {:?}, oracle (count, first, last) {want:?}",
                    s.thread.0, c
                ));
            }
        }
    }
    qs.len()
}

/// Every check on one grammar; prints its PASS/FAIL line.
/// Compresses the streams with `alg`: on one thread, or with `parallel` on two, in about 8
/// chunks (boundaries wherever they fall) joined into one grammar.
fn build(
    alg: Algorithm,
    streams: &[Stream],
    parallel: bool,
) -> Result<Grammar, Box<dyn std::error::Error>> {
    let refs: Vec<(ThreadId, &[Terminal])> =
        streams.iter().map(|s| (s.thread, &s.terms[..])).collect();
    if !parallel {
        return Ok(compress_threads(alg, &refs)?);
    }
    let total: usize = streams.iter().map(|s| s.terms.len()).sum();
    let how = Parallelism {
        chunk_events: total / 7 + 1,
        ..Parallelism::threads(2)
    };
    Ok(parallel::compress_threads(alg, &refs, how)?)
}

fn check_grammar(
    name: &str,
    (alg, parallel): (Algorithm, bool),
    alphabet: &Alphabet,
    streams: &[Stream],
    expected: &[Expected],
    hot_oracle: &HotOracle,
    rng: &mut Rng,
) -> bool {
    let t = Instant::now();
    let label = match parallel {
        true => format!("{} parallel", alg.as_str()),
        false => alg.as_str().to_owned(),
    };
    let g = match build(alg, streams, parallel) {
        Ok(g) => g,
        Err(e) => {
            println!("FAIL  query {name} {label}: cannot compress: {e}");
            return false;
        }
    };
    let mut fails = Vec::new();
    for (start, s) in g.starts().iter().zip(streams) {
        let mut back = Vec::new();
        expand_into(&g, start.rule, &mut back);
        if back != s.terms || start.thread != s.thread {
            fails.push(format!(
                "thread {} does not expand to its stream",
                s.thread.0
            ));
        }
    }
    if g.starts().len() != streams.len() {
        fails.push(format!(
            "{} start rules for {} threads",
            g.starts().len(),
            streams.len()
        ));
    }
    let compressed = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let matched = check_matching(&g, alphabet, expected, &mut fails);
    let tm = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let hot = check_hot(&g, streams, &mut fails);
    let exact = check_hot_paths(&g, alphabet, hot_oracle, &mut fails);
    let th = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let subs = check_subpaths(&g, streams, rng, &mut fails);
    let ts = t.elapsed().as_secs_f64();
    report(
        &format!("query {name} {label}"),
        &format!(
            "{} rules, {} symbols; {} path queries × schemes 1, 2, 4 = oracle; {hot} hot subpaths and {exact} exact hot paths verified; {subs} subpath frequencies = oracle (compress {compressed:.1} s, match {tm:.1} s, hot {th:.1} s, subpaths {ts:.1} s)",
            g.num_rules(),
            g.num_symbols(),
            matched,
        ),
        &fails,
    )
}

fn report(what: &str, summary: &str, fails: &[String]) -> bool {
    if fails.is_empty() {
        println!("PASS  {what}: {summary}");
        return true;
    }
    println!("FAIL  {what}: {} of the checks failed", fails.len());
    for f in fails.iter().take(5) {
        println!("      {f}");
    }
    false
}

/// All checks on one trace; returns whether every one passed.
fn check_trace(path: &Path, name: &str, events: u64, seed: u64) -> Result<bool, String> {
    let t0 = Instant::now();
    let (db, all, alphabet, streams) = read(path, events)?;
    let mut rng = Rng(seed);
    let bytes: usize = all
        .iter()
        .map(|&e| {
            let mut b = Vec::new();
            wpp_trace::file::encode_event(&mut b, e);
            b.len()
        })
        .sum();
    let chunk_bytes = (bytes / 64).max(1 << 10);
    let coverage = container(&db, &all, Codec::Zstd(1), chunk_bytes);
    let qs = queries(&streams, &coverage, &mut rng);
    drop(coverage);
    let expected: Vec<Expected> = qs
        .iter()
        .map(|q| {
            let want = [Mode::Count, Mode::First].map(|m| oracle_answers(&streams, q, m));
            (q.clone(), want)
        })
        .collect();
    let absent = expected.iter().filter(|(_, w)| w[0].is_empty()).count();
    let oracle_time = t0.elapsed().as_secs_f64();
    let t = Instant::now();
    let mut fails = Vec::new();
    let n3 = check_chunked(&db, &all, chunk_bytes, &expected, &mut fails);
    let mut ok = report(
        &format!("query {name} scheme 3"),
        &format!(
            "{} events, {} threads; {} paths ({absent} never occur), {n3} queries on zstd and gzip containers of ~64 chunks = oracle (reading, choosing paths and the oracle {oracle_time:.1} s, scheme 3 {:.1} s)",
            all.len(),
            streams.len(),
            expected.len(),
            t.elapsed().as_secs_f64()
        ),
        &fails,
    );
    drop(all);
    let hot = HotOracle::new(&streams);
    for parallel in [false, true] {
        for alg in Algorithm::ALL {
            let how = (alg, parallel);
            ok &= check_grammar(name, how, &alphabet, &streams, &expected, &hot, &mut rng);
        }
    }
    Ok(ok)
}

fn main() {
    let mut events = 1_000_000u64;
    let mut seed = 1u64;
    let mut name = None;
    let mut traces: Vec<PathBuf> = Vec::new();
    let mut args = std::env::args().skip(1);
    let usage = "usage: wpp-query-check [--events N] [--seed S] [--name NAME] TRACE...";
    while let Some(a) = args.next() {
        let mut num = |what: &str| -> u64 {
            args.next()
                .and_then(|v| v.replace('_', "").parse().ok())
                .unwrap_or_else(|| {
                    eprintln!("wpp-query-check: {what} needs a number\n{usage}");
                    std::process::exit(2)
                })
        };
        match a.as_str() {
            "--events" => events = num("--events"),
            "--seed" => seed = num("--seed"),
            "--name" => name = args.next(),
            "-h" | "--help" => {
                println!("{usage}");
                return;
            }
            _ => traces.push(a.into()),
        }
    }
    if traces.is_empty() {
        eprintln!("{usage}");
        std::process::exit(2);
    }
    let mut status = 0;
    for path in &traces {
        let label = match &name {
            Some(n) if traces.len() == 1 => n.clone(),
            Some(n) => format!(
                "{n} {}",
                path.file_name().unwrap_or_default().to_string_lossy()
            ),
            None => path.display().to_string(),
        };
        match check_trace(path, &label, events, seed) {
            Ok(true) => {}
            Ok(false) => status = status.max(1),
            Err(e) => {
                println!("FAIL  query {label}: {e}");
                status = 2;
            }
        }
    }
    std::process::exit(status);
}
