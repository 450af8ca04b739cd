//! The instrumented modules of one process: function ids unique per process, one merged
//! program database (issue #12, item 2: shared libraries).
//!
//! A process may hold several instrumented modules: the executable and every instrumented DSO,
//! linked (`DT_NEEDED`) or `dlopen`ed. Each module numbers its functions densely from 0 (its
//! *local* ids, those of its embedded [`EmbeddedProgram`]). As the sanitizers do, there is one
//! runtime per process, and each module registers with it when it is loaded (from a
//! constructor) and gets a *base*: its function `f` is the process-wide id `base + f`. Bases
//! are handed out in registration order, each module taking the next free range, so ranges
//! never overlap and the first module (normally the executable) keeps base 0: a single-module
//! program records exactly the ids it did before modules existed.
//!
//! * **`dlclose` and reload.** Ids are never reused for other code: a module that is unloaded
//!   keeps its range (events recorded before the `dlclose` still name its functions). A module
//!   loaded again with the *same* name and the same program database (byte for byte) gets its
//!   previous base back: the same functions keep the same ids across loads, so queries and
//!   path profiles (per function) aggregate over them. Anything else — another library at the
//!   same path, a rebuilt one — takes a fresh range.
//! * **Merged program database** ([`Modules::merged`]): the modules' functions at their bases,
//!   in id order. A function name defined by more than one module (two `main`s, a `static`
//!   helper present in two libraries, …) is qualified by its module's name, `libbz2.so!name`,
//!   in every module that defines it; names defined once stay as they are, so a program
//!   without clashes reads exactly as before. A second registration under a module name
//!   already used (a rebuilt library reloaded at the same path) is labelled `name#2`, the
//!   third `name#3`, …, so qualified names stay unique. Source files are concatenated and the per-block
//!   file indices shifted accordingly.
//! * **One mode per process.** Every module must record in the same [`Mode`]: a module built
//!   for another mode is refused ([`ModuleError::Mode`]) and runs unrecorded.
//!
//! Registration is O(functions of the module) plus one comparison of program databases per
//! earlier load of a module of the same name; merging is O(total functions + names).
//!
//! # The process around this table (prototype and its numbers: `bench/shared-modules`)
//!
//! * **One runtime per process.** An instrumented executable links the runtime statically and
//!   exports its `__wpp_*` ABI; an instrumented library has `libwpp_rt.so` as `DT_NEEDED`
//!   (made by `wpp cc` from the packaged runtime, found by absolute rpath), which serves a
//!   process whose executable is not instrumented and is shadowed otherwise.
//! * **One buffer per thread per process**, so events of different modules interleave in call
//!   order: the executable defines `__wpp_buf`, `__wpp_idx`, `__wpp_depth` (and, recording
//!   addresses, `__wpp_abuf` and `__wpp_aidx`; `local-exec`, its probes unchanged) and
//!   libraries reach them `initial-exec` (one more load per probe; the
//!   `global-dynamic` default of `-fPIC` would call `__tls_get_addr` per probe, 57 % more
//!   instructions). glibc serves a `dlopen`ed `libwpp_rt.so`'s `initial-exec` TLS from its
//!   static TLS surplus (32 bytes).
//! * **The executable keeps ids `[0, n)`.** A `DT_NEEDED` library's constructor registers
//!   before the executable runs anything, so the first registration registers the executable
//!   first, found by a weak reference to its program database (`dso.rs`).
//! * **Libraries** add their base to each `Enter` word (one load and one add: +2.6 %
//!   instructions on a call-bound workload, fib) and skip every probe when refused.
//! * **The database grows** while the program runs (`dlopen` after the first event): the
//!   merged database goes into the trace as a program chunk, ahead of the library's events.
//! * **Profiles** (`bl`, `ppp`): each library registers its counter table with its base
//!   (`profile.rs`); the profile is every table's counts under the merged names, and a library
//!   `dlclose`d leaves its counts behind before its table is unmapped.
//! * **Memory instructions** (`trace-addr`): each module numbers its loads and stores from 0
//!   too, and registers them with its functions ([`Modules::register`]): its *memory
//!   base* comes from a second range, handed out the same way (the executable keeps
//!   `[0, n)`, a reload gets its range back), and its probes add it to each id. The process's
//!   memory database ([`Modules::merged_memory`]) is every module's instructions at their
//!   bases, each naming its function by process-wide id; a library `dlopen`ed after the
//!   first access goes into the address trace as a grown database, ahead of its accesses
//!   (`addr.rs`).
//! * **Memory dependences** (`ewpp-filter`, `ewpp`): the same memory bases. The filtering
//!   run's report lists each module by its `program_crc` (its memory instructions and
//!   function names), with its range
//!   ([`Modules::report_modules`]); an `ewpp` module embeds the report it was built with, and
//!   the collection run takes from each module's report the pairs whose load is in that
//!   module, renumbered to this process's bases ([`Modules::merged_program`]), so the modules
//!   may register in another order than in the filtering run. The check routine is the last
//!   function of the merged program and the checks' memory table is fixed when recording
//!   starts, so in these modes a library loaded after the recording started is refused
//!   (`dso.rs`).
//! * Limit: a runtime that arrives by `dlopen` is after libc in symbol lookup, so its `_exit`
//!   and `exec` wrappers do not interpose there (those exits lose the buffered tail).

