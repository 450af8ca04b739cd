//! `wpp cc`: a clang-compatible compiler driver that builds instrumented programs, usable as
//! `CC`/`CXX` of any build system (make, autotools, CMake, Meson).
//!
//! # What it does with an invocation
//!
//! | invocation | behaviour |
//! |---|---|
//! | `-E`, `-S`, `-M`/`-MM` alone, `-emit-llvm`, `-fsyntax-only`, `--version`, `-###`, `-print-…`, no inputs | passed to clang-22 unchanged |
//! | `-c` | clang-22 with the user's arguments and `-fembed-bitcode`: an ordinary **native object that carries its bitcode** in the `SHF_EXCLUDE` section [`embed::SECTION`] (gllvm's idea), so the system `ar`, `ranlib`, any `llvm-ar` and any linker handle it; instrumentation waits for the final link, when the whole program is known |
//! | link of an executable | sources compiled as with `-c`; when the link has archives, a native link with the linker's `-t -t` trace learns which archive members it uses; the bitcode of every object and used member is `llvm-link`ed into one module, instrumented ([`crate::instrument_module`], so function ids are program-wide), compiled with the user's flags (`-O2` when the link line has no `-O`), after the passes [`crate::finish`] names for the mode (PPP: clang's `-O2` over it again; the other modes: code generation only), and linked in place of those objects with the user's link flags and the packaged runtime ([`runtime`]) |
//! | `-r` (partial link) | linked natively; the inputs' bitcode is `llvm-link`ed into the output's section, so the object still carries all of it |
//! | `-shared` | as an executable's link but with the library's own function ids, registered at load time with the process's one runtime and needing `libwpp_rt.so` ([`runtime::shared`]; see `wpp_abi`, *Shared libraries*). Its objects keep their bitcode for programs that link them statically |
//!
//! In the modes that trace memory (`trace-addr`, `ewpp-filter`, `ewpp`), C++ compilations
//! instantiate libstdc++'s templates in the program ([`libstdcxx`]), so `std::string`'s and the
//! streams' loads and stores are traced.
//!
//! Inputs without bitcode (assembly, objects from other compilers, system libraries) are linked
//! as they are, uninstrumented; with `--wpp-verbose`/`WPP_VERBOSE` the report on stderr names
//! them. `@file` response files are expanded as clang does; `-x LANG` applies to the inputs
//! after it; `-flto…` is dropped (wpp gathers the whole program itself). C++ is compiled and
//! linked with `clang++-22` when a source is C++, when the driver is `wpp c++`, or when the
//! linked module refers to C++ runtime symbols.
//!
//! A `--whole-archive` archive (named, or found by `-l`) whose members carry bitcode is replaced
//! on the final link by its members without bitcode, extracted, since the instrumented object
//! already defines the others. Objects made by running `ld -r` directly (not through `wpp cc -r`) hold their
//! inputs' bitcode sections concatenated; they are split into their modules
//! ([`embed::split_modules`]).
//!
//! The runtime library is `$WPP_RT_LIB`, else `libwpp_rt.a` next to the `wpp` executable, else
//! the newest `deps/libwpp_rt-*.a` there (cargo's location for a dependency's staticlib).
//! Tools are `clang-22`, `clang++-22`, `llvm-link-22`, `llvm-objcopy-22` and `ld` on `PATH`,
//! overridable with `WPP_CLANG`, `WPP_CLANGXX`, `WPP_LLVM_LINK`, `WPP_OBJCOPY` and `WPP_LD`.

pub mod args;
pub mod embed;
pub mod libstdcxx;
pub mod runtime;

use crate::{finish, finish_module, instrument_module, read_bitcode, Finish, Mode, Options};
pub use args::{is_cxx_source, Invocation, LinkArg, Source};
pub use embed::is_bitcode_file;
use inkwell::context::Context;
use std::collections::{BTreeMap, BTreeSet};
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
    /// An input file is unreadable or malformed.
    #[error("{path}: {reason}")]
    Input {
        /// The file (an archive member as `archive(member)`).
        path: String,
        /// What is wrong.
        reason: String,
    },
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
    /// `llvm-objcopy` (renames the embedded bitcode section; packages the runtime).
    pub objcopy: PathBuf,
    /// The system linker, for packaging the runtime (`ld -r`).
    pub ld: PathBuf,
    /// The runtime static library (or packaged object), when known.
    pub runtime: Option<PathBuf>,
    /// Compile and link as C++ (`wpp c++`).
    pub cxx: bool,
    /// Print each command and the report on stderr.
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

