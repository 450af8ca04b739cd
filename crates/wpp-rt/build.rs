//! Compiles the variadic `exec` wrappers (`src/execl.c`), which stable Rust cannot define.

fn main() {
    println!("cargo:rerun-if-changed=src/execl.c");
    cc::Build::new()
        .file("src/execl.c")
        .flag_if_supported("-std=c11")
        .compile("wpp_rt_execl");
}
