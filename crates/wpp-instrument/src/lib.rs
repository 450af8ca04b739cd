//! The LLVM 22 instrumenter: reads a bitcode module, adds recording probes for one mode, embeds
//! the program database and writes bitcode that links against the `wpp-rt` runtime.
//!
//! # Modes
//!
//! | mode | records | probes | module |
//! |---|---|---|---|
//! | `trace-blocks` | `Enter`/`Block`/`Leave` per thread (Zhang–Gupta §3) | by default the `trace-paths` probes, whose paths readers decode to blocks ([`Options::elide`]; else a buffer append per block), function entry and exit | [`blocks`] |
//! | `trace-paths` | `Enter`/`Path`/`Leave` (Larus §2): paths cut at backedges, call sites, returns | path-register adds on chords; an append where a path ends | [`paths`] |
//! | `bl` | Ball–Larus path profile (PPP's baseline) | the same register; `counters[r]++` (≤ 4096 paths; atomic if the program may run threads) or a runtime hash-table call | `instrument_bl` (this file) |
//! | `trace-addr` | the `trace-blocks` events plus an address trace: id, address and size of every executed load, store and modelled library write (Tallam–Gupta's CF + AT) | `trace-blocks`' probes, and an append of three words per access to a second buffer | [`memory`] |
//! | `ewpp` | the extended control-flow trace (Tallam–Gupta §3): the `trace-blocks` events with each memory dependence's check as block events of a synthetic `__wpp_check` | `trace-blocks`' probes, and an append of three tagged words per access to the *event* buffer, which the runtime's writer turns into checks | [`memory`], `wpp_deps::ecf` |
//! | `ewpp-filter` | the filtering phase of `ewpp` (Tallam–Gupta §3.1): the runtime classifies the exercised (store, load) pairs as the program runs and writes the report at exit | `trace-addr`'s address probes only | [`memory`], `wpp_deps::filter` |
//! | `ppp` | preferential path profile (PPP §5) | BL and PPP registers on the same chords, placed off the interesting profile's hot edges; range + stored-id check, array increment (atomic if the program may run threads), runtime call on a miss; functions with ≤ 4096 paths count by Ball–Larus id like `bl` | [`ppp`] |
//!
//! # Design
//!
//! * **Inline probes.** Every hot operation is inline IR (issue 4; Larus §2 notes that tracing
//!   overhead is dominated by the per-event work): a probe is a call to a small internal
//!   `alwaysinline` helper ([`helpers`]) that appends one 64-bit event word to a thread-local
//!   buffer, or straight-line register and counter updates. The runtime is called only when a
//!   buffer is full (which also registers a thread on its first event), for hash-table paths,
//!   PPP misses, and to repair the shadow stack after `longjmp` or an exception.
//! * **Ids.** Functions are numbered in module order over the defined functions that get probes;
//!   blocks by layout order within their function (Zhang–Gupta §3 uses function-local block
//!   ids), so every mode numbers the same blocks the same way. Instrument the *linked*
//!   whole-program module so that function ids are global ([`driver`] does).
//! * **Program database.** Names, source locations (from `DISubprogram` and each block's first
//!   debug location: its line and its scope's file, so code inlined from a header names the
//!   header; without `-g`, a function's file is the module's source when it has one) and, for the path modes, each function's CFG with its cut points are
//!   embedded as `__wpp_program_db`; the runtime copies the CFGs into the program database of
//!   every trace and `.wpp` it writes (`wpp_abi::EmbeddedProgram::attach_cfgs`), so a path
//!   trace decodes to blocks from the file alone (`wpp_paths::trace`).
//! * **No stale purity.** Attributes the optimizer inferred before instrumentation, such as
//!   `memory(read)` or `nosync`, are dropped from instrumented functions and their call sites:
//!   the final `-O2` compile would otherwise hoist, merge or delete calls — and their events.
//!   (Found by the `trace-paths`/`trace-blocks` cross-check on zlib, where a `memory(read)`
//!   `adler32` lost most of its calls from one of the two traces.)
//! * **Exact counts under threads.** The `bl`/`ppp` counter arrays are shared by all threads,
//!   so a plain load/add/store loses increments that race (issue 4). A module that may start
//!   threads ([`module_may_run_threads`]: it refers to `pthread_create`, `thrd_create`,
//!   libstdc++'s `std::thread` start or an OpenMP fork), and every shared library (whose host
//!   may run threads the library never sees start), counts with `atomicrmw add monotonic`
//!   instead; single-threaded programs keep the plain increment, since a `lock xadd` costs
//!   some 20 cycles even uncontended. The runtime's hash-table and PPP-miss paths lock
//!   already. [`Options::atomic_counters`] overrides the decision.
//! * **Exact `Leave`s.** Each function keeps the shadow-stack depth returned by its `Enter` probe;
//!   after a `returns_twice` call and at every landing pad it restores the thread's depth to it,
//!   the runtime appending one `Leave` per abandoned frame. `resume` counts as a return.
//!
//! Functions not instrumented: declarations, `available_externally` bodies (discarded after
//! optimization), `naked` functions, and the helpers themselves (`__wpp_*`).

#![deny(missing_docs)]

pub mod blocks;
pub mod driver;
pub mod helpers;
pub mod ir;
pub mod memory;
pub mod paths;
pub mod ppp;
mod scanf;

use inkwell::context::Context;
use inkwell::memory_buffer::MemoryBuffer;
use inkwell::module::Module;
use ir::Mod;
use std::path::Path;
use wpp_abi::{self as abi, EmbeddedProgram, Mode};
use wpp_trace::{Function, ProgramDb};

pub use wpp_abi::Mode as InstrumentMode;

