//! Zhang–Gupta Figures 12–13 on a synthetic block trace: index sizes, and for a rare, a medium
//! and a frequent path the time of each matching scheme (decompression and matching separately
//! for schemes 1 and 3); then Larus Figure 7's hot subpaths, time and peak memory.
//!
//! `cargo run --release -p wpp-query --bin wpp-query-bench -- [EVENTS] [SEED] [CHUNKS]`
//! (defaults 10^7 events, seed 1, chunk size giving about 128 chunks as in the paper). All schemes' counts are checked to agree.

use std::io::Cursor;
use std::time::Instant;

use wpp_grammar::{compress, Algorithm};
use wpp_query::hot::{hot_subpaths, HotConfig};
use wpp_query::matching::chunked::{self, ChunkWriter, ChunkedTrace, Codec};
use wpp_query::matching::partition::{self, PartitionIndex, DEFAULT_PARTITIONS};
use wpp_query::matching::{classify, compressed, scheme1, Mode, PathQuery};
use wpp_query::pattern::Pattern;
use wpp_trace::synth::{SynthProgram, TraceKind};
use wpp_trace::{Alphabet, BlockId, Event, FunctionId, Terminal};

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

/// The most frequent sequence of three own blocks of invocations of `f`.
fn path_of(events: &[Event], f: FunctionId) -> Option<Vec<BlockId>> {
    let mut stack: Vec<(FunctionId, Vec<BlockId>)> = Vec::new();
    let mut grams: rustc_hash::FxHashMap<[BlockId; 3], u64> = Default::default();
    for &e in events {
        match e {
            Event::Enter(g) => stack.push((g, Vec::new())),
            Event::Leave => {
                stack.pop();
            }
            Event::Block(b) => {
                if let Some((g, own)) = stack.last_mut() {
                    if *g == f {
                        own.push(b);
                        if own.len() >= 3 {
                            let k = [own[own.len() - 3], own[own.len() - 2], b];
                            *grams.entry(k).or_default() += 1;
                        }
                    }
                }
            }
            _ => {}
        }
    }
    grams
        .into_iter()
        .max_by_key(|&(k, c)| (c, k))
        .map(|(k, _)| k.to_vec())
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n: u64 = args
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000_000);
    let seed: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(1);
    let chunks: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(128);
    let prog = SynthProgram::generate(seed);
    let t = Instant::now();
    let events = prog.events(TraceKind::Blocks, n);
    println!(
        "trace: {n} block events, seed {seed}, {} functions ({:.2} s)",
        prog.program().functions.len(),
        secs(t)
    );

    let mut alphabet = Alphabet::new();
    let terms: Vec<Terminal> = events
        .iter()
        .map(|&e| alphabet.intern(e).unwrap())
        .collect();
    let t = Instant::now();
    let g = compress(Algorithm::Sequitur, &[&terms]).expect("compress");
    println!(
        "SEQUITUR: {} rules, {} symbols, start rule {} symbols ({:.2} s)",
        g.num_rules(),
        g.num_symbols(),
        g.body(g.starts()[0].rule).len(),
        secs(t)
    );

    let t = Instant::now();
    let index = PartitionIndex::build(&g, &alphabet, DEFAULT_PARTITIONS).unwrap();
    println!(
        "scheme 4 index: {} bytes, {} partitions ({:.2} s)",
        index.size_bytes(),
        index.streams[0].sizes.len(),
        secs(t)
    );

    // Chunks sized so that the trace makes about `chunks` of them, as the paper's 128.
    let bytes: usize = events
        .iter()
        .map(|&e| {
            let mut b = Vec::new();
            wpp_trace::file::encode_event(&mut b, e);
            b.len()
        })
        .sum();
    let chunk_bytes = (bytes / chunks as usize).max(1 << 12);
    let mut containers = Vec::new();
    for codec in [Codec::Zstd(3), Codec::Gzip(6)] {
        let t = Instant::now();
        let mut w = ChunkWriter::new(Vec::new(), prog.program(), codec, chunk_bytes).unwrap();
        for &e in &events {
            w.push(e).unwrap();
        }
        let (out, index_bytes) = w.finish().unwrap();
        let c = ChunkedTrace::open(Cursor::new(out.clone())).unwrap();
        println!(
            "scheme 3 container {codec:?}: {} bytes for {bytes} trace bytes, {} chunks of {} KiB, index {index_bytes} bytes ({:.2} s)",
            out.len(),
            c.chunks.len(),
            chunk_bytes >> 10,
            secs(t)
        );
        containers.push((codec, c));
    }

    // Rare, medium and frequent functions by chunk coverage.
    let levels = &containers[0].1.per_thread[0].1;
    let total = levels.len();
    let mut by_cov: Vec<(usize, FunctionId)> = (0..prog.program().functions.len() as u32)
        .map(FunctionId)
        .map(|f| (levels.coverage(f), f))
        .filter(|&(c, f)| c > 0 && path_of(&events, f).is_some())
        .collect();
    by_cov.sort();
    let pick = |target: usize| {
        *by_cov
            .iter()
            .min_by_key(|(c, _)| c.abs_diff(target))
            .expect("some function has a path")
    };
    let kinds_list = [
        ("rare", pick(1)),
        ("medium", pick(total / 2)),
        ("frequent", pick(total)),
    ];

    println!();
    println!("| path | function | coverage | count | s1 decompress (s) | s1 match (s) | s2 (s) | s3 zstd dec+match (s) | s3 gzip dec+match (s) | s4 | s4 rules summarized | first occurrence: s1 / s4 |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    for (label, (cov, f)) in kinds_list {
        let path = path_of(&events, f).unwrap();
        let q = PathQuery {
            function: f,
            path: path.clone(),
        };
        let t = Instant::now();
        let mut expanded = Vec::new();
        wpp_grammar::expand::expand_into(&g, g.starts()[0].rule, &mut expanded);
        let dec = secs(t);
        let pattern = Pattern::new(&path).unwrap();
        let kinds = classify(&alphabet, f, &pattern);
        let t = Instant::now();
        let (_, c1) = scheme1::match_terminals(&pattern, &kinds, &expanded, Mode::Count);
        let m1 = secs(t);
        drop(expanded);
        let t = Instant::now();
        let c2 = compressed::run(&g, &alphabet, &q, Mode::Count).unwrap()[0]
            .count
            .unwrap();
        let s2 = secs(t);
        let mut s3 = Vec::new();
        for (_, c) in containers.iter_mut() {
            let (r, st) = chunked::run(c, &q, Mode::Count).unwrap();
            assert_eq!(r[0].count.unwrap(), c1, "scheme 3 disagrees");
            s3.push(format!(
                "{:.3}+{:.3} ({} chunks)",
                st.decompress.as_secs_f64(),
                st.matching.as_secs_f64(),
                st.loaded
            ));
        }
        let t = Instant::now();
        let (r4, st4) = partition::run(&g, &alphabet, &index, &q, Mode::Count).unwrap();
        let s4 = secs(t);
        let t = Instant::now();
        let (f4, _) = partition::run(&g, &alphabet, &index, &q, Mode::First).unwrap();
        let s4_first = secs(t);
        let t = Instant::now();
        let f1 = scheme1::run(&g, &alphabet, &q, Mode::First).unwrap();
        let s1_first = secs(t);
        assert_eq!(f1[0].first, f4[0].first, "first occurrences disagree");
        assert_eq!((c1, c2), (c2, r4[0].count.unwrap()), "schemes disagree");
        println!(
            "| {label} {:?} | {} | {cov}/{total} | {c1} | {dec:.3} | {m1:.3} | {s2:.4} | {} | {} | {:.0} µs | {}/{} | {:.0} µs / {:.0} µs |",
            path.iter().map(|b| b.0).collect::<Vec<_>>(),
            prog.program().name(f),
            s3[0],
            s3[1],
            s4 * 1e6,
            st4.rules_summarized,
            g.num_rules(),
            s1_first * 1e6,
            s4_first * 1e6,
        );
    }

    drop(events);
    drop(terms);
    drop(containers);
    println!();
    for (l, c) in [(10, 100_000u64), (100, 1_000_000)] {
        reset_peak();
        let before = peak_mib();
        let t = Instant::now();
        let hot = hot_subpaths(
            &g,
            None,
            HotConfig {
                min_length: 2,
                max_length: l,
                min_cost: c,
            },
        )
        .unwrap();
        println!(
            "hot subpaths L={l} C={c}: {} found in {:.3} s, peak RSS {:.0} MiB (process baseline {:.0} MiB)",
            hot.len(),
            secs(t),
            peak_mib(),
            before
        );
    }
}
