//! `wpp cc`: a clang-compatible compiler driver that builds instrumented programs.
//!
//! # What it does with an invocation
//!
//! | invocation | behaviour |
//! |---|---|
//! | `-E`, `-S`, `-M`/`-MM` alone, `-fsyntax-only`, `--version`, `-###`, no inputs | passed to clang-22 unchanged |
//! | `-c` | each source compiled to an object file that holds LLVM **bitcode** (as with `-flto`), with the user's flags; instrumentation waits for the link, when the whole program is known |
//! | sources and/or objects, no `-c` | sources compiled to bitcode; bitcode objects (from `wpp cc -c`) and sources `llvm-link`ed into one module; instrumented ([`crate::instrument_module`], so function ids are program-wide); compiled with the user's flags; linked with the remaining native objects and libraries, the user's link flags, and the `wpp-rt` static library |
//!
//! Native objects and archives are linked as they are, uninstrumented (their functions do not
//! appear in traces). Archives of bitcode objects are not supported: link their members or
//! build them with plain clang. `-x LANG` is not supported (the language is taken from each
//! file's extension). C++ is linked with `clang++-22` when a source has a C++ extension, when
//! `--cxx` is given, or when the linked module refers to C++ runtime symbols.
//!
//! The runtime library is `$WPP_RT_LIB`, else `libwpp_rt.a` next to the `wpp` executable, else
//! the newest `deps/libwpp_rt-*.a` there (cargo's location for a dependency's staticlib).
//! Tools are `clang-22`, `clang++-22` and `llvm-link-22` on `PATH`, overridable with
//! `WPP_CLANG`, `WPP_CLANGXX` and `WPP_LLVM_LINK`.

use crate::{instrument_module, read_bitcode, Options};
use inkwell::context::Context;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Libraries the Rust runtime needs (`rustc --print native-static-libs`).
pub const RUNTIME_SYSTEM_LIBS: &[&str] = &[
    "-lgcc_s",
    "-lutil",
    "-lrt",
    "-lpthread",
    "-lm",
    "-ldl",
    "-lc",
];

/// Errors of the driver.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DriverError {
    /// A tool could not be started.
    #[error("cannot run {tool}: {source}")]
    Spawn {
        /// The tool.
        tool: String,
        /// The cause.
        source: std::io::Error,
    },
    /// A tool failed.
    #[error("{tool} failed ({status}): {command}")]
    Failed {
        /// The tool.
        tool: String,
        /// Its exit status.
        status: String,
        /// The command line.
        command: String,
    },
    /// The command line is not supported.
    #[error("unsupported invocation: {0}")]
    Usage(String),
    /// The runtime library was not found.
    #[error("cannot find the wpp runtime library libwpp_rt.a (set WPP_RT_LIB, or build it with `cargo build -p wpp-rt`)")]
    NoRuntime,
    /// Instrumenting failed.
    #[error(transparent)]
    Instrument(#[from] crate::Error),
    /// A temporary directory could not be made.
    #[error("cannot create a temporary directory: {0}")]
    Temp(std::io::Error),
}

/// Configuration of the driver.
#[derive(Clone, Debug)]
pub struct Driver {
    /// Instrumentation options.
    pub options: Options,
    /// The C compiler.
    pub clang: PathBuf,
    /// The C++ compiler (linker for C++).
    pub clangxx: PathBuf,
    /// `llvm-link`.
    pub llvm_link: PathBuf,
    /// The runtime static library, when known.
    pub runtime: Option<PathBuf>,
    /// Force linking as C++.
    pub cxx: bool,
    /// Print each command on stderr.
    pub verbose: bool,
    /// Keep intermediate files in this directory instead of a temporary one.
    pub keep: Option<PathBuf>,
}

fn env_path(var: &str, default: &str) -> PathBuf {
    std::env::var_os(var)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(default))
}