use crate::abi::{EmbeddedProgram, EwppTables, Mode};
use rustc_hash::FxHashMap;
use wpp_deps::filter::{program_crc, FilterReport, ReportModule};
use wpp_deps::{MemInstr, MemoryDb};
use wpp_trace::{Function, FunctionId, ProgramDb};

/// Why a module cannot be recorded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModuleError {
    /// The module was instrumented for another recording mode than the process's first module.
    #[error(
        "module {module} was instrumented for mode {module_mode}, but this process records \
         in mode {process_mode} (module {first}); rebuild it with --wpp-mode={process_mode}"
    )]
    Mode {
        /// The refused module.
        module: String,
        /// Its mode.
        module_mode: &'static str,
        /// The process's mode.
        process_mode: &'static str,
        /// The module that set it.
        first: String,
    },
    /// The process's function ids would exceed the 32-bit id space.
    #[error(
        "module {module} has {functions} functions, more than the {left} function ids this \
         process has left"
    )]
    IdsExhausted {
        /// The refused module.
        module: String,
        /// Its function count.
        functions: usize,
        /// Ids still free.
        left: u64,
    },
    /// The process's memory-instruction ids would exceed the 32-bit id space.
    #[error(
        "module {module} has {instructions} memory instructions, more than the {left} ids \
         this process has left"
    )]
    MemoryIdsExhausted {
        /// The refused module.
        module: String,
        /// Its memory-instruction count.
        instructions: usize,
        /// Ids still free.
        left: u64,
    },
}

/// Where a registered module's process-wide ids start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bases {
    /// Its function 0's id.
    pub function: FunctionId,
    /// Its memory instruction 0's id, when it registered memory instructions.
    pub memory: Option<u32>,
}

/// One registration: a module's range of process-wide ids.
#[derive(Debug)]
struct Module {
    /// The module's name (the file name of the executable or DSO).
    name: String,
    /// Its first process-wide function id.
    base: FunctionId,
    /// Its program database as embedded (compared on reload).
    db: Vec<u8>,
    /// Its decoded program database, CFGs attached.
    program: EmbeddedProgram,
    /// Whether it is loaded now (`false` after `dlclose`).
    loaded: bool,
    /// Its memory instructions and their first process-wide id (`trace-addr`).
    memory: Option<(u32, MemoryDb)>,
}

/// The modules registered in this process, in registration order.
#[derive(Debug, Default)]
pub struct Modules {
    modules: Vec<Module>,
    /// The first id no module's range holds.
    next: u64,
    /// The first memory-instruction id no module's range holds.
    next_memory: u64,
}

impl Modules {
    /// An empty table.
    pub const fn new() -> Modules {
        Modules {
            modules: Vec::new(),
            next: 0,
            next_memory: 0,
        }
    }

    /// Whether no module registered.
    pub fn is_empty(&self) -> bool {
        self.modules.is_empty()
    }