/// Errors of the instrumenter.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The input could not be read or parsed as bitcode.
    #[error("cannot read bitcode {path}: {message}")]
    Read {
        /// The input path.
        path: String,
        /// LLVM's message.
        message: String,
    },
    /// The output could not be written.
    #[error("cannot write bitcode {path}")]
    Write {
        /// The output path.
        path: String,
    },
    /// The module was instrumented already.
    #[error("module is already instrumented by wpp (it defines {symbol})")]
    AlreadyInstrumented {
        /// The symbol found.
        symbol: &'static str,
    },
    /// A construct this instrumenter does not handle.
    #[error("function {function}: unsupported: {what}")]
    Unsupported {
        /// The function.
        function: String,
        /// What is unsupported.
        what: String,
    },
    /// A program this mode does not handle as a whole (not one of its functions).
    #[error("unsupported program: {0}")]
    ProgramUnsupported(String),
    /// IR that violates an assumption (e.g. a block without terminator).
    #[error("function {function}: malformed IR: {what}")]
    Malformed {
        /// The function.
        function: String,
        /// What is wrong.
        what: String,
    },
    /// The instrumented module failed LLVM's verifier (a bug in the instrumenter).
    #[error("instrumented module fails the LLVM verifier: {0}")]
    Verify(String),
    /// The program database could not be encoded.
    #[error("cannot encode the program database: {0}")]
    Encode(String),
    /// LLVM could not run the passes that finish an instrumented module ([`finish`]).
    #[error("cannot finish the instrumented module: {0}")]
    Finish(String),
}

/// What `wpp cc` runs over the linked, instrumented module before clang generates its code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Finish {
    /// Clang's `-O2` over the whole module once more.
    Optimize,
    /// These LLVM passes, in process ([`finish_module`]); clang then generates code only.
    Passes(&'static str),
}

/// The probes' helpers inlined (`alwaysinline`), then the per-function cleanups that make the
/// inlined probes cheap: the event buffer's index forwarded from one probe's store to the
/// next probe's load (`gvn`), path registers and locals in registers (`sroa`), the probes'
/// split edges merged back (`simplifycfg`).
const PROBE_CLEANUP: &str = "always-inline,function(sroa,early-cse<memssa>,\
    instcombine<no-verify-fixpoint>,simplifycfg,gvn,dse)";

/// How `wpp cc` finishes a module instrumented in `mode` (BENCHMARKS.md, "The instrumented
/// module's compile").
///
/// The objects' bitcode was optimized when they were compiled (`-fembed-bitcode` keeps the
/// optimized module), so what the instrumented module needs is the probes' helpers inlined
/// and tidied. A second `-O2` costs twice that time (SQLite in `trace-blocks`: 74 s against
/// 42 s for the final compile) and, measured side by side, bought nothing in the trace and
/// BL modes; it still pays in PPP (10–13 % on bzip2 and Lua), whose hashed path counts it
/// optimizes further. The address modes put a probe on every load and store: their module
/// is many times larger, and inlining alone costs them 2–7 % of a run already 40–70× native.
pub fn finish(mode: Mode) -> Finish {
    match mode {
        Mode::Ppp => Finish::Optimize,
        Mode::TraceBlocks | Mode::TracePaths | Mode::Bl => Finish::Passes(PROBE_CLEANUP),
        Mode::TraceAddr | Mode::Ewpp | Mode::EwppFilter => Finish::Passes("always-inline"),
    }
}

/// Runs `passes` ([`Finish::Passes`]) over an instrumented module.
pub fn finish_module(module: &Module<'_>, passes: &str) -> Result<(), Error> {
    Mod::new(module).run_passes(passes).map_err(Error::Finish)
}

/// Options of one instrumentation run.
#[derive(Clone, Debug)]
pub struct Options {
    /// What to record.
    pub mode: Mode,
    /// `ppp` mode: the interesting paths, as Ball–Larus id → execution count per function
    /// name (PPP §5 takes every path that ran in a BL profile; see
    /// [`interesting_from_profile`]). The counts only guide the placement of increments (hot
    /// edges get none); 0 is fine.
    pub interesting: std::collections::BTreeMap<String, std::collections::BTreeMap<u64, u64>>,
    /// `ppp` mode: the CFGs the `interesting` profile numbered its paths on, by the same
    /// names; a function whose CFG here numbers them otherwise (another build) takes none of
    /// them ([`Report::renumbered`]). Empty: the ids are trusted.
    pub interesting_cfgs: std::collections::BTreeMap<String, wpp_paths::Cfg>,
    /// `ppp` mode: functions with at most this many Ball–Larus paths count them like `bl`, in
    /// an array indexed by the Ball–Larus id (one register, no check; the runtime tells
    /// interesting from uninteresting paths at exit). Default [`abi::BL_ARRAY_MAX`], the
    /// limit under which `bl` uses arrays too; 0 gives every function PPP numbering.
    pub ppp_bl_array_max: u64,
    /// `bl`/`ppp` modes: whether counter increments are atomic. `None` (the default) decides
    /// per module with [`module_may_run_threads`].
    pub atomic_counters: Option<bool>,
    /// `ewpp` mode: the filtering run's report (`wpp deps filter -o`), which must be of this
    /// program. `None`: no pair counts as exercised (every dependence is checked with the
    /// search and marked unexpected).
    pub exercised: Option<wpp_deps::filter::FilterReport>,
    /// `trace-blocks` mode: record the blocks as the paths they run along (the `trace-paths`
    /// probes: one event per acyclic path instead of one per block), which readers decode
    /// back to blocks (`wpp_trace::ProgramDb::paths_are_blocks`). On by default; off gives
    /// every block its probe, the oracle the decoded trace is checked against.
    pub elide: bool,
    /// The module is a shared library (`-shared`): it registers with the process's runtime
    /// and shares the executable's buffers (`wpp_abi`, *Shared libraries*). Every mode but
    /// `ewpp` and `ewpp-filter`.
    pub shared: bool,
    /// The file name of the module being built (`-o`), under which a process with several
    /// modules qualifies its clashing function names (`libq.so!helper`): `ppp` looks up
    /// interesting paths by that name first.
    pub module_name: Option<String>,
}

impl Options {
    /// Options for `mode` with no interesting paths.
    pub fn new(mode: Mode) -> Options {
        Options {
            mode,
            interesting: Default::default(),
            interesting_cfgs: Default::default(),
            ppp_bl_array_max: abi::BL_ARRAY_MAX,
            atomic_counters: None,
            exercised: None,
            elide: true,
            shared: false,
            module_name: None,
        }
    }
}