/// Finds the runtime library: `$WPP_RT_LIB`, next to `exe_dir`, or the newest in its `deps/`.
pub fn find_runtime(exe_dir: Option<&Path>) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("WPP_RT_LIB") {
        return Some(PathBuf::from(p));
    }
    let dir = exe_dir?;
    let direct = dir.join("libwpp_rt.a");
    if direct.is_file() {
        return Some(direct);
    }
    for d in [dir.join("deps"), dir.to_path_buf()] {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        let newest = entries
            .filter_map(Result::ok)
            .filter(|e| {
                let n = e.file_name().to_string_lossy().into_owned();
                n.starts_with("libwpp_rt-") && n.ends_with(".a")
            })
            .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
            .max();
        if let Some((_, p)) = newest {
            return Some(p);
        }
    }
    None
}

impl Driver {
    /// A driver with tools from the environment and the runtime found next to the current
    /// executable.
    pub fn from_env(options: Options) -> Driver {
        let exe_dir = std::env::current_exe()
            .ok()
            .and_then(|p| p.parent().map(Path::to_path_buf));
        Driver {
            options,
            clang: env_path("WPP_CLANG", "clang-22"),
            clangxx: env_path("WPP_CLANGXX", "clang++-22"),
            llvm_link: env_path("WPP_LLVM_LINK", "llvm-link-22"),
            runtime: find_runtime(exe_dir.as_deref()),
            cxx: false,
            verbose: std::env::var_os("WPP_VERBOSE").is_some(),
            keep: None,
        }
    }

    fn run_tool(&self, tool: &Path, args: &[OsString]) -> Result<(), DriverError> {
        let shown = format!(
            "{} {}",
            tool.display(),
            args.iter()
                .map(|a| a.to_string_lossy())
                .collect::<Vec<_>>()
                .join(" ")
        );
        if self.verbose {
            eprintln!("wpp cc: {shown}");
        }
        let status =
            Command::new(tool)
                .args(args)
                .status()
                .map_err(|source| DriverError::Spawn {
                    tool: tool.display().to_string(),
                    source,
                })?;
        if !status.success() {
            return Err(DriverError::Failed {
                tool: tool.display().to_string(),
                status: status.to_string(),
                command: shown,
            });
        }
        Ok(())
    }

    /// Runs one clang-style invocation.
    pub fn run(&self, args: &[String]) -> Result<(), DriverError> {
        let inv = Invocation::parse(args)?;
        let cxx = self.cxx || inv.sources.iter().any(|s| is_cxx_source(s));
        let compiler = if cxx { &self.clangxx } else { &self.clang };
        if inv.passthrough || (inv.sources.is_empty() && inv.objects.is_empty()) {
            let a: Vec<OsString> = args.iter().map(OsString::from).collect();
            return self.run_tool(compiler, &a);
        }
        if inv.compile_only {
            if inv.output.is_some() && inv.sources.len() > 1 {
                return Err(DriverError::Usage("-c -o with several sources".into()));
            }
            for src in &inv.sources {
                let out = match &inv.output {
                    Some(o) => PathBuf::from(o),
                    None => PathBuf::from(
                        Path::new(src)
                            .with_extension("o")
                            .file_name()
                            .unwrap_or_default(),
                    ),
                };
                self.compile_bitcode(compiler, &inv, src, &out)?;
            }
            return Ok(());
        }
        // Link: sources to bitcode, bitcode objects joined, everything llvm-linked.
        let tmp_holder;
        let tmp: &Path = match &self.keep {
            Some(k) => {
                std::fs::create_dir_all(k).map_err(DriverError::Temp)?;
                k
            }
            None => {
                tmp_holder = TempDir::new()?;
                &tmp_holder.0
            }
        };
        let mut bitcode = Vec::new();
        for (i, src) in inv.sources.iter().enumerate() {
            let out = tmp.join(format!("src{i}.bc"));
            self.compile_bitcode(compiler, &inv, src, &out)?;
            bitcode.push(out);
        }
        let mut natives = Vec::new();
        for o in &inv.objects {
            if is_bitcode_file(Path::new(o)) {
                bitcode.push(PathBuf::from(o));
            } else {
                natives.push(o.clone());
            }
        }
        if bitcode.is_empty() {
            return Err(DriverError::Usage(
                "nothing to instrument: no sources and no bitcode objects (from `wpp cc -c`)"
                    .into(),
            ));
        }
        let linked = tmp.join("linked.bc");
        let mut la: Vec<OsString> = bitcode.iter().map(|p| p.clone().into_os_string()).collect();
        la.push("-o".into());
        la.push(linked.clone().into_os_string());
        self.run_tool(&self.llvm_link, &la)?;
        let instrumented = tmp.join("instrumented.bc");
        let uses_cxx = {
            let ctx = Context::create();
            let module = read_bitcode(&ctx, &linked)?;
            let uses_cxx = crate::module_uses_cxx(&module);
            let report = instrument_module(&module, &self.options)?;
            if self.verbose {
                eprintln!("wpp cc: {report:?}");
            }
            if !module.write_bitcode_to_path(&instrumented) {
                return Err(crate::Error::Write {
                    path: instrumented.display().to_string(),
                }
                .into());
            }
            uses_cxx
        };
        let linker = if cxx || uses_cxx {
            &self.clangxx
        } else {
            &self.clang
        };
        let object = tmp.join("instrumented.o");
        let mut ca: Vec<OsString> = inv.common.iter().map(OsString::from).collect();
        ca.extend([
            "-Qunused-arguments".into(),
            "-c".into(),
            instrumented.into_os_string(),
        ]);
        ca.extend(["-o".into(), object.clone().into_os_string()]);
        self.run_tool(linker, &ca)?;
        let runtime = self.runtime.clone().ok_or(DriverError::NoRuntime)?;
        let mut ka: Vec<OsString> = inv.common.iter().map(OsString::from).collect();
        ka.push("-Qunused-arguments".into());
        ka.push(object.into_os_string());
        ka.extend(natives.iter().map(OsString::from));
        ka.extend(inv.link.iter().map(OsString::from));
        ka.push(runtime.into_os_string());
        ka.extend(RUNTIME_SYSTEM_LIBS.iter().map(OsString::from));
        ka.push("-o".into());
        ka.push(inv.output.clone().unwrap_or_else(|| "a.out".into()).into());
        self.run_tool(linker, &ka)
    }