fn show(tool: &Path, args: &[OsString]) -> String {
    let mut s = tool.display().to_string();
    for a in args {
        s.push(' ');
        s.push_str(&a.to_string_lossy());
    }
    s
}

/// Runs a tool whose output only matters on failure.
fn run_quiet<S: AsRef<std::ffi::OsStr>>(tool: &Path, args: &[S]) -> Result<(), DriverError> {
    run_captured(tool, args).map(drop)
}

/// Runs a tool and returns its standard output; on failure its standard error is shown and the
/// error names the command.
fn run_captured<S: AsRef<std::ffi::OsStr>>(
    tool: &Path,
    args: &[S],
) -> Result<Vec<u8>, DriverError> {
    let a: Vec<OsString> = args.iter().map(|s| s.as_ref().to_owned()).collect();
    let out = Command::new(tool)
        .args(&a)
        .output()
        .map_err(|source| DriverError::Spawn {
            tool: tool.display().to_string(),
            source,
        })?;
    if !out.status.success() {
        eprint!("{}", String::from_utf8_lossy(&out.stderr));
        return Err(DriverError::Failed {
            tool: tool.display().to_string(),
            status: out.status.to_string(),
            command: show(tool, &a),
        });
    }
    Ok(out.stdout)
}

/// What a link gathered, for the report.
#[derive(Debug, Default)]
struct Gathered {
    /// Bitcode files to `llvm-link`, with the input each came from.
    bitcode: Vec<(String, PathBuf)>,
    /// Named inputs (and compiled sources) replaced by the instrumented object.
    replaced: BTreeSet<String>,
    /// Inputs and used archive members linked uninstrumented.
    native: Vec<String>,
    /// The members without bitcode of `--whole-archive` archives that are replaced, extracted:
    /// linked as objects in their archive's place.
    extracted: Vec<PathBuf>,
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
            objcopy: env_path("WPP_OBJCOPY", "llvm-objcopy-22"),
            ld: env_path("WPP_LD", "ld"),
            runtime: find_runtime(exe_dir.as_deref()),
            cxx: false,
            verbose: std::env::var_os("WPP_VERBOSE").is_some(),
            keep: None,
        }
    }

    fn run_tool<S: AsRef<std::ffi::OsStr>>(
        &self,
        tool: &Path,
        args: &[S],
    ) -> Result<(), DriverError> {
        let a: Vec<OsString> = args.iter().map(|s| s.as_ref().to_owned()).collect();
        let shown = show(tool, &a);
        if self.verbose {
            eprintln!("wpp cc: {shown}");
        }
        let status = Command::new(tool)
            .args(&a)
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

    fn report(&self, line: &str) {
        if self.verbose {
            eprintln!("wpp cc: {line}");
        }
    }

    /// The packaged runtime object (see [`runtime`]).
    pub fn packaged_runtime(&self) -> Result<PathBuf, DriverError> {
        let lib = self.runtime.as_deref().ok_or(DriverError::NoRuntime)?;
        runtime::packaged(lib, &self.ld, &self.objcopy)
    }

    /// Runs one clang-style invocation.
    pub fn run(&self, args: &[String]) -> Result<(), DriverError> {
        let args = args::expand_response_files(args)?;
        let inv = Invocation::parse(&args)?;
        let cxx = self.cxx || inv.has_cxx_source();
        let compiler = if cxx { &self.clangxx } else { &self.clang };
        let no_inputs = inv.sources.is_empty() && inv.inputs().next().is_none();
        if inv.passthrough || no_inputs {
            return self.run_tool(compiler, &args);
        }
        if !inv.dropped.is_empty() {
            self.report(&format!(
                "dropped {} (wpp cc links the whole program's bitcode itself)",
                inv.dropped.join(" ")
            ));
        }
        if inv.compile_only {
            return self.compile_only(compiler, &args, &inv);
        }
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
        // Native objects are needed only when a native link precedes instrumentation.
        let native = inv.shared || inv.relocatable || may_use_archives(&inv);
        let objects = self.compile_sources(&inv, tmp, native)?;
        if inv.relocatable {
            return self.link_relocatable(compiler, &inv, &objects, tmp);
        }
        self.link_instrumented(compiler, &inv, &objects, tmp)
    }

    /// For a C++ compilation in a mode that traces memory, `-include` of
    /// [`libstdcxx::header`]: libstdc++'s templates instantiated in the program.
    fn instantiation(&self, cxx: bool) -> Result<Vec<OsString>, DriverError> {
        let traced = matches!(
            self.options.mode,
            Mode::TraceAddr | Mode::Ewpp | Mode::EwppFilter
        );
        if !(cxx && traced) {
            return Ok(Vec::new());
        }
        let header = libstdcxx::header(self.runtime.as_deref().and_then(Path::parent))?;
        Ok(vec!["-include".into(), header.into_os_string()])
    }

    /// `-c`: clang with `-fembed-bitcode`, then the bitcode section renamed in each object.
    fn compile_only(
        &self,
        compiler: &Path,
        args: &[String],
        inv: &Invocation,
    ) -> Result<(), DriverError> {
        let mut a: Vec<String> = args
            .iter()
            .filter(|a| !inv.dropped.contains(a))
            .cloned()
            .collect();
        a.extend(inv.line_tables().map(String::from));
        a.push("-fembed-bitcode".into());
        let cxx = self.cxx || inv.has_cxx_source();
        a.extend(
            self.instantiation(cxx)?
                .into_iter()
                .map(|p| p.to_string_lossy().into()),
        );
        self.run_tool(compiler, &a)?;
        let outputs: Vec<PathBuf> = match &inv.output {
            Some(o) if inv.sources.len() == 1 => vec![PathBuf::from(o)],
            _ => inv
                .sources
                .iter()
                .map(|s| default_object(&s.path))
                .collect(),
        };
        for o in outputs.iter().filter(|o| o.is_file()) {
            self.rename_bitcode_section(o)?;
        }
        Ok(())
    }

    /// Renames clang's `.llvmbc` to [`embed::SECTION`] (excluded from final links) and drops
    /// `.llvmcmd`.
    fn rename_bitcode_section(&self, obj: &Path) -> Result<(), DriverError> {
        run_quiet(
            &self.objcopy,
            &[
                OsString::from(format!(
                    "--rename-section=.llvmbc={},exclude",
                    embed::SECTION
                )),
                "--remove-section=.llvmcmd".into(),
                obj.as_os_str().to_owned(),
            ],
        )
    }

    /// Compiles the sources of a link, in `tmp`: into objects carrying their bitcode when
    /// `native`, else into plain bitcode (assembly always into native objects).
    fn compile_sources(
        &self,
        inv: &Invocation,
        tmp: &Path,
        native: bool,
    ) -> Result<Vec<PathBuf>, DriverError> {
        let mut out = Vec::new();
        for (i, src) in inv.sources.iter().enumerate() {
            let asm = args::is_assembly(src);
            let bitcode_only = !native && !asm;
            let obj = tmp.join(format!("src{i}.{}", if bitcode_only { "bc" } else { "o" }));
            let is_cxx = match &src.lang {
                Some(l) => l.starts_with("c++"),
                None => is_cxx_source(&src.path),
            };
            let compiler = if self.cxx || is_cxx {
                &self.clangxx
            } else {
                &self.clang
            };
            let mut a: Vec<OsString> = inv.common.iter().map(OsString::from).collect();
            a.extend(inv.line_tables().map(OsString::from));
            a.extend(inv.deps.iter().map(OsString::from));
            a.extend(self.instantiation(self.cxx || is_cxx)?);
            a.extend(["-Qunused-arguments".into(), "-c".into()]);
            if bitcode_only {
                a.push("-emit-llvm".into());
            } else if !asm {
                a.push("-fembed-bitcode".into());
            }
            if let Some(l) = &src.lang {
                a.extend(["-x".into(), l.into()]);
            }
            a.push(src.path.clone().into());
            a.extend(["-o".into(), obj.clone().into_os_string()]);
            self.run_tool(compiler, &a)?;
            if !bitcode_only && !asm {
                self.rename_bitcode_section(&obj)?;
            }
            out.push(obj);
        }
        Ok(out)
    }

    /// The user's link line with compiled sources in place, `extra` appended, to `output`.
    fn link_args(
        &self,
        inv: &Invocation,
        objects: &[PathBuf],
        skip: &BTreeSet<String>,
        first_skipped: Option<&Path>,
    ) -> Vec<OsString> {
        let mut a: Vec<OsString> = inv.common.iter().map(OsString::from).collect();
        a.push("-Qunused-arguments".into());
        let mut placed = first_skipped.is_none();
        for l in &inv.link {
            let item: OsString = match l {
                LinkArg::Flag(f) => f.into(),
                LinkArg::Source(i) => objects[*i].clone().into_os_string(),
                LinkArg::Input(p) => p.into(),
            };
            if skip.contains(&*item.to_string_lossy()) {
                if !placed {
                    a.push(
                        first_skipped
                            .unwrap_or(Path::new(""))
                            .as_os_str()
                            .to_owned(),
                    );
                    placed = true;
                }
                continue;
            }
            a.push(item);
        }
        if !placed {
            a.push(
                first_skipped
                    .unwrap_or(Path::new(""))
                    .as_os_str()
                    .to_owned(),
            );
        }
        a
    }

    fn output(inv: &Invocation) -> OsString {
        inv.output.clone().unwrap_or_else(|| "a.out".into()).into()
    }

    fn link_natively(
        &self,
        compiler: &Path,
        inv: &Invocation,
        objects: &[PathBuf],
        extra: &[OsString],
    ) -> Result<(), DriverError> {
        let mut a = self.link_args(inv, objects, &BTreeSet::new(), None);
        a.extend(extra.iter().cloned());
        a.extend(["-o".into(), Self::output(inv)]);
        self.run_tool(compiler, &a)
    }

    /// Gathers the bitcode of every object and used archive member of the link.
    fn gather(
        &self,
        compiler: &Path,
        inv: &Invocation,
        objects: &[PathBuf],
        tmp: &Path,
    ) -> Result<Gathered, DriverError> {
        let members = self.used_archive_members(compiler, inv, objects, tmp)?;
        let mut g = Gathered::default();
        let mut found = embed::Bitcode::default();
        for l in &inv.link {
            let path = match l {
                LinkArg::Source(i) => objects[*i].clone(),
                LinkArg::Input(p) if members.contains_key(p) || is_archive(Path::new(p)) => {
                    continue
                }
                LinkArg::Input(p) => PathBuf::from(p),
                LinkArg::Flag(_) => continue,
            };
            // An object named twice is llvm-linked twice and fails there, as clang's link
            // fails on its duplicate definitions.
            let name = path.display().to_string();
            let before = found.modules.len();
            embed::gather(&path, None, &mut found)?;
            if found.modules.len() > before {
                g.replaced.insert(name);
            }
        }
        let whole = WholeArchives::of(inv);
        for (archive, used) in &members {
            let mut part = embed::Bitcode::default();
            embed::gather(Path::new(archive), Some(used), &mut part)?;
            if !part.modules.is_empty() {
                if let Some(arg) = whole.link_arg(archive) {
                    // The final link would pull every member again, next to their instrumented
                    // copies: the archive is replaced by its members without bitcode.
                    g.replaced.insert(arg);
                    let native = native_members(archive, used, &part);
                    let dir = tmp.join(format!("whole{}", g.extracted.len()));
                    std::fs::create_dir_all(&dir).map_err(DriverError::Temp)?;
                    g.extracted
                        .extend(embed::extract_members(Path::new(archive), &native, &dir)?);
                }
                g.native.extend(part.native);
            }
            found.modules.extend(part.modules);
        }
        g.native
            .extend(found.native.iter().filter(|n| !is_shared_lib(n)).cloned());
        for (i, (name, bc)) in found.modules.into_iter().enumerate() {
            let p = tmp.join(format!("module{i}.bc"));
            std::fs::write(&p, bc).map_err(DriverError::Temp)?;
            g.bitcode.push((name, p));
        }
        Ok(g)
    }

    /// The archive members the link uses, from a native link with the linker's trace; empty
    /// (no extra link) when the link names no archive and no `-L` directory.
    fn used_archive_members(
        &self,
        compiler: &Path,
        inv: &Invocation,
        objects: &[PathBuf],
        tmp: &Path,
    ) -> Result<BTreeMap<String, BTreeSet<String>>, DriverError> {
        if !may_use_archives(inv) {
            return Ok(BTreeMap::new());
        }
        let mut a = self.link_args(inv, objects, &BTreeSet::new(), None);
        a.extend([
            "-Wl,-t,-t".into(),
            "-o".into(),
            tmp.join("trace.out").into_os_string(),
        ]);
        if self.verbose {
            eprintln!("wpp cc: {}", show(compiler, &a));
        }
        let out = run_captured(compiler, &a)?;
        Ok(embed::traced_members(&String::from_utf8_lossy(&out)))
    }

    /// `llvm-link`s gathered bitcode into `out`.
    fn llvm_link(&self, g: &Gathered, out: &Path) -> Result<(), DriverError> {
        let mut la: Vec<OsString> = g
            .bitcode
            .iter()
            .map(|(_, p)| p.clone().into_os_string())
            .collect();
        la.extend(["-o".into(), out.as_os_str().to_owned()]);
        self.run_tool(&self.llvm_link, &la)
    }

    fn report_gathered(&self, g: &Gathered) {
        if !self.verbose {
            return;
        }
        let names: Vec<&str> = g.bitcode.iter().map(|(n, _)| n.as_str()).collect();
        self.report(&format!(
            "instrumented {} module(s): {}",
            names.len(),
            names.join(" ")
        ));
        if !g.native.is_empty() {
            self.report(&format!(
                "passed through uninstrumented (no bitcode): {}",
                g.native.join(" ")
            ));
        }
    }

    /// The final link of an executable or (`-shared`) a shared library, instrumented.
    fn link_instrumented(
        &self,
        compiler: &Path,
        inv: &Invocation,
        objects: &[PathBuf],
        tmp: &Path,
    ) -> Result<(), DriverError> {
        let g = self.gather(compiler, inv, objects, tmp)?;
        self.report_gathered(&g);
        if g.bitcode.is_empty() {
            self.report("nothing to instrument: linked natively");
            return self.link_natively(compiler, inv, objects, &[]);
        }
        let linked = tmp.join("linked.bc");
        self.llvm_link(&g, &linked)?;
        // A library's module goes to clang as text (see [`interposable`]).
        let instrumented = tmp.join(if inv.shared {
            "instrumented.ll"
        } else {
            "instrumented.bc"
        });
        let uses_cxx = self.instrument(&linked, &instrumented, inv)?;
        let linker = if self.cxx || inv.has_cxx_source() || uses_cxx {
            &self.clangxx
        } else {
            compiler
        };
        let object = tmp.join("instrumented.o");
        let mut ca: Vec<OsString> = inv.common.iter().map(OsString::from).collect();
        if !inv.common.iter().any(|f| f.starts_with("-O")) {
            // The link line often has no -O (`cc -o prog main.o -lz`); the objects' bitcode is
            // already optimised, and functions built at -O0 carry `optnone`.
            ca.push("-O2".into());
        }
        if inv.shared {
            // The link line of a library often lacks the -fPIC its objects were built with.
            ca.push("-fPIC".into());
        }
        if finish(self.options.mode) != Finish::Optimize {
            // Code generation only: `instrument` ran the passes the module needs.
            ca.extend(["-Xclang", "-disable-llvm-passes"].map(OsString::from));
        }
        ca.extend(["-Qunused-arguments".into(), "-c".into()]);
        ca.push(instrumented.into_os_string());
        ca.extend(["-o".into(), object.clone().into_os_string()]);
        self.run_tool(linker, &ca)?;
        let mut ka = self.link_args(inv, objects, &g.replaced, Some(&object));
        ka.extend(g.extracted.iter().map(|p| p.clone().into_os_string()));
        ka.extend(self.runtime_link_args(inv.shared)?);
        ka.extend(["-o".into(), Self::output(inv)]);
        self.run_tool(linker, &ka)
    }

    /// How an instrumented module links the runtime: an executable links the packaged object
    /// and exports the ABI for the libraries it loads; a library needs `libwpp_rt.so`, found
    /// by its absolute rpath (`wpp_abi`, *Shared libraries*).
    fn runtime_link_args(&self, shared: bool) -> Result<Vec<OsString>, DriverError> {
        let packaged = self.packaged_runtime()?;
        if shared {
            let lib = runtime::shared(&packaged, &self.clang)?;
            let dir = lib.parent().unwrap_or(Path::new("."));
            return Ok(vec![
                lib.clone().into_os_string(),
                format!("-Wl,-rpath,{}", dir.display()).into(),
            ]);
        }
        let mut a = vec![
            packaged.into_os_string(),
            format!("-Wl,--export-dynamic-symbol={}*", runtime::ABI_PREFIX).into(),
        ];
        a.extend(RUNTIME_SYSTEM_LIBS.iter().map(OsString::from));
        Ok(a)
    }

    /// Instruments `linked` into `out`; returns whether the module uses the C++ runtime.
    fn instrument(&self, linked: &Path, out: &Path, inv: &Invocation) -> Result<bool, DriverError> {
        let ctx = Context::create();
        let module = read_bitcode(&ctx, linked)?;
        let uses_cxx = crate::module_uses_cxx(&module);
        let output = PathBuf::from(Self::output(inv));
        let options = Options {
            shared: inv.shared,
            module_name: output.file_name().map(|n| n.to_string_lossy().into_owned()),
            ..self.options.clone()
        };
        let report = instrument_module(&module, &options)?;
        if let Some(why) = &report.foreign_report {
            // A warning, not an error: configure's test programs are built with the report
            // too.
            eprintln!(
                "wpp cc: warning: {}: {why}; it is built as if no pair were exercised (its \
                 run reports each dependence it checks as not exercised)",
                output.display()
            );
        }
        if let Some(why) = &report.foreign_profile {
            eprintln!("wpp cc: warning: {}: {why}", output.display());
        }
        if let Some(why) = crate::renumbered_warning(&report) {
            eprintln!("wpp cc: warning: {}: {why}", output.display());
        }
        if let Finish::Passes(passes) = finish(options.mode) {
            finish_module(&module, passes)?;
        }
        if self.verbose {
            eprintln!("wpp cc: {report:?}");
        }
        let written = match inv.shared {
            true => {
                std::fs::write(out, interposable(&module.print_to_string().to_string())).is_ok()
            }
            false => module.write_bitcode_to_path(out),
        };
        if !written {
            return Err(crate::Error::Write {
                path: out.display().to_string(),
            }
            .into());
        }
        Ok(uses_cxx)
    }

    /// `-r`: the native partial link, then one bitcode module of all inputs in its section.
    fn link_relocatable(
        &self,
        compiler: &Path,
        inv: &Invocation,
        objects: &[PathBuf],
        tmp: &Path,
    ) -> Result<(), DriverError> {
        let g = self.gather(compiler, inv, objects, tmp)?;
        self.link_natively(compiler, inv, objects, &[])?;
        if g.bitcode.is_empty() {
            return Ok(());
        }
        let linked = tmp.join("relocatable.bc");
        self.llvm_link(&g, &linked)?;
        let out = Self::output(inv);
        let mut a: Vec<OsString> = vec![
            format!("--remove-section={}", embed::SECTION).into(),
            "--add-section".into(),
        ];
        let mut add = OsString::from(format!("{}=", embed::SECTION));
        add.push(linked.as_os_str());
        a.push(add);
        a.extend([
            format!("--set-section-flags={}=exclude", embed::SECTION).into(),
            out,
        ]);
        run_quiet(&self.objcopy, &a)
    }
}