/// The interesting set PPP §5 uses: every path that ran in a `bl` profile, with its count.
pub fn interesting_from_profile(
    profile: &wpp_abi::profile::ProfileFile,
) -> std::collections::BTreeMap<String, std::collections::BTreeMap<u64, u64>> {
    profile.bl.functions.clone()
}

/// What to tell of [`Report::renumbered`] functions, if any (trial 35 H9: an old build's
/// profile was taken silently).
pub fn renumbered_warning(report: &Report) -> Option<String> {
    let names = &report.renumbered;
    let (first, more) = names.split_first()?;
    let others = match more.len() {
        0 => String::new(),
        n => format!(" and {n} more"),
    };
    Some(format!(
        "the --interesting profile numbered the paths of `{first}`{others} on another CFG (a \
         profile of another build): they take no interesting paths from it, and every path \
         of theirs that runs is counted as uninteresting; record a bl profile of this build"
    ))
}

/// The CFGs `profile` numbered its paths on, by function name ([`Options::interesting_cfgs`]).
pub fn interesting_cfgs(
    profile: &wpp_abi::profile::ProfileFile,
) -> std::collections::BTreeMap<String, wpp_paths::Cfg> {
    let cfgs = profile.program.cfgs.iter();
    cfgs.map(|c| (c.name.clone(), c.clone())).collect()
}

/// What an instrumentation run did.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Report {
    /// Functions given probes.
    pub functions: usize,
    /// Basic blocks in those functions.
    pub blocks: usize,
    /// Probe calls inserted.
    pub probes: usize,
    /// Bytes of the embedded program database.
    pub program_db_bytes: usize,
    /// Whether profile counters were incremented atomically (`bl`/`ppp`).
    pub atomic_counters: bool,
    /// Memory instructions given address probes (`trace-addr`).
    pub memory_instructions: usize,
    /// `ewpp`: why the `--exercised` report does not fit this module, which is then built as
    /// if no pair were exercised (configure's test programs, a library the filtering run did
    /// not load, other sources).
    pub foreign_report: Option<String>,
    /// `ppp`: why the `--interesting` profile looks like another program's (it names none of
    /// this module's functions but `main`), which leaves every path uninteresting.
    pub foreign_profile: Option<String>,
    /// `ppp`: the functions whose paths the `--interesting` profile numbered on another CFG
    /// (another build of them), which take no interesting paths from it.
    pub renumbered: Vec<String>,
}

/// Why `opts.interesting` seems another program's profile: it names none of `functions`
/// (under their module-qualified names either), or only `main` of several. A library's or an
/// executable's profile names the functions of the whole process, so a partial match is
/// normal.
fn foreign_profile(functions: &[Function], opts: &Options) -> Option<String> {
    let named = |f: &&Function| {
        let qualified = opts.module_name.as_ref().map(|m| format!("{m}!{}", f.name));
        qualified.is_some_and(|q| opts.interesting.contains_key(&q))
            || opts.interesting.contains_key(&f.name)
    };
    let found: Vec<&str> = functions
        .iter()
        .filter(named)
        .map(|f| f.name.as_str())
        .collect();
    let only_main = found == ["main"] && functions.len() > 1;
    (found.is_empty() || only_main).then(|| {
        format!(
            "the --interesting profile names {} of this module's {} functions (it has {} \
             functions of its own): is it another program's? The paths it does not name \
             are all uninteresting",
            found
                .first()
                .map_or("none".into(), |f| format!("only `{f}`")),
            functions.len(),
            opts.interesting.len()
        )
    })
}

/// Parses a bitcode file into `ctx`.
pub fn read_bitcode<'c>(ctx: &'c Context, path: &Path) -> Result<Module<'c>, Error> {
    let read_err = |message: String| Error::Read {
        path: path.display().to_string(),
        message,
    };
    let buf = MemoryBuffer::create_from_file(path).map_err(|e| read_err(e.to_string()))?;
    Module::parse_bitcode_from_buffer(&buf, ctx).map_err(|e| read_err(e.to_string()))
}

/// Instruments `IN` into `OUT` (bitcode to bitcode).
pub fn instrument_file(input: &Path, output: &Path, opts: &Options) -> Result<Report, Error> {
    let ctx = Context::create();
    let module = read_bitcode(&ctx, input)?;
    let report = instrument_module(&module, opts)?;
    if !module.write_bitcode_to_path(output) {
        return Err(Error::Write {
            path: output.display().to_string(),
        });
    }
    Ok(report)
}

/// How profiling code names its function to the runtime's hash table: a constant id in an
/// executable; in a shared library (`Options::shared`) the library's base, set when it
/// registers, plus the id (`wpp_abi`, *Shared libraries*).
#[derive(Clone, Copy)]
pub(crate) struct FunctionIds<'m> {
    base: Option<ir::Value<'m>>,
}

impl<'m> FunctionIds<'m> {
    fn new(m: Mod<'m>, shared: bool) -> Self {
        let i32t = m.int(32);
        let base = shared.then(|| {
            m.add_global(
                "__wpp_profile_base",
                i32t,
                m.const_int(i32t, 0),
                true,
                false,
                false,
            )
        });
        FunctionIds { base }
    }

    /// The process-wide id of function `fid`, computed before `b`'s position.
    pub(crate) fn id(self, m: Mod<'m>, b: &ir::Builder<'m>, fid: usize) -> ir::Value<'m> {
        let i32t = m.int(32);
        let local = m.const_int(i32t, fid as u64);
        match self.base {
            Some(g) => b.add(b.load(i32t, g), local),
            None => local,
        }
    }
}

