//! The contract between instrumented code, the runtime and the tools: symbol names, the
//! per-thread buffer layout, the encoding of events in it, the embedded program database and
//! the run-time profile file ([`profile`]). `wpp-instrument` generates code against these
//! constants and `wpp-rt` implements them, so they are the single source of truth for both
//! sides; the tools read what the runtime writes through the same types.
//!
//! A crate of its own so that the instrumenter and the `wpp` command need not link the runtime,
//! whose private global allocator (`wpp_rt::heap`) belongs in instrumented programs only.
//!
//! # Per-thread trace buffer
//!
//! Every thread has three `thread_local` globals (one set per process, see *Shared libraries*):
//!
//! | global | type | initial value | meaning |
//! |---|---|---|---|
//! | `__wpp_buf` | `ptr` | null | this thread's buffer of [`BUF_CAP`] `i64` event words, owned by the runtime |
//! | `__wpp_idx` | `i32` | `BUF_CAP` | number of words in the buffer |
//! | `__wpp_depth` | `i32` | 0 | this thread's shadow-stack depth (open frames) |
//!
//! Appending an event is inline code: load `__wpp_idx`; if it is `>= BUF_CAP`, call
//! [`SYM_FLUSH`]`(&__wpp_buf, &__wpp_idx, &__wpp_depth, db, db_len)`, which hands the full
//! buffer to the output, stores the address of an empty one in `__wpp_buf` and sets
//! `__wpp_idx = 0`; then store the word at `__wpp_buf[__wpp_idx]` and increment the index.
//! Swapping buffers instead of copying them keeps the program thread's cost per buffer
//! independent of its size. Because the index *starts* full, a thread's first event calls the
//! runtime, which is where a thread registers itself (and where the runtime initializes): no
//! per-event check for "is this thread known" is needed. The runtime always leaves `__wpp_buf`
//! pointing to [`BUF_CAP`] writable words (a shared, never-read area for threads that are not
//! recorded).
//!
//! # Shared libraries (issue 12, item 2)
//!
//! There is one runtime and one buffer per thread per process, so the events of the executable
//! and of every instrumented shared library interleave in the order they ran:
//!
//! * An instrumented **executable** *defines* the thread-locals with external linkage and
//!   the `local-exec` model (its probes cost what they always did) and exports them and the
//!   runtime's `__wpp_*` ABI dynamically, so libraries bind to its definitions. The runtime
//!   finds the executable's module through a weak reference to its [`SYM_PROGRAM_DB`], and it
//!   keeps function ids `0..n`.
//! * An instrumented **shared library** *declares* them (`initial-exec`), keeps its
//!   [`SYM_PROGRAM_DB`] internal, registers from a constructor that runs before its others
//!   ([`SYM_REGISTER`]; [`SYM_REGISTER_MEMORY`] in the modes that trace memory), and adds its
//!   base to every `Enter` word and its memory base to every memory-instruction id (in
//!   `ewpp`, the tagged word of an access gets the memory base shifted above the tag); a
//!   library the runtime refuses ([`REFUSED_BASE`]) appends nothing. It needs
//!   `libwpp_rt.so`, which defines the thread-locals too (an instrumented executable's
//!   definitions interpose them) and is the runtime of a process whose executable is not
//!   instrumented.
//!
//! # Event words
//!
//! One `u64` per event: the low [`TAG_BITS`] bits are a tag, the rest the payload.
//!
//! | tag | event | payload |
//! |---|---|---|
//! | [`TAG_ENTER`] = 0 | `Enter(f)` | function id |
//! | [`TAG_LEAVE`] = 1 | `Leave` | 0 |
//! | [`TAG_BLOCK`] = 2 | `Block(b)` | block id, local to the function |
//! | [`TAG_PATH`] = 3 | `Path(p)` | path id (< 2^61), local to the function |
//!
//! These are exactly the values the binary trace format (`wpp_trace::file::binary`) stores as
//! one varint per event, so the raw sink encodes a buffer with one `write_varint` per word.
//!
//! # Shadow-stack depth
//!
//! `Enter` increments `__wpp_depth` and returns the new depth, which the function keeps in an
//! SSA value (`saved`); `Leave` decrements it. Where control re-enters a function without a
//! normal return from its callees — after a `returns_twice` call (`setjmp`) and at the top of a
//! landing pad — the code compares `__wpp_depth` with `saved` and, when they differ, calls
//! [`SYM_UNWIND`]`(saved)`, which appends one `Leave` per frame that was skipped. This gives exact
//! `Leave` events for frames abandoned by `longjmp` and by C++ exceptions.
//!
//! # Address trace buffer
//!
//! In `trace-addr` mode every instrumented module also has `__wpp_abuf` (`ptr`) and
//! `__wpp_aidx` (`i32`, initially [`AT_BUF_CAP`]), thread-local, one pair per thread per
//! process as the event buffer's (*Shared libraries*), and [`SYM_MEMORY_DB`], the
//! postcard-encoded `wpp_deps::MemoryDb` (every load, store and modelled library write, by
//! id). A library numbers its instructions from 0 too; it registers them with
//! [`SYM_REGISTER_MEMORY`], and its probes add its memory base to each id (and append
//! nothing when refused), so ids are unique per process and the executable's stay `0..n`
//! (the runtime finds its database through a weak reference to the hidden [`SYM_MEMORY_DB`]).
//! Each executed access appends four words — `id`, address, size and its *sequence number*,
//! taken from the process-wide counter [`SYM_ASEQ`] with one `atomicrmw add` — with
//! the same inline full-check as event words; a full buffer calls
//! [`SYM_AT_FLUSH`]`(&__wpp_abuf, &__wpp_aidx, memory_db, memory_db_len)`, which writes it as
//! one chunk of the address-trace file (`wpp_deps::at`). Each thread has its own buffer; the
//! sequence numbers put the accesses of all threads into one order (the order of the
//! counter's increments), so a reader merges the threads' chunks back into it. A plain access
//! takes its number before any synchronization that follows it and after any that precedes
//! it, so a store another thread's load sees has the smaller number; only two instrumented
//! *atomic* accesses that synchronize with each other may be numbered against their order
//! (each is numbered just after it runs). The address trace is a stream of its own beside
//! the event stream, so event words, the block trace and every reader of it are unchanged.
//!
//! # Accesses in the event buffer (`ewpp`)
//!
//! In `ewpp` mode the instrumented code appends each memory access to the *event* buffer, in
//! the order it runs among the events, as three words: `id << TAG_BITS | TAG_ACCESS`
//! ([`TAG_ACCESS`] = 4, `id` the memory instruction), the address and the size; the full-check
//! leaves room for all three, so a buffer never splits an access. The runtime's writer
//! replaces each by the control flow of its dependence checks (`wpp_deps::ecf::Collector`)
//! before the words reach the trace, which is a plain block trace: the eCF.
//!
//! # Program database
//!
//! The module also defines [`SYM_PROGRAM_DB`], a constant byte array holding the postcard
//! encoding of [`EmbeddedProgram`], and [`SYM_PROGRAM_DB_LEN`], its length as `i64`.

