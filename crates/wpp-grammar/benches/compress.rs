//! Throughput and memory of SEQUITUR, SEQUITUR(1), `.wpp` writing and expansion on synthetic
//! control-flow traces (`wpp_trace::synth`).
//!
//! ```text
//! cargo bench -p wpp-grammar --bench compress -- [EVENTS] [SEED]
//! ```
//!
//! For each trace kind (blocks, paths) and compressor, in a fresh child process, it prints
//! throughput in events per wall-clock second and per CPU second of the compressing thread (the
//! stable figure on a shared machine), the compressor's heap at the end, the peak resident set
//! growth from just before compression to just after `finish` (VmHWM, reset through
//! `/proc/self/clear_refs`; this includes transient table rebuilds and the output grammar),
//! grammar size, `.wpp` bytes and encode/decode time, and expansion speed.

use std::time::Instant;

use wpp_grammar::expand::Expander;
use wpp_grammar::file::WppFile;
use wpp_grammar::sequitur::{Sequitur, Variant};
use wpp_grammar::Algorithm;
use wpp_trace::synth::{SynthProgram, TraceKind};
use wpp_trace::{Alphabet, Terminal, ThreadId};

fn proc_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// CPU seconds used by this thread (user + system), from `/proc/thread-self/stat`: with other
/// jobs on the machine, events per CPU second is the stable throughput figure.
fn cpu_secs() -> f64 {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap_or_default();
    let after_name = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<f64> = after_name
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|f| f.parse().ok())
        .collect();
    fields.iter().sum::<f64>() / 100.0
}

/// Resets VmHWM to the current RSS (Linux ≥ 4.0); returns whether it worked.
fn reset_peak() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

fn trace(kind: TraceKind, events: u64, seed: u64) -> (Alphabet, Vec<Terminal>, SynthProgram) {
    let program = SynthProgram::generate(seed);
    let mut alphabet = Alphabet::new();
    let mut ts = Vec::with_capacity(events as usize);
    program
        .run(kind, events, |e| {
            ts.push(alphabet.intern(e)?);
            Ok::<_, wpp_trace::alphabet::AlphabetFull>(())
        })
        .expect("synthetic alphabets are small");
    (alphabet, ts, program)
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    if args.first().map(String::as_str) == Some("--one") {
        return one(&args[1..]);
    }
    let events = args.first().map_or("10000000", String::as_str);
    let seed = args.get(1).map_or("1", String::as_str);
    println!("events={events} seed={seed}; one child process per measurement");
    let exe = std::env::current_exe().expect("the bench knows its own path");
    for kind in ["blocks", "paths"] {
        for algorithm in ["sequitur", "sequitur1"] {
            let status = std::process::Command::new(&exe)
                .args(["--one", kind, algorithm, events, seed])
                .status()
                .expect("the bench can run itself");
            assert!(status.success(), "{kind} {algorithm} failed");
        }
    }
}

/// One measurement in a fresh process, so that the peak resident set is this run's alone.
fn one(args: &[String]) {
    let kind = match args[0].as_str() {
        "blocks" => TraceKind::Blocks,
        _ => TraceKind::Paths,
    };
    let algorithm: Algorithm = args[1].parse().unwrap();
    let variant = match algorithm {
        Algorithm::Sequitur1 => Variant::Sequitur1,
        _ => Variant::Sequitur,
    };
    let events: u64 = args[2].parse().unwrap();
    let seed: u64 = args[3].parse().unwrap();
    let (alphabet, ts, program) = trace(kind, events, seed);
    let peak_ok = reset_peak();
    let rss0 = proc_kib("VmRSS:").unwrap_or(0);
    let t0 = Instant::now();
    let c0 = cpu_secs();
    let mut s = Sequitur::new(variant);
    let id = s.add_stream(ThreadId(0)).unwrap();
    s.push_slice(id, &ts).unwrap();
    let heap = s.heap_bytes();
    let grammar = s.finish();
    let secs = t0.elapsed().as_secs_f64();
    let cpu = cpu_secs() - c0;
    let hwm = proc_kib("VmHWM:").unwrap_or(0);
    let symbols = grammar.num_symbols();
    let growth = hwm.saturating_sub(rss0) * 1024;
    println!(
        "{kind:?} {algorithm}: {} events, {} distinct terminals\n  \
         compress {:.2} M events/s wall ({secs:.3} s), {:.2} M events/CPU-s; \
         {} rules, {symbols} symbols\n  \
         memory: compressor heap {} KiB = {:.1} B/symbol; peak RSS growth {} KiB = {:.1} B/symbol{}",
        ts.len(),
        alphabet.len(),
        ts.len() as f64 / secs / 1e6,
        ts.len() as f64 / cpu / 1e6,
        grammar.num_rules(),
        heap / 1024,
        heap as f64 / symbols as f64,
        growth / 1024,
        growth as f64 / symbols as f64,
        if peak_ok { "" } else { " (VmHWM not resettable)" },
    );
    let file = WppFile {
        program: program.program().clone(),
        alphabet,
        grammar,
        algorithm,
        events: ts.len() as u64,
        extra: Vec::new(),
    };
    let t1 = Instant::now();
    let bytes = file.to_bytes().unwrap();
    let write_secs = t1.elapsed().as_secs_f64();
    let t2 = Instant::now();
    let back = WppFile::from_bytes(&bytes).unwrap();
    let read_secs = t2.elapsed().as_secs_f64();
    println!(
        "  .wpp {} bytes ({:.2} bits/event), encoded in {:.1} ms, decoded and validated in {:.1} ms",
        bytes.len(),
        bytes.len() as f64 * 8.0 / ts.len() as f64,
        write_secs * 1e3,
        read_secs * 1e3
    );
    expansion(&back.grammar, &ts);
}

fn expansion(g: &wpp_grammar::Grammar, want: &[Terminal]) {
    let start = g.starts()[0].rule;
    let t0 = Instant::now();
    let c0 = cpu_secs();
    let mut i = 0usize;
    let mut ok = true;
    Expander::new(g, start).for_each(|t| {
        ok &= want.get(i) == Some(&t);
        i += 1;
    });
    let secs = t0.elapsed().as_secs_f64();
    let cpu = cpu_secs() - c0;
    assert!(ok && i == want.len(), "expansion differs from the trace");
    // Repeated so that the 10 ms resolution of the CPU clock stays small against the total.
    const REPEAT: usize = 10;
    let c1 = cpu_secs();
    let mut n = 0u64;
    for _ in 0..REPEAT {
        n = Expander::new(g, start).fold(n, |a, t| a.wrapping_add(u64::from(t.0)));
    }
    let iter_cpu = (cpu_secs() - c1) / REPEAT as f64;
    println!(
        "  expansion (round trip exact): {:.0} M events/s wall, {:.0} M events/CPU-s \
         comparing with the trace; {:.0} M events/CPU-s summing [{n}]",
        i as f64 / secs / 1e6,
        i as f64 / cpu / 1e6,
        i as f64 / iter_cpu / 1e6
    );
}
