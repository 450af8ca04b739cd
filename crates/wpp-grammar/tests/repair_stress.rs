//! Adversarial inputs for the most-frequent-digram-first compressor at a size where quadratic
//! behaviour would show: long runs, runs eaten from the left, random text, many streams.
//! Run with `cargo test --release -p wpp-grammar --test repair_stress -- --ignored --nocapture`.

use std::time::Instant;

use wpp_grammar::repair::{RePair, Windowed};
use wpp_grammar::symbol::SymbolKind;
use wpp_grammar::{check, Grammar, RuleId};
use wpp_trace::{Terminal, ThreadId};

fn expand(g: &Grammar, r: RuleId, out: &mut Vec<u32>) {
    for s in g.body(r) {
        match s.kind() {
            SymbolKind::Terminal(t) => out.push(t.0),
            SymbolKind::Rule(q) => expand(g, q, out),
        }
    }
}

fn run(name: &str, streams: &[Vec<u32>]) {
    let n: usize = streams.iter().map(Vec::len).sum();
    for window in [None, Some(10_000)] {
        let t0 = Instant::now();
        let g = match window {
            None => {
                let mut c = RePair::new();
                for (k, s) in streams.iter().enumerate() {
                    c.add_stream(ThreadId(k as u32), s.iter().map(|&t| Terminal(t)))
                        .unwrap();
                }
                c.finish().unwrap()
            }
            Some(w) => {
                let mut c = Windowed::new(w);
                for (k, s) in streams.iter().enumerate() {
                    c.add_stream(ThreadId(k as u32), s.iter().map(|&t| Terminal(t)))
                        .unwrap();
                }
                c.finish().unwrap()
            }
        };
        let secs = t0.elapsed().as_secs_f64();
        println!(
            "{name:>24} window {window:?}: {n} events -> {} symbols in {secs:.3} s ({:.2} M ev/s)",
            g.num_symbols(),
            n as f64 / secs / 1e6
        );
        for (s, start) in streams.iter().zip(g.starts()) {
            let mut out = Vec::with_capacity(s.len());
            expand(&g, start.rule, &mut out);
            assert_eq!(&out, s, "{name}");
        }
        check::check(&g).unwrap();
    }
}

fn xorshift(mut x: u64) -> impl FnMut() -> u64 {
    move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    }
}

#[test]
#[ignore]
fn adversarial_inputs() {
    const N: usize = 2_000_000;
    run("one long run", &[vec![7; N]]);
    // `x` then a run of 63 `c`: odd runs, replaced from the left, then joined to `x`.
    let runs: Vec<u32> = (0..N / 64)
        .flat_map(|_| [1].into_iter().chain([2; 63]))
        .collect();
    run("runs after a marker", &[runs]);
    let mut rnd = xorshift(1);
    run(
        "random, 4 symbols",
        &[(0..N).map(|_| (rnd() % 4) as u32).collect()],
    );
    run(
        "random, 2^20 symbols",
        &[(0..N).map(|_| (rnd() % (1 << 20)) as u32).collect()],
    );
    let streams: Vec<Vec<u32>> = (0..1000).map(|k| vec![k % 3, 1, 2, 1, 2, 3]).collect();
    run("1000 short streams", &streams);
    let ruler: Vec<u32> = (0..N).map(|i: usize| i.trailing_zeros()).collect();
    run("ruler sequence", &[ruler]);
}
