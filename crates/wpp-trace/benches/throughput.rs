//! Throughput of synthesis, binary (plain and zstd-compressed) and text writing, and reading,
//! in events per second.
//!
//! `cargo bench -p wpp-trace --bench throughput -- [EVENTS]` (default 10^7 events; text
//! formats use at most 2·10^6). Each measurement is the best of three runs, which filters out
//! the noise of a shared machine; everything works in memory, so disk speed does not enter.

use std::convert::Infallible;
use std::time::Instant;
use wpp_trace::file::{to_text, TraceReader, TraceWriter};
use wpp_trace::synth::{SynthProgram, TraceKind};
use wpp_trace::Event;

/// Runs `f` (which returns the events it handled) three times and prints the best rate.
fn best_of_three(what: &str, mut f: impl FnMut() -> u64) {
    best_of_three_with(what, || (), |()| f());
}

/// Like [`best_of_three`], with an untimed `setup` before each run.
fn best_of_three_with<T>(what: &str, mut setup: impl FnMut() -> T, mut f: impl FnMut(T) -> u64) {
    let mut best = f64::INFINITY;
    let mut events = 0;
    for _ in 0..3 {
        let input = setup();
        let start = Instant::now();
        events = f(input);
        best = best.min(start.elapsed().as_secs_f64());
    }
    let rate = events as f64 / best / 1e6;
    println!("{what:<36} {events:>11} events {best:>7.3} s {rate:>8.1} M events/s");
}

fn synth_count(program: &SynthProgram, kind: TraceKind, events: u64) -> u64 {
    let mut n = 0u64;
    let ok: Result<(), Infallible> = program.run(kind, events, |e| {
        n += 1;
        std::hint::black_box(e);
        Ok(())
    });
    ok.map_or(0, |()| n)
}

fn main() {
    let events: u64 = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(10_000_000);
    let program = SynthProgram::generate(1);
    let db = program.program();
    for kind in [TraceKind::Blocks, TraceKind::Paths] {
        best_of_three(&format!("synth {kind:?}"), || {
            synth_count(&program, kind, events)
        });
        best_of_three(&format!("synth {kind:?} 4 threads"), || {
            let mut n = 0u64;
            let ok: Result<(), Infallible> = program.run_threads(kind, events, 4, |e| {
                n += 1;
                std::hint::black_box(e);
                Ok(())
            });
            ok.map_or(0, |()| n)
        });
        let trace = program.events(kind, events);
        let mut bytes = Vec::new();
        best_of_three(&format!("binary write {kind:?}"), || {
            let mut w = TraceWriter::new(Vec::with_capacity(bytes.len()), db).unwrap();
            trace.iter().for_each(|&e| w.push(e).unwrap());
            bytes = w.finish().unwrap();
            trace.len() as u64
        });
        println!(
            "  {:.2} bytes/event, {} distinct events, {} returns",
            bytes.len() as f64 / events as f64,
            trace.iter().collect::<rustc_hash::FxHashSet<_>>().len(),
            trace.iter().filter(|&&e| e == Event::Leave).count()
        );
        let copy = || bytes.clone();
        best_of_three_with(&format!("binary read {kind:?} for_each_batch"), copy, |b| {
            let mut n = 0u64;
            let mut r = TraceReader::from_bytes(b).unwrap();
            r.for_each_batch(|run| n += run.len() as u64).unwrap();
            n
        });
        best_of_three_with(&format!("binary read {kind:?} iterator"), copy, |b| {
            let r = TraceReader::from_bytes(b).unwrap();
            r.map(|e| u64::from(e.unwrap() != Event::Leave) | 1).sum()
        });
        best_of_three_with(&format!("binary read {kind:?} stream"), copy, |b| {
            let mut n = 0u64;
            let mut r = TraceReader::from_reader(std::io::Cursor::new(b)).unwrap();
            r.for_each_batch(|run| n += run.len() as u64).unwrap();
            n
        });
        // Format 3 with zstd level 1 in 1 MiB chunks, as the runtime records.
        let mut packed = Vec::new();
        best_of_three(&format!("binary write {kind:?} zstd 1"), || {
            let mut w = TraceWriter::with_chunk_bytes(Vec::new(), db, 1 << 20)
                .and_then(|w| w.with_zstd_level(1))
                .unwrap();
            trace.iter().for_each(|&e| w.push(e).unwrap());
            packed = w.finish().unwrap();
            trace.len() as u64
        });
        println!(
            "  {:.3} bytes/event ({:.1}x smaller)",
            packed.len() as f64 / events as f64,
            bytes.len() as f64 / packed.len() as f64
        );
        best_of_three_with(
            &format!("binary read {kind:?} zstd 1 for_each_batch"),
            || packed.clone(),
            |b| {
                let mut n = 0u64;
                let mut r = TraceReader::from_bytes(b).unwrap();
                r.for_each_batch(|run| n += run.len() as u64).unwrap();
                n
            },
        );
        let text_events = &trace[..trace.len().min(2_000_000)];
        let mut text = Vec::new();
        best_of_three(&format!("text write {kind:?}"), || {
            text = to_text(db, text_events).unwrap();
            text_events.len() as u64
        });
        best_of_three_with(
            &format!("text read {kind:?}"),
            || text.clone(),
            |t| TraceReader::from_bytes(t).unwrap().count() as u64,
        );
    }
}