#![deny(missing_docs)]

pub mod profile;

/// Capacity of a thread's trace buffer, in event words (128 KiB, allocated by the runtime).
pub const BUF_CAP: u32 = 16384;
/// Bits of an event word used by the tag.
pub const TAG_BITS: u32 = 3;
/// Tag of `Enter(f)`.
pub const TAG_ENTER: u64 = 0;
/// Tag of `Block(b)`.
pub const TAG_BLOCK: u64 = 2;
/// Tag of `Leave`.
pub const TAG_LEAVE: u64 = 1;
/// Tag of `Path(p)`.
pub const TAG_PATH: u64 = 3;

/// `void __wpp_rt_flush_v2(uint64_t **buf, uint32_t *idx, uint32_t *depth, const uint8_t *db,
/// uint64_t db_len)`. The program database is passed on every call (the call is rare) so the
/// runtime library has no undefined symbols and initializes itself on the first call. The
/// suffix is the buffer ABI's version (v2: `__wpp_buf` is a pointer the runtime swaps), so a
/// module instrumented for another ABI fails to link instead of corrupting memory.
pub const SYM_FLUSH: &str = "__wpp_rt_flush_v2";
/// The libc functions the runtime defines in the executable, so that a recording ends before
/// the process image does (`_exit` skips `atexit`, `exec` replaces the image), and so that the
/// program's signal handlers record into a buffer of their own (`sigaction`, `signal`; see
/// `wpp-rt`).
/// Besides the `__wpp_*` ABI, these are the only symbols the packaged runtime exports.
pub const INTERPOSED: &[&str] = &[
    "_exit",
    "_Exit",
    "execve",
    "execv",
    "execvp",
    "execvpe",
    "fexecve",
    "execl",
    "execlp",
    "execle",
    "sigaction",
    "signal",
];
/// `void __wpp_rt_unwind(uint32_t saved_depth)`.
pub const SYM_UNWIND: &str = "__wpp_rt_unwind";
/// `void __wpp_rt_at_flush_v1(uint64_t **abuf, uint32_t *aidx, const uint8_t *memory_db,
/// uint64_t memory_db_len)`: writes the calling thread's address-trace buffer (`trace-addr`).
pub const SYM_AT_FLUSH: &str = "__wpp_rt_at_flush_v1";
/// `void __wpp_rt_filter_flush_v1(…)`, the arguments of [`SYM_AT_FLUSH`]: classifies the
/// calling thread's address buffer (`ewpp-filter`).
pub const SYM_FILTER_FLUSH: &str = "__wpp_rt_filter_flush_v1";
/// Words of one access in the address-trace buffer: id, address, size, sequence number.
pub const AT_RECORD_WORDS: u32 = 4;
/// Capacity of a thread's address-trace buffer, in words.
pub const AT_BUF_CAP: u32 = AT_RECORD_WORDS * 8192;
/// `uint64_t __wpp_aseq`, defined by the runtime: the next access's sequence number, shared by
/// all threads (`trace-addr`, `ewpp-filter`).
pub const SYM_ASEQ: &str = "__wpp_aseq";
/// Thread-local address-trace buffer address global (`trace-addr`).
pub const SYM_ABUF: &str = "__wpp_abuf";
/// Thread-local address-trace index global (`trace-addr`).
pub const SYM_AIDX: &str = "__wpp_aidx";
/// `const uint8_t __wpp_memory_db[]` (`trace-addr`): hidden in an executable (its runtime
/// finds it by name when a library registers), internal in a library.
pub const SYM_MEMORY_DB: &str = "__wpp_memory_db";
/// `const uint64_t __wpp_memory_db_len` (`trace-addr`), beside [`SYM_MEMORY_DB`].
pub const SYM_MEMORY_DB_LEN: &str = "__wpp_memory_db_len";
/// `const uint8_t __wpp_program_db[]`.
pub const SYM_PROGRAM_DB: &str = "__wpp_program_db";
/// `const uint64_t __wpp_program_db_len`.
pub const SYM_PROGRAM_DB_LEN: &str = "__wpp_program_db_len";
/// Thread-local buffer address global (see *Shared libraries* for who defines it).
pub const SYM_BUF: &str = "__wpp_buf";
/// Thread-local index global.
pub const SYM_IDX: &str = "__wpp_idx";
/// Thread-local depth global.
pub const SYM_DEPTH: &str = "__wpp_depth";
/// `void __wpp_rt_register_v1(const uint8_t *db, uint64_t db_len, uint64_t *base)`: called by
/// an instrumented shared library's first constructor; stores the module's base as an `Enter`
/// word offset (`base << TAG_BITS`) in `*base`, or [`REFUSED_BASE`].
pub const SYM_REGISTER: &str = "__wpp_rt_register_v1";
/// `void __wpp_rt_register_memory_v1(const uint8_t *db, uint64_t db_len, uint64_t *base,
/// const uint8_t *memory_db, uint64_t memory_db_len, uint64_t *memory_base)`: what
/// [`SYM_REGISTER`] does, for a `trace-addr` library, which also registers its memory
/// instructions: stores its memory base (the process-wide id of its instruction 0) in
/// `*memory_base`, or [`REFUSED_BASE`] (then `*base` is too).
pub const SYM_REGISTER_MEMORY: &str = "__wpp_rt_register_memory_v1";
/// `void __wpp_rt_unregister_v1(uint64_t *base)`: called by its last destructor (`dlclose`).
pub const SYM_UNREGISTER: &str = "__wpp_rt_unregister_v1";
/// The base of a shared library the runtime does not record: its probes append nothing.
pub const REFUSED_BASE: u64 = u64::MAX;

