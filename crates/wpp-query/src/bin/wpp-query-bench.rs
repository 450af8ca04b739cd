//! Zhang–Gupta Figures 12–13 on a block trace: index sizes, and for a rare, a medium and a
//! frequent path the time of each matching scheme (decompression and matching separately for
//! schemes 1 and 3); then Larus Figure 7's hot subpaths, time and peak memory.
//!
//! ```text
//! wpp-query-bench [EVENTS] [SEED] [CHUNKS]                 a synthetic trace (wpp_trace::synth)
//! wpp-query-bench --trace FILE [--events N] [--chunks C]   the first N events of a recording
//! ```
//!
//! `--partitions P` sets scheme 4's number of start-rule partitions (default
//! [`DEFAULT_PARTITIONS`]).
//!
//! Defaults: 10^7 synthetic events, seed 1; for `--trace`, the first 10^8 events (or the whole
//! trace if shorter) of its first thread; chunk size chosen so the trace makes about `C = 128`
//! chunks, as the paper's 512 MB in 4 MB chunks, and 128 start-rule partitions for scheme 4.
//!
//! The rare, medium and frequent functions are three distinct functions whose presence in
//! scheme 3's chunks is closest to 1 chunk, half the chunks and all of them (ties: the most
//! frequent path); the path of a function is its most frequent sequence of three own blocks
//! ([`wpp_query::oracle::most_frequent_paths`]), or of two or one if it never runs three in a
//! row. Every scheme must report the same count and
//! first position, or the benchmark panics. Counting all occurrences scans the whole trace
//! (Figure 13); "first occurrence" is the paper's query, which stops at the first match.
//! Every time is the best of several runs (3 for scheme 1's decompression and matching and for
//! scheme 3 counting, 5 for schemes 2 and 4; first occurrences of schemes 1 and 3 run once):
//! the machine is shared, and single timings mostly measure the neighbours.
//!
//! # Real recordings (2026-11-21, release, 2 cores shared with other jobs)
//!
//! First 10^8 events of the `-O2` full-size block recordings (`bench/build/*/blocks-raw.trace`;
//! bzip2: one of its six processes). `|R| + |S|` = grammar symbols; ratios are best-of-n
//! times (see above):
//!
//! | trace | rules | \|R\| + \|S\| | s1 / s4, rare | s1 / s4, medium | s1 / s4, frequent | s1 match / s2 | hot L=100 |
//! |---|---|---|---|---|---|---|---|
//! | zlib | 219,724 | 2,028,183 | 2,442–2,680× | 36–44× | 19–25× | 4.0–5.1× | 0.52–0.68 s, 117 MiB |
//! | bzip2 | 259,422 | 2,059,641 | 4,936–6,557× | 141–171× | 29–49× | 3.1–5.3× | 0.92–1.78 s, 140 MiB |
//! | lua | 13,619 | 86,024 | 3,098–8,163× | 2,848–6,006× | 2,048–5,058× | 221–537× | ≤ 0.012 s, 28 MiB |
//! | sqlite | 7,107 | 33,804 | 4,980–7,233× | 2,753–4,877× | 1,579–2,548× | 683–1,170× | 0.007 s, 23 MiB |
//!
//! (ranges: two runs, every path type; "hot" = L=100, C=10^6, peak RSS after the trace is
//! dropped.)
//!
//! Every target holds: scheme 4 on the rare path ≥ 1000× faster than scheme 1 (decompression +
//! matching), scheme 2 faster than scheme 1's matching alone on every path type, hot subpaths in
//! seconds with memory that follows the grammar (the 10^8-event trace alone is 800 MB of
//! events). zlib and bzip2 compress 25–50× less than the synthetic traces, so scheme 2 leads
//! scheme 1 by only 3–5× there (the paper's Figure 13 shape); the first 10^8 events of Lua and
//! SQLite are loops over a few hundred distinct paths and compress to a few thousand rules.

use std::io::Cursor;
use std::path::PathBuf;
use std::time::Instant;