    /// The merged database ([`Modules::merged`]) as the program a recording starts with, in
    /// the modules' mode (their CFGs are attached to the functions).
    pub fn merged_program(&self) -> EmbeddedProgram {
        let program = self.merged();
        // Path modes: each module's CFG list, renamed as its functions are.
        let mut cfgs = Vec::new();
        for m in &self.modules {
            let names = &program.functions[m.base.0 as usize..];
            cfgs.extend(
                m.program
                    .cfgs
                    .iter()
                    .zip(names)
                    .map(|(c, f)| wpp_paths::Cfg {
                        name: f.name.clone(),
                        ..c.clone()
                    }),
            );
        }
        let mode = self.mode().unwrap_or(Mode::TraceBlocks);
        EmbeddedProgram {
            version: crate::abi::EMBEDDED_VERSION,
            mode,
            program,
            cfgs,
            ewpp: (mode == Mode::Ewpp).then(|| self.merged_tables()),
        }
    }

    /// The `ewpp` checks' tables of the whole process: the merged memory instructions, and
    /// from each module's report the pairs whose load is in that module, at this process's
    /// memory bases (module docs).
    fn merged_tables(&self) -> EwppTables {
        let memory = self.merged_memory();
        let modules = self.report_modules();
        let first: FxHashMap<u32, u32> = modules.iter().map(|m| (m.crc, m.first)).collect();
        let mut pairs: Vec<_> = self
            .modules
            .iter()
            .filter_map(|m| m.program.ewpp.as_ref())
            .flat_map(|t| t.exercised.pairs_of_module(t.crc, &first))
            .collect();
        pairs.sort_unstable_by_key(|p| (p.store, p.load));
        pairs.dedup_by_key(|p| (p.store, p.load));
        let crc = program_crc(&memory);
        EwppTables {
            exercised: FilterReport {
                program_crc: crc,
                modules,
                pairs,
            },
            crc,
            memory: MemoryDb {
                program: ProgramDb::default(),
                ..memory
            },
        }
    }

    /// The modules that registered memory instructions, as a filtering run's report lists
    /// them (by their first id). A module identical to an earlier one (the same library under
    /// another name) is left out: a report names each module once, and its pairs go unnamed.
    pub fn report_modules(&self) -> Vec<ReportModule> {
        let mut out: Vec<_> = self
            .modules
            .iter()
            .filter_map(|m| {
                let (first, db) = m.memory.as_ref()?;
                Some(ReportModule {
                    crc: module_crc(m)?,
                    first: *first,
                    instructions: db.instructions.len() as u32,
                })
            })
            .collect();
        out.sort_unstable_by_key(|m| m.first);
        let mut seen = rustc_hash::FxHashSet::default();
        out.retain(|m| seen.insert(m.crc));
        out
    }

    /// The process's recording mode (the first module's), if any module is registered.
    pub fn mode(&self) -> Option<Mode> {
        self.modules.first().map(|m| m.program.mode)
    }

    /// Registers module `name`, whose embedded program database is `db` (decoded: `program`)
    /// and whose memory instructions are `memory` (`trace-addr`), and returns its bases. A
    /// reload of an unloaded module with the same name and databases gets its previous bases
    /// back (module docs).
    pub fn register(
        &mut self,
        name: &str,
        db: &[u8],
        program: EmbeddedProgram,
        memory: Option<MemoryDb>,
    ) -> Result<Bases, ModuleError> {
        if let Some(first) = self.modules.first() {
            // Blocks recorded as paths and block by block do not mix in one trace.
            let as_paths = |p: &EmbeddedProgram| p.program.paths_are_blocks;
            if first.program.mode != program.mode || as_paths(&first.program) != as_paths(&program)
            {
                return Err(ModuleError::Mode {
                    module: name.to_owned(),
                    module_mode: probes_name(&program),
                    process_mode: probes_name(&first.program),
                    first: first.name.clone(),
                });
            }
        }
        // An `ewpp` module's memory instructions are in its checks' tables.
        let memory = memory.or_else(|| program.ewpp.as_ref().map(|t| t.memory.clone()));
        if let Some(m) = self.modules.iter_mut().find(|m| {
            !m.loaded
                && m.name == name
                && m.db == db
                && m.memory.as_ref().map(|(_, d)| d) == memory.as_ref()
        }) {
            m.loaded = true;
            return Ok(Bases {
                function: m.base,
                memory: m.memory.as_ref().map(|&(at, _)| at),
            });
        }
        let functions = program.program.functions.len();
        let left = (1u64 << 32) - self.next;
        if functions as u64 > left {
            return Err(ModuleError::IdsExhausted {
                module: name.to_owned(),
                functions,
                left,
            });
        }
        let instructions = memory.as_ref().map_or(0, |d| d.instructions.len());
        let left = (1u64 << 32) - self.next_memory;
        if instructions as u64 > left {
            return Err(ModuleError::MemoryIdsExhausted {
                module: name.to_owned(),
                instructions,
                left,
            });
        }
        let bases = Bases {
            function: FunctionId(self.next as u32),
            memory: memory.is_some().then_some(self.next_memory as u32),
        };
        self.next += functions as u64;
        self.next_memory += instructions as u64;
        self.modules.push(Module {
            name: name.to_owned(),
            base: bases.function,
            db: db.to_vec(),
            program,
            loaded: true,
            memory: bases.memory.zip(memory),
        });
        Ok(bases)
    }