/// Tag of an access record's first word in the event buffer (`ewpp`; see the module docs).
pub const TAG_ACCESS: u64 = 4;

/// The event word of `Enter(f)`.
#[inline]
pub const fn enter_word(f: u32) -> u64 {
    ((f as u64) << TAG_BITS) | TAG_ENTER
}

/// The event word of `Block(b)`.
#[inline]
pub const fn block_word(b: u32) -> u64 {
    ((b as u64) << TAG_BITS) | TAG_BLOCK
}

/// The event word of `Leave`.
pub const LEAVE_WORD: u64 = TAG_LEAVE;

/// The event word of `Path(p)`; `p` must be below 2^61.
#[inline]
pub const fn path_word(p: u64) -> u64 {
    (p << TAG_BITS) | TAG_PATH
}

/// Decodes an event word; `None` for an unknown tag.
#[inline]
pub fn decode_word(w: u64) -> Option<wpp_trace::Event> {
    use wpp_trace::{BlockId, Event, FunctionId, PathId};
    let payload = w >> TAG_BITS;
    match w & ((1 << TAG_BITS) - 1) {
        TAG_ENTER => u32::try_from(payload)
            .ok()
            .map(|f| Event::Enter(FunctionId(f))),
        TAG_BLOCK => u32::try_from(payload)
            .ok()
            .map(|b| Event::Block(BlockId(b))),
        TAG_LEAVE => Some(Event::Leave),
        TAG_PATH => Some(Event::Path(PathId(payload))),
        _ => None,
    }
}