/// clang's object name for `-c src` without `-o`: the base name with `.o`, in the current
/// directory.
fn default_object(src: &str) -> PathBuf {
    PathBuf::from(
        Path::new(src)
            .with_extension("o")
            .file_name()
            .unwrap_or_default(),
    )
}

/// The archives a link names inside `--whole-archive` regions, as link arguments.
struct WholeArchives {
    /// Archives named by path.
    paths: BTreeSet<String>,
    /// `-lNAME` flags, by the file name they find (`libNAME.a`).
    libs: BTreeMap<String, String>,
}

impl WholeArchives {
    fn of(inv: &Invocation) -> WholeArchives {
        let mut w = WholeArchives {
            paths: BTreeSet::new(),
            libs: BTreeMap::new(),
        };
        let mut on = false;
        for l in &inv.link {
            match l {
                LinkArg::Flag(f) if f.starts_with("-Wl,") || f.contains("whole-archive") => {
                    for part in f.trim_start_matches("-Wl,").split(',') {
                        match part.trim_start_matches('-') {
                            "whole-archive" => on = true,
                            "no-whole-archive" => on = false,
                            _ => {}
                        }
                    }
                }
                LinkArg::Flag(f) if on && f.starts_with("-l") && !f.starts_with("-l:") => {
                    w.libs.insert(format!("lib{}.a", &f[2..]), f.clone());
                }
                LinkArg::Input(p) if on && is_archive(Path::new(p)) => {
                    w.paths.insert(p.clone());
                }
                _ => {}
            }
        }
        w
    }

