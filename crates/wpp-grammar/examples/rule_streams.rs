//! Prints each raw `RULE` stream's size and zstd-19 size, the context-coded `REFS` (codec 2)
//! size, and the file's size and encode/decode times with codec 2 (level 19) and without
//! (level 18, zstd only); writes the raw streams to `PREFIX.{lens,kinds,terms,refs}` if given.
//! For measuring stream coders.
//!
//!     cargo run --release -p wpp-grammar --example rule_streams -- FILE.wpp [PREFIX]

use std::time::Instant;

use wpp_grammar::file::WppFile;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let file = WppFile::read(&args[1]).expect("read");
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
    println!("refs\tcodec 2 {m}\t{:.2} s", t.elapsed().as_secs_f64());
    for level in [19, 18] {
        let t = Instant::now();
        let bytes = file.to_bytes_with_level(level).expect("encode");
        let enc = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let back = WppFile::from_bytes(&bytes).expect("decode");
        let dec = t.elapsed().as_secs_f64();
        assert_eq!(back.grammar, file.grammar);
        println!(
            "file level {level}\t{} bytes\tencode {enc:.2} s\tdecode {dec:.2} s",
            bytes.len()
        );
    }
}