/// What an instrumented program records; chosen at instrumentation time and embedded with the
/// program database.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Mode {
    /// `Enter`/`Block`/`Leave` events (Zhang–Gupta §3).
    TraceBlocks,
    /// `Enter`/`Path`/`Leave` events (Larus §2).
    TracePaths,
    /// A Ball–Larus path profile.
    Bl,
    /// A preferential path profile (PPP §5).
    Ppp,
    /// `Enter`/`Block`/`Leave` events plus an address trace of every load and store (see
    /// [Address trace buffer](self#address-trace-buffer)); the runtime records the block
    /// trace exactly as for [`Mode::TraceBlocks`].
    TraceAddr,
    /// The extended control-flow trace of Tallam–Gupta (§3): `Enter`/`Block`/`Leave` events
    /// with the dependence checks' control flow (see
    /// [Accesses in the event buffer](self#accesses-in-the-event-buffer-ewpp)).
    Ewpp,
    /// The filtering phase of `Ewpp` (Tallam–Gupta §3.1): the address probes of `TraceAddr`
    /// (no block events), whose buffers go to [`SYM_FILTER_FLUSH`]; the runtime writes the
    /// report of exercised (store, load) pairs at exit.
    EwppFilter,
}

impl Mode {
    /// The command-line spelling.
    pub fn name(self) -> &'static str {
        match self {
            Mode::TraceBlocks => "trace-blocks",
            Mode::TracePaths => "trace-paths",
            Mode::Bl => "bl",
            Mode::Ppp => "ppp",
            Mode::TraceAddr => "trace-addr",
            Mode::Ewpp => "ewpp",
            Mode::EwppFilter => "ewpp-filter",
        }
    }
}

/// Version of [`EmbeddedProgram`]'s layout (4: [`EwppTables::crc`]).
pub const EMBEDDED_VERSION: u32 = 4;

/// What an `ewpp` program's runtime needs for its dependence checks.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct EwppTables {
    /// The memory instructions (its `program` is empty: it is the embedded program's).
    pub memory: wpp_deps::MemoryDb,
    /// The filtering run's report: which (store, load) pairs it exercised, and their classes.
    pub exercised: wpp_deps::filter::FilterReport,
    /// The module's [`wpp_deps::filter::program_crc`], by which a report names it.
    pub crc: u32,
}

/// What the instrumenter embeds in the module as [`SYM_PROGRAM_DB`] (postcard-encoded).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct EmbeddedProgram {
    /// [`EMBEDDED_VERSION`] at instrumentation time.
    pub version: u32,
    /// The recording mode.
    pub mode: Mode,
    /// Function names and locations.
    pub program: wpp_trace::ProgramDb,
    /// Per function (by id): the CFG the path ids refer to, with every cut point
    /// (`trace-paths`, `bl`, `ppp`; empty for `trace-blocks`). Renumbering it with
    /// `wpp_paths::ball_larus::number_with_limit(cfg, PATH_LIMIT)` (a no-op for the cuts,
    /// which are all present) gives the numbering used at run time.
    pub cfgs: Vec<wpp_paths::Cfg>,
    /// `ewpp` mode: the tables of the dependence checks.
    pub ewpp: Option<EwppTables>,
}

