//! `.wpp` size and encode/decode time per compressor, next to `xz -9` and `zstd -19` of the
//! trace file itself:
//!
//! ```text
//! cargo run --release -p wpp -- synth --seed 1 --events 10000000 --kind blocks -o blocks.trace
//! cargo run --release -p wpp-grammar --example wpp_size -- blocks.trace [MORE.trace …]
//! ```
//!
//! For each trace and algorithm it prints the version 2 (current) and version 1 `.wpp` sizes,
//! the time to encode, and the best of three decode-and-validate times. The `xz` and `zstd`
//! columns run those tools on the trace file when they are installed.

use std::process::{Command, Stdio};
use std::time::Instant;

use wpp_grammar::file::WppFile;
use wpp_grammar::{Algorithm, TraceCompressor};

/// Bytes `tool args` writes for `path`, if the tool runs.
fn tool_size(tool: &str, args: &[&str], path: &str) -> Option<usize> {
    let out = Command::new(tool)
        .args(args)
        .arg(path)
        .stderr(Stdio::null())
        .output()
        .ok()?;
    out.status.success().then_some(out.stdout.len())
}

fn best_read_ms(bytes: &[u8]) -> f64 {
    (0..3)
        .map(|_| {
            let t = Instant::now();
            WppFile::from_bytes(bytes).expect("the file just written reads");
            t.elapsed().as_secs_f64() * 1e3
        })
        .fold(f64::INFINITY, f64::min)
}

fn main() {
    for path in std::env::args().skip(1) {
        let (program, events) = wpp_trace::file::read_events(&path).expect("a trace file");
        let xz = tool_size("xz", &["-9", "-c", "-T1"], &path);
        let zstd = tool_size("zstd", &["-19", "-c", "-q"], &path);
        let show = |n: Option<usize>| n.map_or("-".to_string(), |n| n.to_string());
        println!(
            "{path}: {} events, {} bytes; xz -9 {} bytes, zstd -19 {} bytes",
            events.len(),
            std::fs::metadata(&path).map_or(0, |m| m.len()),
            show(xz),
            show(zstd)
        );
        for algorithm in [
            Algorithm::Sequitur,
            Algorithm::Sequitur1,
            Algorithm::Frequency,
        ] {
            let mut c = TraceCompressor::new(algorithm, None, program.clone());
            c.push_batch(&events).expect("the trace compresses");
            let file = c.finish().expect("the trace compresses");
            let t = Instant::now();
            let v2 = file.to_bytes().expect("encodes");
            let write_ms = t.elapsed().as_secs_f64() * 1e3;
            let t = Instant::now();
            let v1 = file.to_bytes_v1().expect("encodes");
            let write1_ms = t.elapsed().as_secs_f64() * 1e3;
            println!(
                "  {:<10} {:>8} rules {:>9} symbols | v2 {:>8} B, write {:>6.1} ms, read {:>5.2} ms \
                 | v1 {:>8} B, write {:>5.1} ms, read {:>5.2} ms",
                algorithm.as_str(),
                file.grammar.num_rules(),
                file.grammar.num_symbols(),
                v2.len(),
                write_ms,
                best_read_ms(&v2),
                v1.len(),
                write1_ms,
                best_read_ms(&v1),
            );
        }
    }
}