/// `bl` mode: path registers as in `trace-paths`, ending paths counted in per-function arrays
/// (at most [`abi::BL_ARRAY_MAX`] paths) or the runtime's hash table; `main` hands the table
/// of arrays to the runtime.
#[allow(clippy::too_many_arguments)]
pub(crate) fn instrument_bl<'m>(
    m: Mod<'m>,
    targets: &[ir::Value<'m>],
    all_sites: &[blocks::Sites<'m>],
    all_paths: &[(
        paths::Model<'m>,
        paths::FunctionPaths,
        wpp_paths::Instrumentation,
    )],
    db_global: ir::Value<'m>,
    db_len: usize,
    atomic: bool,
    ids: FunctionIds<'m>,
) -> Result<usize, Error> {
    let i32t = m.int(32);
    let i64t = m.int(64);
    let ptr = m.ptr();
    let void = m.void();
    let hash_ty = m.fn_type(void, &[i32t, i64t]);
    let hash = m.declare(abi::SYM_BL_HASH, hash_ty);
    m.add_fn_attr(hash, "nounwind");
    let slot_ty = m.struct_type(&[ptr, i64t]);
    let mut slots = Vec::with_capacity(targets.len());
    let mut probes = 0;
    for (fid, sites) in all_sites.iter().enumerate() {
        let (model, fp, plan) = &all_paths[fid];
        let n = fp.bl.path_count();
        if n <= abi::BL_ARRAY_MAX {
            let arr_ty = m.array(i64t, n);
            let arr = m.add_global(
                &format!("__wpp_bl_counters.{fid}"),
                arr_ty,
                m.const_null(arr_ty),
                true,
                false,
                false,
            );
            slots.push(m.const_struct(&[arr, m.const_int(i64t, n)]));
            let record = |b: &ir::Builder<'m>, v: ir::Value<'m>| {
                let p = b.gep(arr_ty, arr, &[m.const_int(i64t, 0), v]);
                b.increment(i64t, p, atomic);
            };
            probes += paths::place(m, sites, model, fp, plan, &record);
        } else {
            slots.push(m.const_struct(&[m.const_null(ptr), m.const_int(i64t, n)]));
            let record = |b: &ir::Builder<'m>, v: ir::Value<'m>| {
                b.call(hash_ty, hash, &[ids.id(m, b, fid), v]);
            };
            probes += paths::place(m, sites, model, fp, plan, &record);
        }
    }
    let db = (db_global, db_len);
    hand_table_to_runtime(
        m,
        "__wpp_bl_table",
        slot_ty,
        &slots,
        (abi::SYM_BL_INIT, abi::SYM_BL_REGISTER),
        targets,
        all_sites,
        db,
        ids,
    );
    Ok(probes)
}

/// Each block's source line and file (an index into `files`, which grows) from its first
/// instruction with a debug location, and its inner lines (the distinct other lines of its
/// instructions' locations in that file, ascending: [`Function::block_inner_lines`]); all
/// empty when no block has a location (no `-g`).
fn block_locations(
    files: &mut Vec<String>,
    blocks: &[ir::Block<'_>],
) -> (Vec<u32>, Vec<u32>, Vec<Vec<u32>>) {
    let locations: Vec<Option<(String, u32)>> = blocks
        .iter()
        .map(|b| b.instructions().iter().find_map(|i| i.debug_location()))
        .collect();
    if locations.iter().all(Option::is_none) {
        return (Vec::new(), Vec::new(), Vec::new());
    }
    let mut lines = Vec::with_capacity(blocks.len());
    let mut indices = Vec::with_capacity(blocks.len());
    let mut inner = Vec::with_capacity(blocks.len());
    for (block, loc) in blocks.iter().zip(locations) {
        inner.push(match &loc {
            Some((file, line)) => inner_lines(block, file, *line),
            None => Vec::new(),
        });
        let (file, line) = loc.unwrap_or_default();
        let index = match files.iter().position(|f| *f == file) {
            Some(i) => i,
            None => {
                files.push(file);
                files.len() - 1
            }
        };
        lines.push(line);
        indices.push(index as u32);
    }
    if inner.iter().all(Vec::is_empty) {
        inner.clear();
    }
    (lines, indices, inner)
}

/// The distinct lines other than `first` (and 0) of `block`'s instructions whose location is
/// in `file`, ascending: code inlined from another file (a header) is left out.
fn inner_lines(block: &ir::Block<'_>, file: &str, first: u32) -> Vec<u32> {
    let mut out: Vec<u32> = Vec::new();
    for i in block.instructions() {
        let line = i.debug_line();
        if line == 0 || line == first || out.contains(&line) {
            continue;
        }
        if i.debug_location().is_some_and(|(f, _)| f == file) {
            out.push(line);
        }
    }
    out.sort_unstable();
    out
}

/// Per block, those of its inner lines that only instructions after its first call run, the
/// call that cuts its paths ([`paths::Model::first_call`]): they run only when that call
/// returns ([`Function::block_tail_lines`]). Empty when no block has any.
///
/// A block whose tail makes another call has none: if that call never returns (`exit`, a
/// successful `exec`), the path that started at the tail is never recorded, so the tail's runs
/// would be undercounted; its lines count the block's runs instead.
fn tail_lines(
    blocks: &[ir::Block<'_>],
    first_call: &[Option<ir::Value<'_>>],
    func: &Function,
) -> Vec<Vec<u32>> {
    let tails: Vec<Vec<u32>> = blocks
        .iter()
        .zip(first_call)
        .enumerate()
        .map(|(b, (block, call))| {
            let inner = func.block_inner_lines.get(b).map_or(&[][..], Vec::as_slice);
            let Some(call) = call.filter(|_| !inner.is_empty()) else {
                return Vec::new();
            };
            let instructions = block.instructions();
            let at = instructions.iter().position(|&i| i == call).unwrap_or(0);
            let (before, after) = instructions.split_at(at + 1);
            let calls = |i: &&ir::Value<'_>| {
                matches!(
                    i.opcode(),
                    ir::Opcode::LLVMCall | ir::Opcode::LLVMInvoke | ir::Opcode::LLVMCallBr
                ) && !i.calls_nothing_instrumented()
            };
            if after.iter().any(|i| calls(&i)) {
                return Vec::new();
            }
            let ran_before = |line: &u32| before.iter().any(|i| i.debug_line() == *line);
            inner
                .iter()
                .filter(|line| !ran_before(line) && after.iter().any(|i| i.debug_line() == **line))
                .copied()
                .collect()
        })
        .collect();
    if tails.iter().all(Vec::is_empty) {
        return Vec::new();
    }
    tails
}

/// Stores a profile's per-function slots as a constant global and, at the start of `main`, calls
/// the runtime's `init(table, functions, db, db_len)` with it; shared by `bl` and `ppp`. Programs
/// without a `main` get the table but no call, so they record nothing; a shared library
/// registers its table from a constructor instead ([`abi::SYM_BL_REGISTER`]).
#[allow(clippy::too_many_arguments)]
pub(crate) fn hand_table_to_runtime<'m>(
    m: Mod<'m>,
    name: &str,
    slot_ty: ir::Type<'m>,
    slots: &[ir::Value<'m>],
    (init_symbol, register_symbol): (&str, &str),
    targets: &[ir::Value<'m>],
    all_sites: &[blocks::Sites<'m>],
    (db_global, db_len): (ir::Value<'m>, usize),
    ids: FunctionIds<'m>,
) {
    let (i32t, i64t, ptr) = (m.int(32), m.int(64), m.ptr());
    let table_ty = m.array(slot_ty, slots.len() as u64);
    let table = m.add_global(
        name,
        table_ty,
        m.const_array(slot_ty, slots),
        true,
        true,
        false,
    );
    let args = [
        table,
        m.const_int(i32t, targets.len() as u64),
        db_global,
        m.const_int(i64t, db_len as u64),
    ];
    if let Some(base) = ids.base {
        // A library: from a constructor that runs before its others, with its base.
        let ty = m.fn_type(m.void(), &[ptr, i32t, ptr, i64t, ptr]);
        let register = m.declare(register_symbol, ty);
        m.add_fn_attr(register, "nounwind");
        let f = m.add_internal_function("__wpp_profile_register", m.fn_type(m.void(), &[]));
        let b = m.builder();
        b.at_end(m.append_block(f, "entry"));
        b.call(ty, register, &[args[0], args[1], args[2], args[3], base]);
        b.ret_void();
        m.add_to_init_list(f, 0, false);
        // And from its last destructor (`dlclose`), before its tables are unmapped.
        let ty = m.fn_type(m.void(), &[ptr]);
        let unregister = m.declare(abi::SYM_PROFILE_UNREGISTER, ty);
        m.add_fn_attr(unregister, "nounwind");
        let f = m.add_internal_function("__wpp_profile_unregister", m.fn_type(m.void(), &[]));
        b.at_end(m.append_block(f, "entry"));
        b.call(ty, unregister, &[base]);
        b.ret_void();
        m.add_to_init_list(f, 0, true);
        return;
    }
    let init_ty = m.fn_type(m.void(), &[ptr, i32t, ptr, i64t]);
    let init = m.declare(init_symbol, init_ty);
    m.add_fn_attr(init, "nounwind");
    if let Some(main) = targets.iter().position(|f| f.name() == "main") {
        let b = m.builder();
        b.before(all_sites[main].start[0]);
        b.call(init_ty, init, &args);
    }
}

/// The CFG and path numbering of every function `instrument_module` would instrument, in
/// function-id order — what a path trace's ids mean. Call it on the *uninstrumented* module.
pub fn function_paths(module: &Module<'_>) -> Result<Vec<paths::FunctionPaths>, Error> {
    let m = Mod::new(module);
    let mut out = Vec::new();
    for f in m.functions().into_iter().filter(|&f| instrumentable(m, f)) {
        let sites = blocks::collect_sites(m, f)?;
        let model = paths::model(f, &sites)?;
        out.push(paths::number(&model.cfg)?.0);
    }
    Ok(out)
}

/// Whether a module refers to the C++ runtime (so it must be linked with `clang++`).
pub fn module_uses_cxx(module: &Module<'_>) -> bool {
    Mod::new(module).functions().into_iter().any(|f| {
        let n = f.name();
        f.is_declaration()
            && (n.starts_with("_Z") || n.starts_with("__cxa_") || n == "__gxx_personality_v0")
    })
}

/// Functions whose presence (declared or defined) in a linked module means the program may run
/// threads: POSIX and C11 threads, and the OpenMP runtimes' fork entry points (LLVM's
/// `libomp`, GCC's `libgomp`). libc++'s `std::thread` inlines down to `pthread_create`.
const THREAD_STARTERS: [&str; 6] = [
    "pthread_create",
    "thrd_create",
    "__kmpc_fork_call",
    "__kmpc_fork_teams",
    "GOMP_parallel",
    "GOMP_parallel_start",
];

/// libstdc++'s out-of-line `std::thread::_M_start_thread` (mangled prefix; it calls
/// `pthread_create` inside the shared library, so the module never sees that call).
const LIBSTDCXX_THREAD_START: &str = "_ZNSt6thread15_M_start_thread";

/// Whether the program may run several threads, judged from the functions a linked module
/// refers to (`pthread_create`, `thrd_create`, libstdc++'s `std::thread` start, the OpenMP
/// fork calls of `libomp` and `libgomp`). Decides whether `bl` and `ppp` counters are
/// incremented atomically: lost updates make a threaded profile inexact, while the atomic
/// increment (a `lock xadd`, ~20 cycles) would tax every single-threaded program for nothing. Threads started where the module cannot see it (a `dlsym`'d
/// `pthread_create`, a library that spawns threads calling back into the program) are missed;
/// set [`Options::atomic_counters`] then.
pub fn module_may_run_threads(module: &Module<'_>) -> bool {
    Mod::new(module).functions().into_iter().any(|f| {
        let n = f.name();
        THREAD_STARTERS.contains(&n.as_str()) || n.starts_with(LIBSTDCXX_THREAD_START)
    })
}

/// Whether a function gets probes.
fn instrumentable(m: Mod<'_>, f: ir::Value<'_>) -> bool {
    !f.is_declaration()
        && !f.is_available_externally()
        && !f.name().starts_with("__wpp_")
        && !m.fn_has_attr(f, "naked")
}

/// Function attributes that stop being true once a function records events: its probes write
/// thread-local buffers and may call the runtime, which allocates, locks and writes files.
/// Left in place, the optimizer that compiles the instrumented module would treat calls of,
/// say, a `memory(read)` function (inferred before instrumentation) as removable, hoistable or
/// mergeable, and the trace would lose or merge their events — the outputs stay right but the
/// `trace-paths` and `trace-blocks` runs no longer record the same calls.
const PURITY_ATTRIBUTES: [&str; 6] = [
    "memory",
    "readnone",
    "readonly",
    "nosync",
    "nofree",
    "speculatable",
];

/// Drops [`PURITY_ATTRIBUTES`] from every instrumented function and from every call site that
/// may run instrumented code.
fn drop_purity(m: Mod<'_>, targets: &[ir::Value<'_>]) {
    for &f in targets {
        for a in PURITY_ATTRIBUTES {
            m.remove_fn_attr(f, a);
        }
    }
    for f in m.functions().into_iter().filter(|f| !f.is_declaration()) {
        for b in f.blocks() {
            for i in b.instructions() {
                let call = matches!(
                    i.opcode(),
                    ir::Opcode::LLVMCall | ir::Opcode::LLVMInvoke | ir::Opcode::LLVMCallBr
                );
                if call && !i.calls_nothing_instrumented() {
                    for a in PURITY_ATTRIBUTES {
                        m.remove_call_attr(i, a);
                    }
                }
            }
        }
    }
}

/// `trace-addr`, `ewpp-filter`: embeds the memory database as [`abi::SYM_MEMORY_DB`]; returns
/// it and its length. An executable's is hidden, with its length beside it
/// ([`abi::SYM_MEMORY_DB_LEN`]), so that its runtime finds it when a library registers; a
/// library's is its own (internal).
fn embed_memory_db<'m>(
    m: Mod<'m>,
    mdb: &wpp_deps::MemoryDb,
    shared: bool,
) -> Result<(ir::Value<'m>, u64), Error> {
    let bytes = postcard::to_allocvec(mdb).map_err(|e| Error::Encode(e.to_string()))?;
    let (i64t, len) = (m.int(64), bytes.len() as u64);
    let arr = m.array(m.int(8), len);
    let global = m.add_global(
        abi::SYM_MEMORY_DB,
        arr,
        m.const_bytes(&bytes),
        shared,
        true,
        false,
    );
    if !shared {
        m.set_hidden(global);
        let len_global = m.add_global(
            abi::SYM_MEMORY_DB_LEN,
            i64t,
            m.const_int(i64t, len),
            false,
            true,
            false,
        );
        m.set_hidden(len_global);
    }
    Ok((global, len))
}

/// `ewpp`: the memory instructions and the filtering run's report, if it names them; else no
/// pair is exercised, and the second value says why.
fn ewpp_tables(
    mdb: &wpp_deps::MemoryDb,
    exercised: Option<&wpp_deps::filter::FilterReport>,
) -> (abi::EwppTables, Option<String>) {
    let crc = wpp_deps::filter::program_crc(mdb);
    let foreign = exercised.and_then(|r| match r.modules.len() {
        _ if r.module_ranges().iter().any(|m| m.crc == crc) => None,
        0 => Some(
            "the --exercised report is of another program: its memory instructions differ \
             from this build's (build the filtering run from the same sources with the same \
             flags, in mode ewpp-filter)"
                .to_string(),
        ),
        n => Some(format!(
            "the --exercised report names the {n} modules of its filtering run's process, \
             and not this one (built from other sources or flags, or a library that run did \
             not load before its first access)"
        )),
    });
    let exercised = match exercised {
        Some(r) if foreign.is_none() => r.clone(),
        _ => wpp_deps::filter::FilterReport {
            program_crc: crc,
            ..Default::default()
        },
    };
    let memory = wpp_deps::MemoryDb {
        program: ProgramDb::default(),
        ..mdb.clone()
    };
    let tables = abi::EwppTables {
        memory,
        exercised,
        crc,
    };
    (tables, foreign)
}

/// Names functions as their languages' backtraces do: Rust functions by their paths without
/// the hash (`hello::main`, `<alloc::vec::Vec<T> as core::ops::drop::Drop>::drop`), C++ ones by
/// their qualified names without the parameter list (`ns::g`, `Point::norm`). Where short names
/// collide (Rust instances whose paths do not show the types, C++ overloads, a C function of the
/// same name) each keeps its full name: the path with its hash (`…::h75ec1b21ea22c99e`), the
/// signature (`f(int)`, `f(double)`). Every name must still pick one function (`--function
/// NAME`), so where even full names collide (a constructor's complete- and base-object variants
/// are both `A::A()`) a constructor's or destructor's variant is named (`A::~A() [deleting]`,
/// `A::~A() [base]`), the translation unit of a `static` function's copies ([`local_copies`]:
/// `sq (util.c)`, `sq (main.c)`), and where that is not enough the linkage names stay. Other
/// names (C) are left as they are.
fn demangle_names(functions: &mut [Function], copies: &[Option<String>]) {
    let demangled: Vec<Option<(String, String)>> = functions
        .iter()
        .zip(copies)
        .map(|(f, unit)| {
            let name = if unit.is_some() {
                without_copy_suffix(&f.name)
            } else {
                &f.name
            };
            let plain = || (unit.is_some()).then(|| (name.to_owned(), name.to_owned()));
            rust_path(name)
                .or_else(|| wpp_trace::program::cpp_names(name))
                .or_else(plain)
        })
        .collect();
    let shorts = uses(
        functions
            .iter()
            .zip(&demangled)
            .map(|(f, d)| d.as_ref().map_or(&f.name, |(short, _)| short)),
    );
    let chosen: Vec<String> = functions
        .iter()
        .zip(&demangled)
        .map(|(f, d)| match d {
            Some((short, _)) if shorts[short.as_str()] == 1 => short.clone(),
            Some((_, full)) => full.clone(),
            None => f.name.clone(),
        })
        .collect();
    let names = uses(chosen.iter());
    let chosen: Vec<String> = functions
        .iter()
        .zip(&chosen)
        .zip(copies)
        .map(
            |((f, name), unit)| match (names[name.as_str()], unit, structor_variant(&f.name)) {
                (2.., Some(unit), _) => format!("{name} ({unit})"),
                (2.., None, Some(variant)) => format!("{name} [{variant}]"),
                _ => name.clone(),
            },
        )
        .collect();
    let names = uses(chosen.iter());
    for (f, name) in functions.iter_mut().zip(&chosen) {
        if names[name.as_str()] == 1 {
            f.name.clone_from(name);
        }
    }
}

/// Per function, the translation unit of a `static` function that other units also define
/// under its name: `llvm-link` keeps one `sq` and renames the others `sq.17`, so each copy of
/// a header's `static inline sq` is named after the name without `.17` and its unit, `sq
/// (main.c)`. `units` holds each function's unit where it is local to one.
fn local_copies(functions: &[Function], units: Vec<Option<String>>) -> Vec<Option<String>> {
    let mut by_name: std::collections::HashMap<&str, Vec<usize>> = Default::default();
    for (i, f) in functions.iter().enumerate() {
        if units[i].is_some() {
            by_name
                .entry(without_copy_suffix(&f.name))
                .or_default()
                .push(i);
        }
    }
    let mut copies = vec![None; functions.len()];
    for group in by_name.values().filter(|g| g.len() > 1) {
        let distinct: std::collections::HashSet<_> = group.iter().map(|&i| &units[i]).collect();
        if distinct.len() == group.len() {
            for &i in group {
                copies[i].clone_from(&units[i]);
            }
        }
    }
    copies
}

/// `name` without the `.N` that `llvm-link` appends to a renamed local function.
fn without_copy_suffix(name: &str) -> &str {
    match name.rsplit_once('.') {
        Some((base, n))
            if !base.is_empty() && !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) =>
        {
            base
        }
        _ => name,
    }
}

/// The Itanium C++ ABI variant a constructor's or destructor's linkage name is: `C1` complete
/// object, `C2` base object, `C3` allocating; `D0` deleting, `D1` complete object, `D2` base
/// object. The code ends the nested name, so it is followed by `E`, or by `I` for a
/// constructor template's arguments; the first such code is the function's own.
fn structor_variant(linkage: &str) -> Option<&'static str> {
    const VARIANTS: [(&str, &str); 6] = [
        ("C1", "complete"),
        ("C2", "base"),
        ("C3", "allocating"),
        ("D0", "deleting"),
        ("D1", "complete"),
        ("D2", "base"),
    ];
    let at = |code: &str| {
        ["E", "I"]
            .iter()
            .filter_map(|end| linkage.find(&format!("{code}{end}")))
            .min()
    };
    linkage.starts_with("_Z").then_some(())?;
    VARIANTS
        .iter()
        .filter_map(|&(code, name)| Some((at(code)?, name)))
        .min()
        .map(|(_, name)| name)
}

/// How many times each name occurs.
fn uses<'a>(names: impl Iterator<Item = &'a String>) -> std::collections::HashMap<&'a str, usize> {
    let mut uses = std::collections::HashMap::new();
    for name in names {
        *uses.entry(name.as_str()).or_insert(0) += 1;
    }
    uses
}