impl EmbeddedProgram {
    /// Copies each function's CFG into [`program`](Self::program)'s [`wpp_trace::Function::cfg`],
    /// where every trace and `.wpp` the runtime writes carries it (the embedded encoding keeps
    /// them in [`cfgs`](Self::cfgs) only, as profiles do).
    pub fn attach_cfgs(&mut self) {
        for (f, cfg) in self.program.functions.iter_mut().zip(&self.cfgs) {
            f.cfg = cfg.to_record().map(Box::new);
        }
    }
}

/// What the program database's postcard encoding leaves out and [`SYM_PROGRAM_DB`] carries
/// after the [`EmbeddedProgram`]: the source table (each block's file, for blocks inlined from
/// headers) and whether the paths stand for blocks (`trace-blocks`). It trails the
/// program rather than being a field of it because profile files store that struct's
/// encoding, which must not change.
#[derive(serde::Serialize, serde::Deserialize, Default)]
struct Trailer {
    /// [`wpp_trace::ProgramDb::files`].
    files: Vec<String>,
    /// Per function (by id): [`wpp_trace::Function::block_files`].
    block_files: Vec<Vec<u32>>,
    /// [`wpp_trace::ProgramDb::paths_are_blocks`].
    paths_are_blocks: bool,
}

impl Trailer {
    /// The tables of `db` its postcard encoding leaves out.
    fn of(db: &wpp_trace::ProgramDb) -> Trailer {
        Trailer {
            files: db.files.clone(),
            block_files: db.functions.iter().map(|f| f.block_files.clone()).collect(),
            paths_are_blocks: db.paths_are_blocks,
        }
    }

    /// Puts the tables back into `db`.
    fn apply(self, db: &mut wpp_trace::ProgramDb) {
        db.files = self.files;
        db.paths_are_blocks = self.paths_are_blocks;
        for (f, files) in db.functions.iter_mut().zip(self.block_files) {
            f.block_files = files;
        }
    }

    /// `value`'s postcard encoding, then that of the trailer of its program database `db`.
    fn append_to<T: serde::Serialize>(
        value: &T,
        db: &wpp_trace::ProgramDb,
    ) -> Result<Vec<u8>, postcard::Error> {
        let mut bytes = postcard::to_allocvec(value)?;
        bytes.extend(Trailer::bytes(db)?);
        Ok(bytes)
    }

    /// The encoding of `db`'s trailer: the [`Trailer`], then its [`InnerLines`] when any block
    /// has inner lines, then its [`TailLines`] when any block has tail lines (which are inner
    /// lines).
    fn bytes(db: &wpp_trace::ProgramDb) -> Result<Vec<u8>, postcard::Error> {
        let mut bytes = postcard::to_allocvec(&Trailer::of(db))?;
        let lines = |of: fn(&wpp_trace::Function) -> &Vec<Vec<u32>>| -> Vec<Vec<Vec<u32>>> {
            db.functions.iter().map(|f| of(f).clone()).collect()
        };
        if db.has_inner_lines() {
            let block_inner_lines = lines(|f| &f.block_inner_lines);
            bytes.extend(postcard::to_allocvec(&InnerLines { block_inner_lines })?);
            let block_tail_lines = lines(|f| &f.block_tail_lines);
            if block_tail_lines.iter().flatten().any(|l| !l.is_empty()) {
                bytes.extend(postcard::to_allocvec(&TailLines { block_tail_lines })?);
            }
        }
        Ok(bytes)
    }

    /// Reads the trailer [`bytes`](Self::bytes) wrote at the start of `rest` into `db`; the
    /// bytes after it.
    fn take<'a>(
        rest: &'a [u8],
        db: &mut wpp_trace::ProgramDb,
    ) -> Result<&'a [u8], postcard::Error> {
        let (trailer, mut rest) = postcard::take_from_bytes::<Trailer>(rest)?;
        trailer.apply(db);
        if !rest.is_empty() {
            let (lines, after) = postcard::take_from_bytes::<InnerLines>(rest)?;
            for (f, lines) in db.functions.iter_mut().zip(lines.block_inner_lines) {
                f.block_inner_lines = lines;
            }
            rest = after;
        }
        if !rest.is_empty() {
            let (lines, after) = postcard::take_from_bytes::<TailLines>(rest)?;
            for (f, lines) in db.functions.iter_mut().zip(lines.block_tail_lines) {
                f.block_tail_lines = lines;
            }
            rest = after;
        }
        Ok(rest)
    }
}