    fn compile_bitcode(
        &self,
        compiler: &Path,
        inv: &Invocation,
        src: &str,
        out: &Path,
    ) -> Result<(), DriverError> {
        let mut a: Vec<OsString> = inv.common.iter().map(OsString::from).collect();
        a.extend([
            "-Qunused-arguments".into(),
            "-c".into(),
            "-emit-llvm".into(),
        ]);
        a.push(src.into());
        a.push("-o".into());
        a.push(out.as_os_str().to_owned());
        let compiler = if is_cxx_source(src) {
            &self.clangxx
        } else {
            compiler
        };
        self.run_tool(compiler, &a)
    }
}

/// A removed-on-drop temporary directory.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Result<TempDir, DriverError> {
        let base = std::env::temp_dir();
        for n in 0..1000u32 {
            let p = base.join(format!("wpp-cc-{}-{n}", std::process::id()));
            match std::fs::create_dir(&p) {
                Ok(()) => return Ok(TempDir(p)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(DriverError::Temp(e)),
            }
        }
        Err(DriverError::Temp(std::io::Error::other("no free name")))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Whether a path is a C++ source by extension.
pub fn is_cxx_source(s: &str) -> bool {
    matches!(
        Path::new(s).extension().and_then(|e| e.to_str()),
        Some("cc" | "cpp" | "cxx" | "c++" | "C" | "ii" | "mm" | "CPP" | "cp")
    )
}

fn is_source(s: &str) -> bool {
    is_cxx_source(s)
        || matches!(
            Path::new(s).extension().and_then(|e| e.to_str()),
            Some("c" | "i" | "m" | "ll" | "bc" | "s" | "S")
        )
}

/// Whether a file starts with LLVM bitcode magic (raw or wrapped).
pub fn is_bitcode_file(p: &Path) -> bool {
    use std::io::Read;
    let mut magic = [0u8; 4];
    std::fs::File::open(p)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok()
        && (magic == *b"BC\xC0\xDE" || magic == [0xDE, 0xC0, 0x17, 0x0B])
}

/// A parsed clang command line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Invocation {
    /// Source files.
    pub sources: Vec<String>,
    /// Object files, archives and shared libraries given as inputs.
    pub objects: Vec<String>,
    /// Flags for both compiling and linking.
    pub common: Vec<String>,
    /// Link-only flags (`-l`, `-L`, `-Wl,…`, …), in order.
    pub link: Vec<String>,
    /// `-o`.
    pub output: Option<String>,
    /// `-c`.
    pub compile_only: bool,
    /// Handled by clang alone (`-E`, `-S`, …).
    pub passthrough: bool,
}