    /// The link argument that names `archive` (a path the linker's trace printed) in a
    /// `--whole-archive` region, if any.
    fn link_arg(&self, archive: &str) -> Option<String> {
        if self.paths.contains(archive) {
            return Some(archive.to_owned());
        }
        let file = Path::new(archive).file_name()?.to_str()?;
        self.libs.get(file).cloned()
    }
}

/// The used members of `archive` that carry no bitcode (`part` holds `archive(member)` names).
fn native_members(
    archive: &str,
    used: &BTreeSet<String>,
    part: &embed::Bitcode,
) -> BTreeSet<String> {
    let with_bitcode: BTreeSet<&str> = part
        .modules
        .iter()
        .filter_map(|(n, _)| n.strip_prefix(archive)?.strip_prefix('('))
        .map(|m| m.split(')').next().unwrap_or(m))
        .collect();
    used.iter()
        .filter(|m| !with_bitcode.contains(m.as_str()))
        .cloned()
        .collect()
}

/// The textual IR of a shared library's module with `dso_local` dropped from its exported
/// definitions, as `-fPIC` would have compiled them: objects built without `-fPIC` (bzip2's
/// `Makefile-libbz2_so` links the ones its first `make` built) mark their definitions local,
/// and once `llvm-link` puts a variable's uses in the same module as its definition, they
/// reach it PC-relative, which a shared object cannot (`R_X86_64_PC32 … recompile with
/// -fPIC`). The native link went through the GOT. LLVM's C API cannot clear the flag, hence
/// the text. Internal, private and hidden symbols keep it.
fn interposable(ir: &str) -> String {
    let mut out = String::with_capacity(ir.len());
    for line in ir.split_inclusive('\n') {
        let defines = line.starts_with('@') || line.starts_with("define ");
        let local = ["internal ", "private ", "hidden "]
            .iter()
            .any(|k| line.contains(k));
        match defines && !local {
            true => out.push_str(&line.replacen(" dso_local ", " ", 1)),
            false => out.push_str(line),
        }
    }
    out
}

/// Whether a link may use archives that carry bitcode: it names one, or a `-L` directory where
/// `-l` may find one (system libraries carry none).
fn may_use_archives(inv: &Invocation) -> bool {
    inv.link.iter().any(|l| match l {
        LinkArg::Input(p) => is_archive(Path::new(p)),
        LinkArg::Flag(f) => f.starts_with("-L") || f.starts_with("-l:"),
        LinkArg::Source(_) => false,
    })
}

fn is_archive(p: &Path) -> bool {
    p.extension().is_some_and(|e| e == "a")
}

fn is_shared_lib(name: &str) -> bool {
    name.ends_with(".so") || name.contains(".so.")
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
