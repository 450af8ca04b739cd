//! Prints each raw `RULE` stream's size, zstd-19 size and (`REFS`) [`MODEL`]-coded size with the
//! time taken, and writes the raw streams to `PREFIX.{lens,kinds,terms,refs}` if given: for
//! measuring stream coders.
//!
//!     cargo run --release -p wpp-grammar --example rule_streams -- FILE.wpp [PREFIX]

use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let file = wpp_grammar::file::WppFile::read(&args[1]).expect("read");
    let streams = wpp_grammar::file::raw_streams(&file.grammar);
    for (name, s) in ["lens", "kinds", "terms", "refs"].iter().zip(&streams) {
        let t = Instant::now();
        let z = zstd::bulk::compress(s, 19).expect("zstd").len();
        println!(
            "{name}\traw {}\tzstd-19 {z}\t{:.2} s",
            s.len(),
            t.elapsed().as_secs_f64()
        );
        if let Some(prefix) = args.get(2) {
            std::fs::write(format!("{prefix}.{name}"), s).expect("write");
        }
    }
    let t = Instant::now();
    let m = wpp_grammar::file::modeled_refs(&file.grammar, &file.alphabet).map_or(0, |m| m.len());
    println!("refs\tmodel {m}\t{:.2} s", t.elapsed().as_secs_f64());
    let t = Instant::now();
    let bytes = file.to_bytes().expect("encode");
    let enc = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let back = wpp_grammar::file::WppFile::from_bytes(&bytes).expect("decode");
    let dec = t.elapsed().as_secs_f64();
    assert_eq!(back.grammar, file.grammar);
    println!(
        "file\t{} bytes\tencode {enc:.2} s\tdecode {dec:.2} s",
        bytes.len()
    );
}