/// What follows the [`Trailer`] when a program database has inner lines (a separate struct so
/// that trailers written before it existed still read, without them).
#[derive(serde::Serialize, serde::Deserialize, Default)]
struct InnerLines {
    /// Per function (by id): [`wpp_trace::Function::block_inner_lines`].
    block_inner_lines: Vec<Vec<Vec<u32>>>,
}

/// What follows the [`InnerLines`] when a program database has tail lines.
#[derive(serde::Serialize, serde::Deserialize, Default)]
struct TailLines {
    /// Per function (by id): [`wpp_trace::Function::block_tail_lines`].
    block_tail_lines: Vec<Vec<Vec<u32>>>,
}

/// The bytes of [`SYM_PROGRAM_DB`]: the postcard encoding of `program`, then that of its
/// [`Trailer`].
pub fn embedded_bytes(program: &EmbeddedProgram) -> Result<Vec<u8>, postcard::Error> {
    Trailer::append_to(program, &program.program)
}

/// Reads the bytes [`embedded_bytes`] wrote: the program, with its [`Trailer`]'s tables back
/// in its program database (a program without a trailer has none).
pub fn read_embedded(bytes: &[u8]) -> Result<EmbeddedProgram, postcard::Error> {
    let (mut program, rest) = postcard::take_from_bytes::<EmbeddedProgram>(bytes)?;
    if !rest.is_empty() {
        Trailer::take(rest, &mut program.program)?;
    }
    Ok(program)
}

/// The largest path count per function (path ids must fit an event word beside the tag).
pub const PATH_LIMIT: u64 = (1 << 61) - 1;

/// Functions with at most this many paths count them in an array (`bl` mode); above it, in
/// the runtime's hash table ([`SYM_BL_HASH`]).
pub const BL_ARRAY_MAX: u64 = 4096;

/// `void __wpp_rt_bl_init(const struct { uint64_t *counters; uint64_t len; } *table,
/// uint32_t functions, const uint8_t *db, uint64_t db_len)`, called at the top of `main` in
/// `bl` mode. `counters` is null for a function whose paths are counted in the hash table.
pub const SYM_BL_INIT: &str = "__wpp_rt_bl_init";
/// `void __wpp_rt_ppp_init(const struct { uint64_t *counts; const uint64_t *ids;
/// uint64_t interval; uint64_t bl_indexed; } *table, uint32_t functions, const uint8_t *db,
/// uint64_t db_len)`, called at the top of `main` in `ppp` mode; `ids[q]` is the Ball–Larus id
/// of the interesting path with PPP id `q` (`u64::MAX` in holes); null arrays for functions
/// counted only by misses. With `bl_indexed` = 1 the arrays are indexed by the Ball–Larus id
/// and hold every path of the function (`ids[r]` = `r` if interesting, else `u64::MAX`).
pub const SYM_PPP_INIT: &str = "__wpp_rt_ppp_init";
/// `void __wpp_rt_bl_register_v1(table, functions, db, db_len, uint32_t *base)`: a shared
/// library's [`SYM_BL_INIT`], called from its first constructor instead of `main`. The runtime
/// stores the library's function id base in `*base` (its hash calls pass `base + id`), or
/// [`REFUSED_PROFILE_BASE`].
pub const SYM_BL_REGISTER: &str = "__wpp_rt_bl_register_v1";
/// The same for `ppp` ([`SYM_PPP_INIT`]'s table; misses pass `base + id`).
pub const SYM_PPP_REGISTER: &str = "__wpp_rt_ppp_register_v1";
/// `void __wpp_rt_profile_unregister_v1(uint32_t *base)`: called by a profiling library's last
/// destructor (`dlclose`): the runtime keeps its counts so far, since its tables go away.
pub const SYM_PROFILE_UNREGISTER: &str = "__wpp_rt_profile_unregister_v1";
/// The base of a shared library whose profile the runtime does not keep: its ids fall beyond
/// every function of the process and are ignored.
pub const REFUSED_PROFILE_BASE: u32 = 1 << 31;
/// `void __wpp_rt_ppp_miss(uint32_t function, uint64_t bl_path)`: an uninteresting path ran.
pub const SYM_PPP_MISS: &str = "__wpp_rt_ppp_miss";
/// Functions whose PPP interval is larger than this count every path through
/// [`SYM_PPP_MISS`] (the counter arrays stay small whatever the interesting set).
pub const PPP_ARRAY_MAX: u64 = 1 << 16;