    /// How many memory-instruction ids the modules' ranges hold.
    pub fn memory_ids(&self) -> u64 {
        self.next_memory
    }

    /// Whether any module registered memory instructions.
    pub fn has_memory(&self) -> bool {
        self.modules.iter().any(|m| m.memory.is_some())
    }

    /// The memory database of the whole process: every module's instructions at their memory
    /// bases, each naming its function by process-wide id, with the [`Modules::merged`]
    /// program.
    pub fn merged_memory(&self) -> MemoryDb {
        let mut ranges: Vec<_> = self
            .modules
            .iter()
            .filter_map(|m| m.memory.as_ref().map(|(at, db)| (*at, m.base, db)))
            .collect();
        ranges.sort_unstable_by_key(|&(at, ..)| at);
        let mut instructions = Vec::with_capacity(self.memory_ids() as usize);
        let mut files = Vec::new();
        for (at, base, db) in ranges {
            debug_assert_eq!(at as usize, instructions.len(), "memory ranges are dense");
            let first_file = files.len() as u32;
            instructions.extend(db.instructions.iter().map(|i| MemInstr {
                function: i.function + base.0,
                file: match i.file {
                    wpp_deps::memdb::NO_FILE => i.file,
                    f => f + first_file,
                },
                ..i.clone()
            }));
            files.extend(db.files.iter().cloned());
        }
        MemoryDb {
            version: wpp_deps::memdb::MEMORY_DB_VERSION,
            program: self.merged(),
            instructions,
            files,
        }
    }

    /// Notes that the module registered with `base` was unloaded (`dlclose`); its ids stay
    /// reserved. Unknown bases are ignored.
    pub fn unload(&mut self, base: FunctionId) {
        if let Some(m) = self.modules.iter_mut().find(|m| m.base == base && m.loaded) {
            m.loaded = false;
        }
    }

    /// The program database of the whole process: every module's functions at their bases,
    /// names that clash across modules qualified as `module!name` (module docs).
    pub fn merged(&self) -> ProgramDb {
        let clashing = clashing_names(&self.modules);
        let mut merged = ProgramDb::default();
        for (m, label) in self.modules.iter().zip(self.labels()) {
            let files = merged.files.len() as u32;
            merged.files.extend(m.program.program.files.iter().cloned());
            merged
                .functions
                .extend(m.program.program.functions.iter().map(|f| Function {
                    name: if clashing.contains_key(f.name.as_str()) {
                        format!("{label}!{}", f.name)
                    } else {
                        f.name.clone()
                    },
                    block_files: f.block_files.iter().map(|i| i + files).collect(),
                    ..f.clone()
                }));
        }
        merged.paths_are_blocks = self
            .modules
            .iter()
            .any(|m| m.program.program.paths_are_blocks);
        merged
    }

    /// Each registration's module name, `#k` added to the `k`-th registration of a name
    /// (k ≥ 2).
    fn labels(&self) -> Vec<String> {
        let mut seen: FxHashMap<&str, usize> = FxHashMap::default();
        self.modules
            .iter()
            .map(|m| {
                let k = seen.entry(m.name.as_str()).or_insert(0);
                *k += 1;
                match *k {
                    1 => m.name.clone(),
                    k => format!("{}#{k}", m.name),
                }
            })
            .collect()
    }
}