use wpp_grammar::{compress, Algorithm, Grammar};
use wpp_query::hot::{hot_subpaths, HotConfig};
use wpp_query::matching::chunked::{self, ChunkWriter, ChunkedTrace, Codec};
use wpp_query::matching::partition::{self, PartitionIndex, DEFAULT_PARTITIONS};
use wpp_query::matching::{classify, compressed, scheme1, Mode, PathQuery, StreamMatch};
use wpp_query::oracle::most_frequent_paths;
use wpp_query::pattern::Pattern;
use wpp_trace::synth::{SynthProgram, TraceKind};
use wpp_trace::{Alphabet, BlockId, Event, FunctionId, ProgramDb, Terminal, ThreadDemux};

fn secs(t: Instant) -> f64 {
    t.elapsed().as_secs_f64()
}

/// Peak resident memory since the last reset, in MiB (Linux).
fn peak_mib() -> f64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|k| k.parse::<f64>().ok())
        .map_or(0.0, |k| k / 1024.0)
}

fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// What to measure.
struct Args {
    trace: Option<PathBuf>,
    events: u64,
    seed: u64,
    chunks: usize,
    partitions: usize,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        trace: None,
        events: 0,
        seed: 1,
        chunks: 128,
        partitions: DEFAULT_PARTITIONS,
    };
    let mut positional = Vec::new();
    let mut it = std::env::args().skip(1);
    let num = |v: Option<String>, what: &str| -> Result<u64, String> {
        v.as_deref()
            .and_then(|s| s.replace('_', "").parse().ok())
            .ok_or(format!("{what} needs a number"))
    };
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--trace" => a.trace = Some(it.next().ok_or("--trace needs a file")?.into()),
            "--events" => a.events = num(it.next(), "--events")?,
            "--chunks" => a.chunks = num(it.next(), "--chunks")? as usize,
            "--partitions" => a.partitions = num(it.next(), "--partitions")? as usize,
            _ => positional.push(num(Some(arg), "a positional argument")?),
        }
    }
    match (&a.trace, positional.as_slice()) {
        (Some(_), []) => {}
        (None, rest) if rest.len() <= 3 => {
            if let Some(&n) = rest.first() {
                a.events = n;
            }
            if let Some(&s) = rest.get(1) {
                a.seed = s;
            }
            if let Some(&c) = rest.get(2) {
                a.chunks = c as usize;
            }
        }
        _ => return Err("usage: wpp-query-bench [EVENTS [SEED [CHUNKS]]] | --trace FILE [--events N] [--chunks C] [--partitions P]".into()),
    }
    if a.events == 0 {
        a.events = if a.trace.is_some() {
            100_000_000
        } else {
            10_000_000
        };
    }
    Ok(a)
}

/// The first `n` events of the first thread of a recorded trace.
fn read_prefix(path: &PathBuf, n: u64) -> Result<(ProgramDb, Vec<Event>), String> {
    let err = |e: wpp_trace::TraceError| format!("cannot read {}: {e}", path.display());
    let mut r = wpp_paths::trace::open(path).map_err(err)?;
    let db = r.program().clone();
    let mut demux = ThreadDemux::new();
    let mut events = Vec::with_capacity(n.min(1 << 28) as usize);
    let mut others = 0u64;
    'read: while let Some(batch) = r.next_batch().map_err(err)? {
        for &e in batch {
            match demux.route(e) {
                Some(t) if t.0 == 0 => events.push(e),
                Some(_) => others += 1,
                None => {}
            }
            if events.len() as u64 == n {
                break 'read;
            }
        }
    }
    if others > 0 {
        println!("note: {others} events of other threads skipped; thread 0 only");
    }
    Ok((db, events))
}

/// Interns one thread's events and compresses them with SEQUITUR.
fn grammar_of(events: &[Event]) -> (Alphabet, Grammar) {
    let mut alphabet = Alphabet::new();
    let terms: Vec<Terminal> = events
        .iter()
        .map(|&e| alphabet.intern(e).expect("alphabet"))
        .collect();
    let t = Instant::now();
    let g = compress(Algorithm::Sequitur, &[&terms]).expect("compress");
    println!(
        "SEQUITUR: {} rules, {} symbols (|R| + |S|), start rule {} symbols, {} terminals ({:.1} s, peak RSS so far {:.0} MiB)",
        g.num_rules(),
        g.num_symbols(),
        g.body(g.starts()[0].rule).len(),
        alphabet.len(),
        secs(t),
        peak_mib()
    );
    (alphabet, g)
}