/// `void __wpp_rt_bl_hash(uint32_t function, uint64_t path)`: count one execution.
pub const SYM_BL_HASH: &str = "__wpp_rt_bl_hash";

#[cfg(test)]
mod tests {
    use super::*;
    use wpp_trace::{BlockId, Event, FunctionId, PathId};

    #[test]
    fn words_round_trip() {
        assert_eq!(
            decode_word(enter_word(7)),
            Some(Event::Enter(FunctionId(7)))
        );
        assert_eq!(
            decode_word(block_word(u32::MAX)),
            Some(Event::Block(BlockId(u32::MAX)))
        );
        assert_eq!(decode_word(LEAVE_WORD), Some(Event::Leave));
        assert_eq!(
            decode_word(path_word(1 << 60)),
            Some(Event::Path(PathId(1 << 60)))
        );
        assert_eq!(decode_word(5), None);
    }

    /// The source table and the paths-as-blocks mark trail the embedded program, whose own
    /// encoding (the one profile files store) stays as it was.
    #[test]
    fn the_source_table_and_paths_as_blocks_trail_the_embedded_program() {
        let mut program = wpp_trace::ProgramDb::default();
        program.intern("main");
        program.intern("leaf");
        let embedded = EmbeddedProgram {
            version: EMBEDDED_VERSION,
            mode: Mode::TraceBlocks,
            program,
            cfgs: Vec::new(),
            ewpp: None,
        };
        let plain = postcard::to_allocvec(&embedded).unwrap();
        assert_eq!(read_embedded(&plain).unwrap(), embedded);
        let mut full = embedded.clone();
        full.program.paths_are_blocks = true;
        full.program.files = vec!["m.c".into(), "h.h".into()];
        full.program.functions[0].block_files = vec![0, 1, 0];
        let bytes = embedded_bytes(&full).unwrap();
        assert_eq!(bytes[..plain.len()], plain[..]);
        assert_eq!(read_embedded(&bytes).unwrap(), full);
        assert!(read_embedded(&bytes[..bytes.len() - 1]).is_err());
        // Inner lines follow the trailer, which stays as it was.
        let mut lines = full.clone();
        lines.program.functions[0].block_lines = vec![4, 8, 9];
        lines.program.functions[0].block_inner_lines = vec![vec![5, 6], vec![], vec![]];
        let with = embedded_bytes(&lines).unwrap();
        let without = embedded_bytes(&{
            let mut w = lines.clone();
            w.program.functions[0].block_inner_lines.clear();
            w
        })
        .unwrap();
        assert_eq!(with[..without.len()], without[..]);
        assert_eq!(read_embedded(&with).unwrap(), lines);
        assert!(read_embedded(&with[..with.len() - 1]).is_err());
        // Tail lines follow the inner lines.
        let mut tails = lines.clone();
        tails.program.functions[0].block_tail_lines = vec![vec![6], vec![], vec![]];
        let with_tails = embedded_bytes(&tails).unwrap();
        assert_eq!(with_tails[..with.len()], with[..]);
        assert_eq!(read_embedded(&with_tails).unwrap(), tails);
        assert!(read_embedded(&with_tails[..with_tails.len() - 1]).is_err());
    }

    /// The raw sink writes event words as the trace format's varints: the two encodings must
    /// agree.
    #[test]
    fn words_are_the_trace_format_varints() {
        use wpp_trace::file::encode_event;
        for w in [
            enter_word(0),
            enter_word(70000),
            block_word(3),
            LEAVE_WORD,
            path_word(1 << 40),
        ] {
            let mut a = Vec::new();
            encode_event(&mut a, decode_word(w).unwrap());
            let mut b = Vec::new();
            wpp_trace::wire::write_varint(&mut b, w);
            assert_eq!(a, b, "word {w:#x}");
        }
    }
}