/// The path of a Rust symbol, without and with its hash: a v0 name (`_R…`), or a legacy one
/// whose last segment is rustc's hash (`…17h0123456789abcdefE`), which C++ names never have.
fn rust_path(name: &str) -> Option<(String, String)> {
    let d = rustc_demangle::try_demangle(name).ok()?;
    let full = d.to_string();
    let last = full.rsplit("::").next().unwrap_or("");
    let hashed = last.len() == 17
        && last.starts_with('h')
        && last[1..].chars().all(|c| c.is_ascii_hexdigit());
    (name.starts_with("_R") || hashed).then(|| (format!("{d:#}"), full))
}

/// Instruments a module in place and verifies it.
pub fn instrument_module(module: &Module<'_>, opts: &Options) -> Result<Report, Error> {
    let m = Mod::new(module);
    let atomic = matches!(opts.mode, Mode::Bl | Mode::Ppp)
        && opts
            .atomic_counters
            .unwrap_or_else(|| opts.shared || module_may_run_threads(module));
    for sym in [abi::SYM_PROGRAM_DB, abi::SYM_BUF] {
        if m.global(sym).is_some() {
            return Err(Error::AlreadyInstrumented { symbol: sym });
        }
    }

    let targets: Vec<_> = m
        .functions()
        .into_iter()
        .filter(|&f| instrumentable(m, f))
        .collect();
    let addresses = matches!(opts.mode, Mode::TraceAddr | Mode::Ewpp | Mode::EwppFilter);
    // The address trace orders the accesses of all threads; the eWPP modes classify and
    // check them in one thread's order.
    let one_thread = matches!(opts.mode, Mode::Ewpp | Mode::EwppFilter);
    if one_thread && module_may_run_threads(module) {
        return Err(Error::ProgramUnsupported(format!(
            "{} records single-threaded programs only, and this one refers to a \
             thread-starting function (pthread_create, std::thread, OpenMP, …): its checks \
             follow one thread's order of accesses; `--mode trace-addr` records every thread, \
             cross-thread dependences included",
            opts.mode.name()
        )));
    }
    drop_purity(m, &targets);
    let mut memory_sites = memory::Sites::new();
    // Collect every site before inserting anything.
    let mut all_sites = Vec::with_capacity(targets.len());
    let mut all_paths = Vec::new();
    let blocks_as_paths = opts.elide && opts.mode == Mode::TraceBlocks;
    let path_probes = blocks_as_paths || opts.mode == Mode::TracePaths;
    let mut db = ProgramDb::default();
    let mut report = Report {
        atomic_counters: atomic,
        ..Report::default()
    };
    // Without `-g` a function's file is the module's source, when the module comes from one
    // (a module `llvm-link` merged names none of its sources).
    let module_file = Some(m.source_file_name()).filter(|n| !n.is_empty() && n != "llvm-link");
    let mut local_units = Vec::with_capacity(targets.len());
    for (fid, &f) in targets.iter().enumerate() {
        local_units.push(f.is_local().then(|| f.unit_file()).flatten());
        let sites = blocks::collect_sites(m, f)?;
        if addresses {
            memory_sites.collect(m, fid as u32, &sites.blocks);
        }
        let (file, line) = match f.subprogram_location() {
            Some((file, line)) => (
                (!file.is_empty()).then_some(file),
                (line > 0).then_some(line),
            ),
            None => (None, None),
        };
        let (block_lines, block_files, block_inner_lines) =
            block_locations(&mut db.files, &sites.blocks);
        db.functions.push(Function {
            name: f.name(),
            file: file.or_else(|| module_file.clone()),
            line,
            block_lines,
            block_files,
            block_inner_lines,
            ..Function::default()
        });
        report.blocks += sites.blocks.len();
        if path_probes || matches!(opts.mode, Mode::Bl | Mode::Ppp) {
            let model = paths::model(f, &sites)?;
            let func = db.functions.last_mut().expect("pushed above");
            func.block_tail_lines = tail_lines(&sites.blocks, &model.first_call, func);
            let (fp, plan) = paths::number(&model.cfg)?;
            all_paths.push((model, fp, plan));
        }
        all_sites.push(sites);
    }
    let copies = local_copies(&db.functions, local_units);
    demangle_names(&mut db.functions, &copies);
    db.paths_are_blocks = blocks_as_paths;
    // CFGs and PPP's interesting paths are found by the function's (demangled) name.
    for ((_, fp, _), f) in all_paths.iter_mut().zip(&db.functions) {
        fp.cfg.name.clone_from(&f.name);
    }
    let cfgs = all_paths.iter().map(|(_, fp, _)| fp.cfg.clone()).collect();
    if opts.mode == Mode::Ppp {
        report.foreign_profile = foreign_profile(&db.functions, opts);
        report.renumbered = all_paths
            .iter()
            .filter_map(|(_, fp, _)| {
                let (key, _) = ppp::interesting_of(fp, opts)?;
                ppp::numbered_elsewhere(fp, &key, opts).then(|| fp.cfg.name.clone())
            })
            .collect();
    }
    let memory_db = addresses.then(|| wpp_deps::MemoryDb {
        version: wpp_deps::memdb::MEMORY_DB_VERSION,
        program: db.clone(),
        instructions: std::mem::take(&mut memory_sites.instructions),
        files: std::mem::take(&mut memory_sites.files),
    });
    let ewpp = match (&memory_db, opts.mode) {
        (Some(mdb), Mode::Ewpp) => {
            let (tables, foreign) = ewpp_tables(mdb, opts.exercised.as_ref());
            report.foreign_report = foreign;
            Some(tables)
        }
        _ => None,
    };
    let embedded = EmbeddedProgram {
        version: abi::EMBEDDED_VERSION,
        mode: opts.mode,
        program: db,
        cfgs,
        ewpp,
    };
    let bytes = abi::embedded_bytes(&embedded).map_err(|e| Error::Encode(e.to_string()))?;
    report.program_db_bytes = bytes.len();
    let i8t = m.int(8);
    let i64t = m.int(64);
    let arr = m.array(i8t, bytes.len() as u64);
    // A library's database is its own: only the executable's is found by name.
    let db_global = m.add_global(
        abi::SYM_PROGRAM_DB,
        arr,
        m.const_bytes(&bytes),
        opts.shared,
        true,
        false,
    );
    m.add_global(
        abi::SYM_PROGRAM_DB_LEN,
        i64t,
        m.const_int(i64t, bytes.len() as u64),
        opts.shared,
        true,
        false,
    );
    if matches!(opts.mode, Mode::Ppp | Mode::Bl) {
        let (t, s, p, len) = (&targets[..], &all_sites[..], &all_paths[..], bytes.len());
        let ids = FunctionIds::new(m, opts.shared);
        report.probes += match opts.mode {
            Mode::Ppp => {
                let renumbered = &report.renumbered;
                ppp::instrument(m, t, s, p, opts, (db_global, len), atomic, ids, renumbered)?
            }
            _ => instrument_bl(m, t, s, p, db_global, len, atomic, ids)?,
        };
        report.functions = targets.len();
        module.verify().map_err(|e| Error::Verify(e.to_string()))?;
        return Ok(report);
    }
    let address_flush = match opts.mode {
        Mode::TraceAddr => Some(abi::SYM_AT_FLUSH),
        Mode::EwppFilter => Some(abi::SYM_FILTER_FLUSH),
        _ => None,
    };
    // The address buffer's flushes pass the memory database; a library registers it to get
    // its memory base, whichever buffer its accesses go to.
    let embedded_memory = match &memory_db {
        Some(mdb) if address_flush.is_some() || opts.shared => {
            Some(embed_memory_db(m, mdb, opts.shared)?)
        }
        _ => None,
    };
    let registration = opts
        .shared
        .then(|| helpers::register(m, db_global, bytes.len() as u64, embedded_memory));
    let memory_base = registration.as_ref().and_then(|r| r.memory_base);
    if let (Some(db), Some(flush)) = (embedded_memory, address_flush) {
        let h = memory::Helper::for_address_trace(m, flush, db, memory_base);
        report.probes += memory_sites.instrument(m, &h);
    }
    report.memory_instructions = memory_db.as_ref().map_or(0, |d| d.instructions.len());
    let base = registration.map(|r| r.base);
    let h = helpers::Helpers::build(m, db_global, bytes.len() as u64, base);
    for (fid, (&f, sites)) in targets.iter().zip(&all_sites).enumerate() {
        match opts.mode {
            _ if path_probes => {
                let (model, fp, plan) = &all_paths[fid];
                let (saved, n) = blocks::instrument_entry(m, &h, fid as u32, sites, false);
                let record = |b: &ir::Builder<'_>, v: ir::Value<'_>| {
                    b.call(h.record_ty, h.record, &[v]);
                };
                let r = paths::place(m, sites, model, fp, plan, &record);
                let e = blocks::instrument_exits(m, &h, f, saved, sites, false);
                report.probes += n + r + e;
            }
            // The filtering run needs the accesses only.
            Mode::EwppFilter => {}
            mode => {
                let again = mode == Mode::Ewpp;
                report.probes += blocks::instrument(m, &h, f, fid as u32, sites, again)
            }
        }
    }
    if opts.mode == Mode::Ewpp {
        // After the block probes: an access's probe goes right before its instruction, so
        // after its block's event.
        let h = memory::Helper::for_event_buffer(m, db_global, bytes.len() as u64, memory_base);
        report.probes += memory_sites.instrument(m, &h);
    }
    report.functions = targets.len();
    module.verify().map_err(|e| Error::Verify(e.to_string()))?;
    Ok(report)
}
