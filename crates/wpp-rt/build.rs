//! Compiles what stable Rust cannot write: the variadic `exec` wrappers (`src/execl.c`) and the
//! weak references to the executable's program database (`src/exe.c`).

fn main() {
    println!("cargo:rerun-if-changed=src/execl.c");
    println!("cargo:rerun-if-changed=src/exe.c");
    cc::Build::new()
        .file("src/execl.c")
        .file("src/exe.c")
        .flag_if_supported("-std=c11")
        .compile("wpp_rt_execl");
}