/// Scheme 3 containers (zstd-3 and gzip-6) with chunks sized to make about `chunks` of them.
fn containers(
    db: &ProgramDb,
    events: &[Event],
    chunks: usize,
) -> Vec<(Codec, ChunkedTrace<Cursor<Vec<u8>>>)> {
    let mut scratch = Vec::new();
    let bytes: usize = events
        .iter()
        .map(|&e| {
            scratch.clear();
            wpp_trace::file::encode_event(&mut scratch, e);
            scratch.len()
        })
        .sum();
    let chunk_bytes = (bytes / chunks.max(1)).max(1 << 12);
    let mut out = Vec::new();
    for codec in [Codec::Zstd(3), Codec::Gzip(6)] {
        let t = Instant::now();
        let mut w = ChunkWriter::new(Vec::new(), db, codec, chunk_bytes).expect("in memory");
        for &e in events {
            w.push(e).expect("in memory");
        }
        let (file, index_bytes) = w.finish().expect("in memory");
        let len = file.len();
        let c = ChunkedTrace::open(Cursor::new(file)).expect("own container");
        println!(
            "scheme 3 container {codec:?}: {len} bytes for {bytes} trace bytes, {} chunks of {} KiB, index {index_bytes} bytes ({:.1} s)",
            c.chunks.len(),
            chunk_bytes >> 10,
            secs(t)
        );
        out.push((codec, c));
    }
    out
}

/// Each function's most frequent path of three own blocks, or of two or one if it never runs
/// three in a row, with its number of occurrences.
fn paths_by_function(events: &[Event]) -> Vec<(FunctionId, Vec<BlockId>, u64)> {
    let mut all: rustc_hash::FxHashMap<FunctionId, (Vec<BlockId>, u64)> = Default::default();
    for (f, (p, n)) in most_frequent_paths::<1>(events) {
        all.insert(f, (p.to_vec(), n));
    }
    for (f, (p, n)) in most_frequent_paths::<2>(events) {
        all.insert(f, (p.to_vec(), n));
    }
    for (f, (p, n)) in most_frequent_paths::<3>(events) {
        all.insert(f, (p.to_vec(), n));
    }
    all.into_iter().map(|(f, (p, n))| (f, p, n)).collect()
}

