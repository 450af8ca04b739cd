//! Most-frequent-digram-first (Re-Pair) against SEQUITUR on synthetic control-flow traces
//! (`wpp_trace::synth`): grammar symbols, time and peak memory, offline and windowed.
//!
//! ```text
//! cargo bench -p wpp-grammar --bench repair -- [EVENTS] [SEED] [WINDOW...]
//! ```
//!
//! Peak memory is the peak of live heap bytes during the run above those live before it,
//! counted by a wrapping global allocator, so the trace held by the benchmark itself (4 bytes
//! per event) is not counted. The process's VmHWM is printed at the end as a cross-check.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::time::Instant;

use wpp_grammar::repair::{RePair, Windowed};
use wpp_grammar::sequitur::{Sequitur, Variant};
use wpp_grammar::Grammar;
use wpp_trace::synth::{SynthProgram, TraceKind};
use wpp_trace::{Alphabet, Terminal, ThreadId};

/// The system allocator, counting live and peak bytes.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards every call to `System` unchanged; the counters do not affect allocation.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let live = LIVE.fetch_add(layout.size(), Relaxed) + layout.size();
        PEAK.fetch_max(live, Relaxed);
        // SAFETY: the caller's contract is passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Relaxed);
        // SAFETY: the caller's contract is passed on.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let live = if new_size >= layout.size() {
            LIVE.fetch_add(new_size - layout.size(), Relaxed) + new_size - layout.size()
        } else {
            LIVE.fetch_sub(layout.size() - new_size, Relaxed) - (layout.size() - new_size)
        };
        PEAK.fetch_max(live, Relaxed);
        // SAFETY: the caller's contract is passed on.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn proc_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn trace(kind: TraceKind, events: u64, seed: u64) -> Vec<Terminal> {
    let program = SynthProgram::generate(seed);
    let mut alphabet = Alphabet::new();
    let mut ts = Vec::with_capacity(events as usize);
    program
        .run(kind, events, |e| {
            ts.push(alphabet.intern(e)?);
            Ok::<_, wpp_trace::alphabet::AlphabetFull>(())
        })
        .expect("synthetic alphabets are small");
    ts
}

/// Runs `f`, returning its grammar, seconds and peak heap growth in bytes.
fn measure(f: impl FnOnce() -> Grammar) -> (Grammar, f64, u64) {
    let live0 = LIVE.load(Relaxed);
    PEAK.store(live0, Relaxed);
    let t0 = Instant::now();
    let g = f();
    let secs = t0.elapsed().as_secs_f64();
    (g, secs, (PEAK.load(Relaxed) - live0) as u64)
}

fn report(name: &str, n: usize, base: Option<(usize, f64)>, (g, secs, peak): (Grammar, f64, u64)) {
    let vs = base.map_or(String::new(), |(sym, time)| {
        format!(
            "; {:+.1} % symbols, {:.2}× time vs SEQUITUR",
            (g.num_symbols() as f64 / sym as f64 - 1.0) * 100.0,
            secs / time
        )
    });
    println!(
        "  {name:>16}: {:>9} symbols {:>7} rules {:7.3} s {:6.2} M ev/s peak {:7.1} MB = {:5.2} B/event{vs}",
        g.num_symbols(),
        g.num_rules(),
        secs,
        n as f64 / secs / 1e6,
        peak as f64 / 1e6,
        peak as f64 / n as f64,
    );
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let events: u64 = args
        .first()
        .and_then(|a| a.parse().ok())
        .unwrap_or(10_000_000);
    let seed: u64 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(1);
    let windows: Vec<usize> = args.iter().skip(2).filter_map(|a| a.parse().ok()).collect();
    println!("events={events} seed={seed}");
    for kind in [TraceKind::Blocks, TraceKind::Paths] {
        let ts = trace(kind, events, seed);
        println!("{kind:?}: {} events", ts.len());
        let sequitur = measure(|| {
            let mut s = Sequitur::new(Variant::Sequitur);
            let id = s.add_stream(ThreadId(0)).unwrap();
            s.push_slice(id, &ts).unwrap();
            s.finish()
        });
        let base = Some((sequitur.0.num_symbols(), sequitur.1));
        report("sequitur", ts.len(), None, sequitur);
        let repair = measure(|| {
            let mut c = RePair::new();
            c.add_stream(ThreadId(0), ts.iter().copied()).unwrap();
            c.finish().unwrap()
        });
        report("frequency", ts.len(), base, repair);
        for &w in &windows {
            let windowed = measure(|| {
                let mut c = Windowed::new(w);
                c.add_stream(ThreadId(0), ts.iter().copied()).unwrap();
                c.finish().unwrap()
            });
            report(&format!("window {w}"), ts.len(), base, windowed);
        }
    }
    println!(
        "process VmHWM {} MB",
        proc_kib("VmHWM:").unwrap_or(0) / 1024
    );
}