/// Flags whose value is the next argument.
const WITH_VALUE: &[&str] = &[
    "-I",
    "-D",
    "-U",
    "-include",
    "-imacros",
    "-isystem",
    "-iquote",
    "-idirafter",
    "-isysroot",
    "-MF",
    "-MT",
    "-MQ",
    "-target",
    "-arch",
    "--sysroot",
    "-Xclang",
    "-mllvm",
    "-std",
    "-x",
];
/// Link-only flags whose value is the next argument.
const LINK_WITH_VALUE: &[&str] = &["-L", "-l", "-Xlinker", "-u", "-T", "-z"];

impl Invocation {
    /// Classifies the arguments of a clang command line.
    pub fn parse(args: &[String]) -> Result<Invocation, DriverError> {
        let mut inv = Invocation::default();
        let mut it = args.iter();
        while let Some(a) = it.next() {
            let a = a.as_str();
            match a {
                "-c" => inv.compile_only = true,
                "-E" | "-S" | "-fsyntax-only" | "--version" | "-###" | "-M" | "-MM" | "-v"
                | "--help" | "-print-search-dirs" => inv.passthrough = true,
                "-x" => return Err(DriverError::Usage("-x is not supported".into())),
                "-o" => {
                    inv.output = Some(
                        it.next()
                            .ok_or_else(|| DriverError::Usage("-o needs a value".into()))?
                            .clone(),
                    )
                }
                _ if a.starts_with("-o") && a.len() > 2 => inv.output = Some(a[2..].to_owned()),
                _ if LINK_WITH_VALUE.contains(&a) => {
                    inv.link.push(a.to_owned());
                    if let Some(v) = it.next() {
                        inv.link.push(v.clone());
                    }
                }
                _ if WITH_VALUE.contains(&a) => {
                    inv.common.push(a.to_owned());
                    if let Some(v) = it.next() {
                        inv.common.push(v.clone());
                    }
                }
                _ if a.starts_with("-l")
                    || a.starts_with("-L")
                    || a.starts_with("-Wl,")
                    || matches!(
                        a,
                        "-static"
                            | "-shared"
                            | "-rdynamic"
                            | "-pie"
                            | "-no-pie"
                            | "-s"
                            | "-nostdlib"
                    ) =>
                {
                    inv.link.push(a.to_owned())
                }
                _ if a.starts_with('-') => inv.common.push(a.to_owned()),
                _ if is_source(a) => inv.sources.push(a.to_owned()),
                _ => inv.objects.push(a.to_owned()),
            }
        }
        Ok(inv)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn classifies_a_typical_command_line() {
        let inv = Invocation::parse(&s(&[
            "-O2",
            "-I",
            "inc",
            "-DX=1",
            "a.c",
            "b.cpp",
            "lib.o",
            "-lm",
            "-L/x",
            "-Wl,--as-needed",
            "-o",
            "prog",
            "-pthread",
        ]))
        .unwrap();
        assert_eq!(inv.sources, s(&["a.c", "b.cpp"]));
        assert_eq!(inv.objects, s(&["lib.o"]));
        assert_eq!(inv.common, s(&["-O2", "-I", "inc", "-DX=1", "-pthread"]));
        assert_eq!(inv.link, s(&["-lm", "-L/x", "-Wl,--as-needed"]));
        assert_eq!(inv.output.as_deref(), Some("prog"));
        assert!(!inv.compile_only && !inv.passthrough);
    }

    #[test]
    fn compile_only_and_passthrough() {
        let inv = Invocation::parse(&s(&["-c", "x.c", "-ox.o"])).unwrap();
        assert!(inv.compile_only);
        assert_eq!(inv.output.as_deref(), Some("x.o"));
        assert!(Invocation::parse(&s(&["-E", "x.c"])).unwrap().passthrough);
        assert!(Invocation::parse(&s(&["-x", "c", "x"])).is_err());
    }
}