/// The CRC-32 by which a filtering run's report names a module that registered memory
/// instructions ([`program_crc`]).
fn module_crc(m: &Module) -> Option<u32> {
    let (_, db) = m.memory.as_ref()?;
    Some(
        m.program
            .ewpp
            .as_ref()
            .map_or_else(|| program_crc(db), |t| t.crc),
    )
}

/// A module's recording mode as `wpp cc`'s options name it: a `trace-blocks` module built
/// with a probe per block says so.
fn probes_name(p: &EmbeddedProgram) -> &'static str {
    match (p.mode, p.program.paths_are_blocks) {
        (Mode::TraceBlocks, false) => "trace-blocks --wpp-no-elide",
        (mode, _) => mode.name(),
    }
}

/// The function names defined by more than one module (each module counted once per name).
fn clashing_names(modules: &[Module]) -> FxHashMap<&str, ()> {
    let mut defined_by: FxHashMap<&str, usize> = FxHashMap::default();
    for (i, m) in modules.iter().enumerate() {
        for f in &m.program.program.functions {
            let first = *defined_by.entry(f.name.as_str()).or_insert(i);
            if first != i {
                defined_by.insert(f.name.as_str(), usize::MAX);
            }
        }
    }
    defined_by
        .into_iter()
        .filter(|&(_, by)| by == usize::MAX)
        .map(|(name, _)| (name, ()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::EMBEDDED_VERSION;
    use proptest::prelude::*;

    fn program(mode: Mode, names: &[&str]) -> EmbeddedProgram {
        EmbeddedProgram {
            version: EMBEDDED_VERSION,
            mode,
            program: ProgramDb {
                functions: names
                    .iter()
                    .map(|n| Function {
                        name: (*n).to_owned(),
                        ..Function::default()
                    })
                    .collect(),
                ..ProgramDb::default()
            },
            cfgs: Vec::new(),
            ewpp: None,
        }
    }

    fn register(ms: &mut Modules, name: &str, names: &[&str]) -> FunctionId {
        let p = program(Mode::TraceBlocks, names);
        let db = postcard::to_allocvec(&p).unwrap();
        ms.register(name, &db, p, None).unwrap().function
    }

    /// A `trace-addr` module whose functions `names` hold one memory instruction each, on line
    /// `line + k` in function `k`.
    fn register_memory(ms: &mut Modules, name: &str, names: &[&str], line: u32) -> Bases {
        let p = program(Mode::TraceAddr, names);
        let db = postcard::to_allocvec(&p).unwrap();
        let memory = MemoryDb {
            version: wpp_deps::memdb::MEMORY_DB_VERSION,
            program: p.program.clone(),
            instructions: (0..names.len() as u32)
                .map(|k| MemInstr {
                    function: k,
                    block: 0,
                    line: line + k,
                    column: 1,
                    file: k,
                    kind: wpp_deps::AccessKind::Load,
                    what: "load".into(),
                })
                .collect(),
            files: names.iter().map(|n| format!("{name}/{n}.c")).collect(),
        };
        ms.register(name, &db, p, Some(memory)).unwrap()
    }

    /// Memory ids: the executable keeps `[0, n)`, each library takes the next range, a reload
    /// gets its range back, and every instruction names its function by process-wide id.
    #[test]
    fn memory_instructions_get_their_own_ranges() {
        let mut ms = Modules::new();
        let exe = register_memory(&mut ms, "prog", &["main", "helper"], 10);
        assert_eq!((exe.function.0, exe.memory), (0, Some(0)));
        let lib = register_memory(&mut ms, "libq.so", &["q", "helper"], 20);
        assert_eq!((lib.function.0, lib.memory), (2, Some(2)));
        ms.unload(lib.function);
        assert_eq!(
            register_memory(&mut ms, "libq.so", &["q", "helper"], 20),
            lib
        );
        ms.unload(lib.function);
        // Same functions, other instructions (lines): a fresh range of both kinds.
        let rebuilt = register_memory(&mut ms, "libq.so", &["q", "helper"], 30);
        assert_eq!((rebuilt.function.0, rebuilt.memory), (4, Some(4)));
        let merged = ms.merged_memory();
        let at: Vec<_> = (0..6)
            .map(|id| {
                let i = merged.get(id).unwrap();
                (
                    merged.program.functions[i.function as usize].name.as_str(),
                    i.line,
                )
            })
            .collect();
        assert_eq!(
            at,
            [
                ("main", 10),
                ("prog!helper", 11),
                ("libq.so!q", 20),
                ("libq.so!helper", 21),
                ("libq.so#2!q", 30),
                ("libq.so#2!helper", 31)
            ]
        );
        // Each instruction keeps its own source file through the merge.
        let files: Vec<_> = (0..6).map(|id| merged.file(id).unwrap()).collect();
        assert_eq!(
            files,
            [
                "prog/main.c",
                "prog/helper.c",
                "libq.so/q.c",
                "libq.so/helper.c",
                "libq.so/q.c",
                "libq.so/helper.c"
            ]
        );
    }

    /// The case: a program and libbz2.so both define `main`-like clashing names.
    #[test]
    fn executable_keeps_base_zero_and_clashes_are_qualified() {
        let mut ms = Modules::new();
        assert_eq!(
            register(&mut ms, "bzip2", &["main", "helper"]),
            FunctionId(0)
        );
        assert_eq!(
            register(&mut ms, "libbz2.so", &["BZ2_compress", "helper"]),
            FunctionId(2)
        );
        let names: Vec<_> = ms.merged().functions.into_iter().map(|f| f.name).collect();
        assert_eq!(
            names,
            ["main", "bzip2!helper", "BZ2_compress", "libbz2.so!helper"]
        );
    }

    #[test]
    fn reload_of_the_same_module_keeps_its_ids_another_one_does_not() {
        let mut ms = Modules::new();
        register(&mut ms, "prog", &["main"]);
        let lib = register(&mut ms, "libp.so", &["f", "g"]);
        ms.unload(lib);
        assert_eq!(register(&mut ms, "libp.so", &["f", "g"]), lib);
        ms.unload(lib);
        // Rebuilt at the same path: new functions, new ids, the old range stays reserved.
        let rebuilt = register(&mut ms, "libp.so", &["f", "g", "h"]);
        assert_eq!(rebuilt, FunctionId(3));
        // A module that is still loaded is never shared by a second registration.
        assert_eq!(
            register(&mut ms, "libp.so", &["f", "g", "h"]),
            FunctionId(6)
        );
        let names: Vec<_> = ms.merged().functions.into_iter().map(|f| f.name).collect();
        assert_eq!(
            names,
            [
                "main",
                "libp.so!f",
                "libp.so!g",
                "libp.so#2!f",
                "libp.so#2!g",
                "libp.so#2!h",
                "libp.so#3!f",
                "libp.so#3!g",
                "libp.so#3!h"
            ]
        );
    }

    #[test]
    fn another_mode_is_refused_with_both_modules_named() {
        let mut ms = Modules::new();
        register(&mut ms, "prog", &["main"]);
        let p = program(Mode::Bl, &["f"]);
        let e = ms
            .register("libq.so", &[1], p, None)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("libq.so") && e.contains("bl") && e.contains("prog"),
            "{e}"
        );
        assert_eq!(ms.merged().functions.len(), 1, "nothing registered");
    }

    /// Blocks recorded as paths and block by block do not mix in one trace: the second build
    /// is refused with the option that would make it match; alike builds keep the mark.
    #[test]
    fn blocks_as_paths_and_a_probe_per_block_are_refused_together() {
        let mut ms = Modules::new();
        let mut as_paths = program(Mode::TraceBlocks, &["main"]);
        as_paths.program.paths_are_blocks = true;
        ms.register("prog", &[0], as_paths.clone(), None).unwrap();
        let e = ms
            .register("libq.so", &[1], program(Mode::TraceBlocks, &["f"]), None)
            .unwrap_err()
            .to_string();
        assert!(
            e.ends_with("rebuild it with --wpp-mode=trace-blocks"),
            "{e}"
        );
        assert!(e.contains("mode trace-blocks --wpp-no-elide"), "{e}");
        as_paths.program.functions[0].name = "g".into();
        ms.register("libr.so", &[2], as_paths, None).unwrap();
        assert!(ms.merged().paths_are_blocks);
        assert_eq!(ms.merged().functions.len(), 2);
    }

    #[test]
    fn block_files_are_shifted_to_the_merged_file_table() {
        let mut ms = Modules::new();
        for (module, file) in [("prog", "a.c"), ("liba.so", "b.c")] {
            let mut p = program(Mode::TraceBlocks, &["f"]);
            p.program.files = vec![format!("{file}.h"), file.to_owned()];
            p.program.functions[0].block_files = vec![1, 0];
            ms.register(module, &[0], p, None).unwrap();
        }
        let merged = ms.merged();
        let files = |f: &Function| -> Vec<String> {
            f.block_files
                .iter()
                .map(|&i| merged.files[i as usize].clone())
                .collect()
        };
        assert_eq!(files(&merged.functions[0]), ["a.c", "a.c.h"]);
        assert_eq!(files(&merged.functions[1]), ["b.c", "b.c.h"]);
    }

    /// A load or an unload of one of a few module variants (name, functions).
    #[derive(Clone, Debug)]
    enum Step {
        Load(usize),
        Unload(usize),
    }

    const VARIANTS: [(&str, &[&str]); 4] = [
        ("prog", &["main", "f"]),
        ("liba.so", &["a1", "f"]),
        ("liba.so", &["a1", "a2"]),
        ("libb.so", &["b1"]),
    ];

    proptest! {
        /// Oracle: for every id the merged database holds the function of the module that
        /// registered a range containing it, at its local id; ranges of distinct
        /// registrations are disjoint; qualified names are exactly those a brute-force count
        /// over the registrations finds in two modules; reloads get a previous base only for
        /// an identical unloaded module.
        #[test]
        fn ids_are_unique_and_resolve_to_their_module(
            steps in prop::collection::vec(
                prop_oneof![(0..4usize).prop_map(Step::Load), (0..8usize).prop_map(Step::Unload)],
                0..24,
            )
        ) {
            let mut ms = Modules::new();
            // Per registration of a new range: (variant, base); and which are loaded.
            let mut ranges: Vec<(usize, u32)> = Vec::new();
            let mut loaded: Vec<bool> = Vec::new();
            for step in steps {
                match step {
                    Step::Load(v) => {
                        let base = register(&mut ms, VARIANTS[v].0, VARIANTS[v].1).0;
                        match ranges.iter().position(|&(_, b)| b == base) {
                            Some(r) => {
                                prop_assert!(!loaded[r], "a loaded module's range was shared");
                                prop_assert_eq!(VARIANTS[ranges[r].0], VARIANTS[v]);
                                loaded[r] = true;
                            }
                            None => {
                                prop_assert!(
                                    !ranges.iter().zip(&loaded).any(|(&(w, _), &l)| !l
                                        && VARIANTS[w] == VARIANTS[v]),
                                    "an identical unloaded module was not reused"
                                );
                                ranges.push((v, base));
                                loaded.push(true);
                            }
                        }
                    }
                    Step::Unload(r) => {
                        if let Some(&(_, base)) = ranges.get(r) {
                            ms.unload(FunctionId(base));
                            loaded[r] = false;
                        }
                    }
                }
            }
            let merged = ms.merged();
            let mut expected_len = 0;
            for (r, &(v, base)) in ranges.iter().enumerate() {
                let (module, names) = VARIANTS[v];
                let earlier = ranges[..r].iter().filter(|&&(w, _)| VARIANTS[w].0 == module).count();
                let label = match earlier {
                    0 => module.to_owned(),
                    n => format!("{module}#{}", n + 1),
                };
                for (local, name) in names.iter().enumerate() {
                    let in_modules = ranges
                        .iter()
                        .filter(|&&(w, _)| VARIANTS[w].1.contains(name))
                        .count();
                    let expected = if in_modules > 1 {
                        format!("{label}!{name}")
                    } else {
                        (*name).to_owned()
                    };
                    let id = base as usize + local;
                    prop_assert_eq!(&merged.functions[id].name, &expected);
                }
                expected_len += names.len();
            }
            prop_assert_eq!(merged.functions.len(), expected_len, "ranges overlap or leave gaps");
        }
    }
}