/// The frequent, rare and medium queries (in that order of choice, three distinct functions
/// when there are three): the function whose chunk coverage is closest to all chunks, to one
/// chunk, to half the chunks (ties: the most frequent path). Returns per query its label, the
/// function's coverage and the query.
fn pick_queries(
    events: &[Event],
    trace: &ChunkedTrace<Cursor<Vec<u8>>>,
    db: &ProgramDb,
) -> Vec<(&'static str, usize, PathQuery)> {
    let levels = &trace.per_thread[0].1;
    let total = levels.len();
    let mut candidates: Vec<(usize, FunctionId, Vec<BlockId>, u64)> = paths_by_function(events)
        .into_iter()
        .map(|(f, p, n)| (levels.coverage(f), f, p, n))
        .filter(|&(c, ..)| c > 0)
        .collect();
    candidates.sort_by_key(|(c, f, ..)| (std::cmp::Reverse(*c), *f));
    let top: Vec<String> = candidates
        .iter()
        .take(8)
        .map(|(c, f, p, _)| format!("{} {c} ({}-block path)", db.name(*f), p.len()))
        .collect();
    println!(
        "{} functions run blocks; chunks containing the most covered: {}",
        candidates.len(),
        top.join(", ")
    );
    let mut picked: Vec<(&'static str, usize, PathQuery)> = Vec::new();
    for (label, target) in [("frequent", total), ("rare", 1), ("medium", total / 2)] {
        let fresh = candidates
            .iter()
            .filter(|(_, f, ..)| picked.iter().all(|(_, _, q)| q.function != *f))
            .min_by_key(|(c, _, _, n)| (c.abs_diff(target), std::cmp::Reverse(*n)));
        let Some((cov, f, p, _)) = fresh.or(candidates.first()) else {
            break;
        };
        let q = PathQuery {
            function: *f,
            path: p.clone(),
        };
        picked.push((label, *cov, q));
    }
    let order = ["rare", "medium", "frequent"];
    picked.sort_by_key(|(l, ..)| order.iter().position(|o| o == l));
    picked
}

fn only(v: Vec<StreamMatch>) -> (Option<u64>, u64) {
    v.first()
        .map_or((None, 0), |s| (s.first, s.count.unwrap_or(0)))
}

/// Times every scheme on one query and prints its table row; panics if the schemes disagree.
#[allow(clippy::too_many_arguments)]
fn row(
    label: &str,
    cov: usize,
    total: usize,
    q: &PathQuery,
    db: &ProgramDb,
    g: &Grammar,
    alphabet: &Alphabet,
    index: &PartitionIndex,
    containers: &mut [(Codec, ChunkedTrace<Cursor<Vec<u8>>>)],
) -> String {
    let mut expanded = Vec::new();
    let ((), dec) = best_of(3, || {
        expanded.clear();
        wpp_grammar::expand::expand_into(g, g.starts()[0].rule, &mut expanded);
    });
    let pattern = Pattern::new(&q.path).expect("short path");
    let kinds = classify(alphabet, q.function, &pattern);
    let (a1, m1) = best_of(3, || {
        scheme1::match_terminals(&pattern, &kinds, &expanded, Mode::Count)
    });
    drop(expanded);
    let (a2, s2) = best_of(5, || {
        only(compressed::run(g, alphabet, q, Mode::Count).expect("scheme 2"))
    });
    let (_, setup) = best_of(5, || compressed::Matcher::new(g, alphabet, q).map(|_| ()));
    assert_eq!(a2, a1, "scheme 2 disagrees with scheme 1");
    let mut s3 = Vec::new();
    for (codec, c) in containers.iter_mut() {
        let ((r, st), _) = best_of(3, || chunked::run(c, q, Mode::Count).expect("scheme 3"));
        assert_eq!(only(r), a1, "scheme 3 ({codec:?}) disagrees with scheme 1");
        s3.push(format!(
            "{:.3} + {:.3} s",
            st.decompress.as_secs_f64(),
            st.matching.as_secs_f64()
        ));
    }
    let ((r4, st4), s4) = best_of(5, || {
        partition::run(g, alphabet, index, q, Mode::Count).expect("scheme 4")
    });
    assert_eq!(only(r4), a1, "scheme 4 disagrees with scheme 1");

    // First occurrence: each scheme stops at the first match.
    let t = Instant::now();
    let f1 = only(scheme1::run(g, alphabet, q, Mode::First).expect("scheme 1")).0;
    let t1 = secs(t);
    let (f2, t2) = best_of(5, || {
        only(compressed::run(g, alphabet, q, Mode::First).expect("scheme 2")).0
    });
    let t = Instant::now();
    let (r3, _) = chunked::run(&mut containers[0].1, q, Mode::First).expect("scheme 3");
    let f3 = only(r3).0;
    let t3 = secs(t);
    let (f4, t4) = best_of(5, || {
        let (r, _) = partition::run(g, alphabet, index, q, Mode::First).expect("scheme 4");
        only(r).0
    });
    assert!(
        [f1, f2, f3, f4].iter().all(|&f| f == a1.0),
        "first occurrences disagree: {a1:?} {f1:?} {f2:?} {f3:?} {f4:?}"
    );
    println!(
        "| {label} {:?} | {} | {cov}/{total} | {} | {dec:.3} s | {m1:.3} s | {s2:.4} s | {} | {} | {} | {}/{} ({} partitions) | {} / {} / {} / {} |",
        q.path.iter().map(|b| b.0).collect::<Vec<_>>(),
        db.name(q.function),
        a1.1,
        s3[0],
        s3[1],
        dur(s4),
        st4.rules_summarized,
        g.num_rules(),
        st4.scanned,
        dur(t1),
        dur(t2),
        dur(t3),
        dur(t4),
    );
    format!(
        "{label}: s1 (decompress + match) / s4 = {:.0}×, s1 match / s2 = {:.1}×, s1 (decompress + match) / s2 = {:.1}×; scheme 2/4 set-up (per-rule table) {}",
        (dec + m1) / s4,
        m1 / s2,
        (dec + m1) / s2,
        dur(setup)
    )
}

/// The result and time of the fastest of `n` runs of `f`: the machine is shared, and timings
/// would otherwise mostly measure the neighbours.
fn best_of<T>(n: usize, mut f: impl FnMut() -> T) -> (T, f64) {
    let mut best: Option<(T, f64)> = None;
    for _ in 0..n.max(1) {
        let t = Instant::now();
        let out = f();
        let s = secs(t);
        if best.as_ref().is_none_or(|b| s < b.1) {
            best = Some((out, s));
        }
    }
    best.expect("ran at least once")
}

/// A duration in the unit that suits it.
fn dur(s: f64) -> String {
    if s >= 0.1 {
        format!("{s:.2} s")
    } else if s >= 1e-3 {
        format!("{:.1} ms", s * 1e3)
    } else {
        format!("{:.0} µs", s * 1e6)
    }
}

/// Hot subpaths on the grammar alone (the trace is gone): time and peak memory.
fn hot(g: &Grammar) {
    for (l, c) in [(10, 100_000u64), (100, 1_000_000)] {
        reset_peak();
        let before = peak_mib();
        let t = Instant::now();
        let hot = hot_subpaths(
            g,
            None,
            HotConfig {
                min_length: 2,
                max_length: l,
                min_cost: c,
            },
        )
        .expect("valid config");
        println!(
            "hot subpaths L={l} C={c}: {} found in {:.3} s, peak RSS {:.0} MiB (process baseline {:.0} MiB)",
            hot.len(),
            secs(t),
            peak_mib(),
            before
        );
    }
}

fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("wpp-query-bench: {e}");
            std::process::exit(2);
        }
    };
    let t = Instant::now();
    let (db, events) = match &args.trace {
        Some(path) => match read_prefix(path, args.events) {
            Ok(x) => x,
            Err(e) => {
                eprintln!("wpp-query-bench: {e}");
                std::process::exit(1);
            }
        },
        None => {
            let prog = SynthProgram::generate(args.seed);
            let events = prog.events(TraceKind::Blocks, args.events);
            (prog.program().clone(), events)
        }
    };
    let what = args.trace.as_ref().map_or_else(
        || format!("synthetic, seed {}", args.seed),
        |p| p.display().to_string(),
    );
    println!(
        "trace: {} block events of {what}, {} functions ({:.1} s)",
        events.len(),
        db.functions.len(),
        secs(t)
    );
    let (alphabet, g) = grammar_of(&events);
    let t = Instant::now();
    let index = PartitionIndex::build(&g, &alphabet, args.partitions).expect("index");
    println!(
        "scheme 4 index: {} bytes, {} partitions ({:.1} s)",
        index.size_bytes(),
        index.streams[0].sizes.len(),
        secs(t)
    );
    let mut containers = containers(&db, &events, args.chunks);
    let queries = pick_queries(&events, &containers[0].1, &db);
    let total = containers[0].1.per_thread[0].1.len();
    drop(events);

    println!();
    println!("| path | function | chunks with F | count | s1 decompress | s1 match | s2 | s3 zstd dec + match | s3 gzip dec + match | s4 | rules s4 summarized | first occ.: s1 / s2 / s3 / s4 |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    let mut ratios = Vec::new();
    for (label, cov, q) in &queries {
        ratios.push(row(
            label,
            *cov,
            total,
            q,
            &db,
            &g,
            &alphabet,
            &index,
            &mut containers,
        ));
    }
    println!();
    for r in ratios {
        println!("{r}");
    }
    println!("peak RSS of the whole run so far: {:.0} MiB", peak_mib());
    drop(containers);
    println!();
    hot(&g);
}
