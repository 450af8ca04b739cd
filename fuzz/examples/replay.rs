//! Runs one harness over files or directories of inputs without libFuzzer (plain `cargo run`,
//! stable toolchain): for replaying a corpus or a crash artifact under a debugger.
//!
//! `cargo run --release --example replay -- <target> <file-or-dir>...`

use std::path::Path;

fn main() {
    let mut args = std::env::args().skip(1);
    let target = args
        .next()
        .expect("usage: replay <target> <file-or-dir>...");
    let harness: fn(&[u8]) = match target.as_str() {
        "trace_binary" => wpp_fuzz::trace_binary,
        "trace_text" => wpp_fuzz::trace_text,
        "wpp_file" => wpp_fuzz::wpp_file,
        "cfg_json" => wpp_fuzz::cfg_json,
        "profiles" => wpp_fuzz::profiles,
        "trace_index" => wpp_fuzz::trace_index,
        "profile_file" => wpp_fuzz::profile_file,
        "program_db" => wpp_fuzz::program_db,
        "deps_files" => wpp_fuzz::deps_files,
        other => panic!("unknown target {other}"),
    };
    let mut n = 0;
    for arg in args {
        let p = Path::new(&arg);
        let files: Vec<_> = if p.is_dir() {
            let mut v: Vec<_> = std::fs::read_dir(p)
                .unwrap()
                .map(|e| e.unwrap().path())
                .collect();
            v.sort();
            v
        } else {
            vec![p.to_owned()]
        };
        for f in files {
            let data = std::fs::read(&f).unwrap();
            let t = std::time::Instant::now();
            harness(&data);
            let ms = t.elapsed().as_millis();
            if ms > 500 {
                eprintln!("{}: slow, {ms} ms", f.display());
            }
            n += 1;
        }
    }
    println!("{target}: {n} inputs ok");
}
