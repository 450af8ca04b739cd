//! The `trace-addr` and `ewpp` probes: every load and store of an instrumented function, and
//! the library calls whose writes matter to dependences, append `id, address, size` to the
//! thread's address-trace buffer (`trace-addr`: `wpp_abi`'s "Address trace buffer"; the file is
//! `wpp_deps::at`) or, tagged, to its event buffer (`ewpp`: the runtime turns them into the
//! dependence checks' control flow).
//!
//! | instruction | memory instructions (ids) | probe |
//! |---|---|---|
//! | `load` (scalar or vector, volatile or atomic) | load | before it: pointer, store size of the type |
//! | `store` | store | before it |
//! | `atomicrmw` | load, store | before it |
//! | `cmpxchg` | load; store | load before it; store after it, of size 0 when the exchange failed |
//! | `llvm.memcpy`/`llvm.memmove`, `memcpy`/`memmove`/`mempcpy` (and `__*_chk`) | load of the source, store of the destination | before it |
//! | `llvm.memset`, `memset` (and `__memset_chk`), `bzero` | store | before it |
//! | `malloc`, `calloc`, `realloc`, `reallocarray`, `aligned_alloc`, `memalign`, `valloc`, `posix_memalign`, C++ `operator new` (`call`, not `invoke`), `mmap`, `strdup` | clobber of the new block (`strdup`: its string) | after it |
//! | `read`, `pread`, `recv`, `recvfrom`, `readlink`, `fread`, `fgets`, `getline`/`getdelim` (the line, the buffer's address and size) | clobber of the bytes read | after it |
//! | `snprintf`, `sprintf`, `asprintf`, `strftime`, `strcpy`, `strncpy`, `getcwd`, `realpath`, `strtod`'s end pointer, `frexp`, `modf`, `sincos`, `strtok`'s terminating zero | clobber of what libc formatted or copied | after it |
//! | `strcat`, `strncat` | clobber of what was appended, from the string's end before the call | after it (its length taken before) |
//! | `qsort` | clobber of the array | after it |
//! | `scanf`, `sscanf`, `fscanf` with a constant format | clobber of each argument a conversion assigned (its type's bytes, or a string and its zero), by the count the call returns | after it |
//! | `time`, `gettimeofday`, `clock_gettime`, `stat`/`lstat`/`fstat`/`fstatat`, `pipe`, `wait`/`waitpid`, `gmtime_r`/`localtime_r` | clobber of the structure filled | after it |
//! | `alloca` (constant size), `llvm.lifetime.start` of one | clobber of the object: its bytes are uninitialized, not a dead frame's | after it |
//! | `llvm.va_start` | clobber of the `va_list` and of the register save area it points to (x86-64 SysV: 176 bytes), which the prologue wrote | after it |
//! | `llvm.va_copy` | clobber of the destination `va_list` | after it |
//!
//! A clobber marks bytes as written outside the program, so a load of what libc wrote, of
//! fresh heap memory, or of a reused block before the program writes it is reported as
//! external instead of depending on the program's store those bytes held before. A call's
//! clobber covers what it wrote by its result: 0 bytes when `fgets`, `stat` or `pipe` failed,
//! and a string's length is read only when the call succeeded (`strnlen` with a bound of 0
//! otherwise). A function the module defines is traced itself, whatever its name.
//!
//! Writes by other uninstrumented code are not seen: their bytes keep their previous last
//! writer, so a load of such bytes is attributed to the program's previous store there. That
//! is `scanf` with a format built at run time, `vscanf`, `errno` (which libc sets only when a
//! call fails), other libc functions, native libraries (libstdc++'s compiled parts among
//! them; its templates the driver instantiates in the program, `driver::libstdcxx`), the
//! kernel through other system calls, inline assembly, and what libc writes *while* it calls
//! back into the program (`qsort`'s comparator reads elements the sort
//! moved: after `qsort` returns they are external, during it they name the stores that first
//! wrote them). So are blocks from allocation calls made through `invoke` (C++ `new` inside a
//! `try`) or by libraries. Masked and gather/scatter vector intrinsics and scalable vectors
//! are not traced.
//!
//! Ids number the memory instructions in module order (function id, block layout order,
//! instruction order), so they are stable for a given bitcode file.

use crate::helpers::thread_local;
use crate::ir::{Builder, Mod, Opcode, Type, Value};
use crate::scanf;
use wpp_abi as abi;
use wpp_deps::{AccessKind, MemInstr};

/// x86-64 SysV `va_list`: its size, and where it keeps the address of the register save area
/// (`reg_save_area`, after `gp_offset`, `fp_offset` and `overflow_arg_area`), which holds the
/// six integer and eight vector argument registers.
const VA_LIST_BYTES: u64 = 24;
const REG_SAVE_AREA_OFFSET: u64 = 16;
const REG_SAVE_AREA_BYTES: u64 = 6 * 8 + 8 * 16;

/// Where an access's byte count comes from.
#[derive(Clone, Copy)]
enum Size {
    /// A constant.
    Bytes(u64),
    /// An integer operand of the instruction (zero-extended).
    Operand(u32),
    /// The product of two operands (`calloc`'s 0 and 1, `qsort`'s 1 and 2).
    Product(u32, u32),
    /// The call's result, when positive (`read`).
    Result,
    /// `fread`: the call's result times operand 1.
    ResultTimes(u32),
    /// Operand `.0` when the `cmpxchg` result says it succeeded.
    IfExchanged(u64),
    /// `snprintf`: the result plus the terminating zero, at most operand `.0`.
    ResultPlusOneAtMost(u32),
    /// `sprintf`: the result plus the terminating zero.
    ResultPlusOne,
    /// `strcpy`: the length of the string now at operand `.0`, plus its zero.
    StrlenPlusOne(u32),
    /// The length of the string now at the access's address, plus its zero; read only when
    /// the call's [`When`] holds (`fgets` may leave its buffer unterminated when it fails).
    StringAt,
}

/// Where an access's address comes from.
#[derive(Clone, Copy)]
enum Ptr {
    /// A pointer operand of the instruction.
    Operand(u32),
    /// The call's result.
    Result,
    /// The pointer stored at this byte offset of a pointer operand (`va_start`'s register save
    /// area, `getline`'s buffer).
    Stored(u32, u64),
    /// The end of the string the call returned (`strtok`'s terminating zero).
    ResultStringEnd,
    /// Where the string at a pointer operand ended before the call (`strcat` appends there).
    AppendedTo(u32),
}

/// When a call wrote what its access says, by its result; otherwise the access is of 0 bytes.
#[derive(Clone, Copy)]
enum When {
    Always,
    /// A pointer result is not null.
    NonNull,
    /// An integer result is 0 (system calls' success).
    Zero,
    /// An integer result is at least 0 (`getline`).
    NonNegative,
    /// An integer result is above 0 (`strftime`).
    Positive,
    /// An integer result is at least this (`scanf`: how many conversions assigned).
    AtLeast(u32),
}

/// One access a probe records.
struct Probe<'m> {
    inst: Value<'m>,
    id: u32,
    ptr: Ptr,
    size: Size,
    when: When,
    /// After the instruction (it needs the result).
    after: bool,
}

/// The memory sites of a module, collected before any probe is inserted.
pub(crate) struct Sites<'m> {
    probes: Vec<Probe<'m>>,
    /// The memory database's instructions (index = id).
    pub instructions: Vec<MemInstr>,
    /// The source files they name ([`MemInstr::file`]), and each one's index.
    pub files: Vec<String>,
    file_ids: std::collections::HashMap<String, u32>,
}

/// One access of a library call (see [`call_accesses`]).
struct CallAccess {
    kind: AccessKind,
    what: &'static str,
    ptr: Ptr,
    size: Size,
    when: When,
}

/// An access of a call that happens whatever the call returns.
fn access(kind: AccessKind, what: &'static str, ptr: Ptr, size: Size) -> CallAccess {
    CallAccess {
        kind,
        what,
        ptr,
        size,
        when: When::Always,
    }
}

/// A write of a library call (a clobber: bytes written outside the program), made only when
/// the call's result says `when`.
fn wrote(what: &'static str, ptr: Ptr, size: Size, when: When) -> CallAccess {
    CallAccess {
        kind: AccessKind::Clobber,
        what,
        ptr,
        size,
        when,
    }
}

/// x86-64 glibc: `sizeof(struct stat)`, `sizeof(struct tm)`, `sizeof(struct timeval)` (and
/// `struct timespec`), `sizeof(int[2])`.
const STAT_BYTES: u64 = 144;
const TM_BYTES: u64 = 56;
const TIMEVAL_BYTES: u64 = 16;
const PIPE_BYTES: u64 = 8;

/// How a call touches memory, by callee name (intrinsics by their base name). Stores and
/// loads are the program's (`memcpy` copies what the program asked for); clobbers are what
/// libc writes on its own: new blocks, bytes read from files, results it formats.
fn call_accesses(name: &str) -> Vec<CallAccess> {
    use AccessKind::{Load, Store};
    use Ptr::{AppendedTo, Operand as Arg, Result as Returned, ResultStringEnd, Stored};
    use Size::*;
    use When::*;
    match name {
        "llvm.memcpy" | "llvm.memcpy.inline" | "memcpy" | "__memcpy_chk" | "mempcpy"
        | "__mempcpy" | "__mempcpy_chk" => {
            vec![
                access(Load, "memcpy src", Arg(1), Operand(2)),
                access(Store, "memcpy dst", Arg(0), Operand(2)),
            ]
        }
        "llvm.memmove" | "memmove" | "__memmove_chk" => {
            vec![
                access(Load, "memmove src", Arg(1), Operand(2)),
                access(Store, "memmove dst", Arg(0), Operand(2)),
            ]
        }
        "llvm.memset" | "llvm.memset.inline" | "memset" | "__memset_chk" => {
            vec![access(Store, "memset", Arg(0), Operand(2))]
        }
        "bzero" | "explicit_bzero" => vec![access(Store, "bzero", Arg(0), Operand(1))],
        "malloc" => vec![wrote("malloc", Returned, Operand(0), Always)],
        "calloc" => vec![wrote("calloc", Returned, Product(0, 1), Always)],
        "realloc" => vec![wrote("realloc", Returned, Operand(1), Always)],
        "reallocarray" => vec![wrote("reallocarray", Returned, Product(1, 2), Always)],
        "aligned_alloc" | "memalign" => {
            vec![wrote("aligned_alloc", Returned, Operand(1), Always)]
        }
        "valloc" | "pvalloc" => vec![wrote("valloc", Returned, Operand(0), Always)],
        "posix_memalign" => {
            vec![
                wrote("posix_memalign", Stored(0, 0), Operand(2), Zero),
                wrote("posix_memalign pointer", Arg(0), Bytes(8), Zero),
            ]
        }
        "_Znwm"
        | "_Znam"
        | "_ZnwmRKSt9nothrow_t"
        | "_ZnamRKSt9nothrow_t"
        | "_ZnwmSt11align_val_t"
        | "_ZnamSt11align_val_t" => {
            vec![wrote("operator new", Returned, Operand(0), Always)]
        }
        "mmap" | "mmap64" => vec![wrote("mmap", Returned, Operand(1), Always)],
        "strdup" | "__strdup" | "strndup" | "__strndup" => {
            vec![wrote("strdup", Returned, StringAt, NonNull)]
        }
        "read" | "pread" | "pread64" | "recv" | "recvfrom" | "readlink" => {
            vec![wrote("read", Arg(1), Result, Always)]
        }
        "fread" | "fread_unlocked" => vec![wrote("fread", Arg(0), ResultTimes(1), Always)],
        "fgets" | "fgets_unlocked" => vec![wrote("fgets", Arg(0), StringAt, NonNull)],
        // The line and its zero; the buffer's address and size, which libc may have grown.
        "getline" | "getdelim" | "__getdelim" => {
            vec![
                wrote("getline", Stored(0, 0), ResultPlusOne, NonNegative),
                wrote("getline buffer", Arg(0), Bytes(8), Always),
                wrote("getline size", Arg(1), Bytes(8), Always),
            ]
        }
        "getcwd" | "realpath" => vec![wrote("getcwd", Returned, StringAt, NonNull)],
        // libc writes a program reads back: formatted numbers and times, copied strings, the
        // end of a parsed number, the parts of a float, a sorted array (written by libc's
        // merge sort, not by the program's stores it moved), a token's terminating zero.
        "snprintf" | "vsnprintf" | "__snprintf_chk" | "__vsnprintf_chk" => {
            vec![wrote("snprintf", Arg(0), ResultPlusOneAtMost(1), Always)]
        }
        "sprintf" | "vsprintf" | "__sprintf_chk" | "__vsprintf_chk" => {
            vec![wrote("sprintf", Arg(0), ResultPlusOne, Always)]
        }
        "strftime" => vec![wrote("strftime", Arg(0), ResultPlusOne, Positive)],
        "strcpy" | "stpcpy" | "__strcpy_chk" | "__stpcpy_chk" => {
            vec![wrote("strcpy", Arg(0), StrlenPlusOne(0), Always)]
        }
        "strcat" | "strncat" | "__strcat_chk" | "__strncat_chk" => {
            vec![wrote("strcat", AppendedTo(0), StringAt, Always)]
        }
        "strncpy" | "__strncpy_chk" => vec![wrote("strncpy", Arg(0), Operand(2), Always)],
        "strtod" | "strtof" | "strtold" | "strtol" | "strtoul" | "strtoll" | "strtoull"
        | "__isoc23_strtol" | "__isoc23_strtoul" | "__isoc23_strtoll" | "__isoc23_strtoull" => {
            vec![wrote("strtod endptr", Arg(1), Bytes(8), Always)]
        }
        "strtok" => vec![wrote("strtok", ResultStringEnd, Bytes(1), NonNull)],
        "strtok_r" | "__strtok_r" => {
            vec![
                wrote("strtok", ResultStringEnd, Bytes(1), NonNull),
                wrote("strtok_r saveptr", Arg(2), Bytes(8), Always),
            ]
        }
        "qsort" => vec![wrote("qsort", Arg(0), Product(1, 2), Always)],
        "frexp" | "frexpf" | "frexpl" => vec![wrote("frexp", Arg(1), Bytes(4), Always)],
        "modf" => vec![wrote("modf", Arg(1), Bytes(8), Always)],
        "modff" => vec![wrote("modff", Arg(1), Bytes(4), Always)],
        "modfl" => vec![wrote("modfl", Arg(1), Bytes(16), Always)],
        // System calls that fill a structure of the program's, on success.
        "time" => vec![wrote("time", Arg(0), Bytes(8), Always)],
        "gettimeofday" => vec![wrote("gettimeofday", Arg(0), Bytes(TIMEVAL_BYTES), Zero)],
        "clock_gettime" => vec![wrote("clock_gettime", Arg(1), Bytes(TIMEVAL_BYTES), Zero)],
        "stat" | "stat64" | "lstat" | "lstat64" | "fstat" | "fstat64" => {
            vec![wrote("stat", Arg(1), Bytes(STAT_BYTES), Zero)]
        }
        "fstatat" | "fstatat64" | "__xstat" | "__lxstat" | "__fxstat" => {
            vec![wrote("stat", Arg(2), Bytes(STAT_BYTES), Zero)]
        }
        "wait" => vec![wrote("wait", Arg(0), Bytes(4), Positive)],
        "waitpid" => vec![wrote("waitpid", Arg(1), Bytes(4), Positive)],
        "sincos" => vec![
            wrote("sincos", Arg(1), Bytes(8), Always),
            wrote("sincos", Arg(2), Bytes(8), Always),
        ],
        "sincosf" => vec![
            wrote("sincosf", Arg(1), Bytes(4), Always),
            wrote("sincosf", Arg(2), Bytes(4), Always),
        ],
        "asprintf" | "vasprintf" | "__asprintf_chk" | "__vasprintf_chk" => vec![
            wrote("asprintf", Stored(0, 0), ResultPlusOne, NonNegative),
            wrote("asprintf pointer", Arg(0), Bytes(8), NonNegative),
        ],
        "pipe" | "pipe2" => vec![wrote("pipe", Arg(0), Bytes(PIPE_BYTES), Zero)],
        "localtime_r" | "gmtime_r" => {
            vec![wrote("localtime_r", Arg(1), Bytes(TM_BYTES), NonNull)]
        }
        _ => vec![],
    }
}

/// The `scanf` family: the index of a call's first pointer argument.
fn scanf_arguments(name: &str) -> Option<u32> {
    let name = name
        .strip_prefix("__isoc99_")
        .or_else(|| name.strip_prefix("__isoc23_"))
        .unwrap_or(name);
    match name {
        "sscanf" | "fscanf" => Some(2),
        "scanf" => Some(1),
        _ => None,
    }
}

/// The writes of a `scanf` call whose format (the argument before `first`) is a constant:
/// (argument, size, when), the `k`-th counted assignment when the result is above `k`.
fn scanf_writes(call: Value<'_>, first: u32) -> Vec<(u32, Size, When)> {
    let format = call.operand(first - 1).and_then(|f| f.const_string());
    let Some(list) = format.as_deref().and_then(scanf::assignments) else {
        return Vec::new();
    };
    let args = call.num_arguments();
    (first..args)
        .zip(list)
        .filter_map(|(arg, a)| {
            let size = match a.target {
                scanf::Target::Bytes(n) => Size::Bytes(n),
                scanf::Target::String => Size::StringAt,
                scanf::Target::Unsized => return None,
            };
            Some((arg, size, When::AtLeast(a.counted? + 1)))
        })
        .collect()
}

/// A direct callee's name; for an intrinsic its base name without overload suffixes
/// (`llvm.memcpy.p0.p0.i64` → `llvm.memcpy`).
fn callee_name(m: Mod<'_>, call: Value<'_>) -> Option<String> {
    let f = call.called_function()?;
    match f.intrinsic_id() {
        0 => Some(f.name()),
        id => Some(m.intrinsic_name(id)),
    }
}

impl<'m> Sites<'m> {
    /// An empty set (modes without address tracing).
    pub fn new() -> Self {
        Sites {
            probes: Vec::new(),
            instructions: Vec::new(),
            files: Vec::new(),
            file_ids: std::collections::HashMap::new(),
        }
    }

    /// The index of the source file of `inst`'s debug location ([`MemInstr::file`]).
    fn file_of(&mut self, inst: Value<'m>) -> u32 {
        match inst.debug_location() {
            Some((file, _)) if !file.is_empty() => {
                let next = self.files.len() as u32;
                *self.file_ids.entry(file).or_insert_with_key(|f| {
                    self.files.push(f.clone());
                    next
                })
            }
            _ => wpp_deps::memdb::NO_FILE,
        }
    }

    /// Collects the accesses of function `fid`, whose blocks are `blocks` in layout order.
    pub fn collect(&mut self, m: Mod<'m>, fid: u32, blocks: &[crate::ir::Block<'m>]) {
        for (bi, b) in blocks.iter().enumerate() {
            for inst in b.instructions() {
                let mut add_at = |kind, what: &str, ptr, size, when, after| {
                    let id = self.instructions.len() as u32;
                    let file = self.file_of(inst);
                    self.instructions.push(MemInstr {
                        function: fid,
                        block: bi as u32,
                        line: inst.debug_line(),
                        column: inst.debug_column(),
                        file,
                        kind,
                        what: what.to_string(),
                    });
                    self.probes.push(Probe {
                        inst,
                        id,
                        ptr,
                        size,
                        when,
                        after,
                    });
                };

                match inst.opcode() {
                    Opcode::LLVMLoad => {
                        if let Some(n) = m.store_size(inst.type_of()) {
                            add_at(
                                AccessKind::Load,
                                "load",
                                Ptr::Operand(0),
                                Size::Bytes(n),
                                When::Always,
                                false,
                            );
                        }
                    }
                    Opcode::LLVMStore => {
                        if let Some(n) = inst.operand(0).and_then(|v| m.store_size(v.type_of())) {
                            add_at(
                                AccessKind::Store,
                                "store",
                                Ptr::Operand(1),
                                Size::Bytes(n),
                                When::Always,
                                false,
                            );
                        }
                    }
                    Opcode::LLVMAtomicRMW => {
                        if let Some(n) = m.store_size(inst.type_of()) {
                            add_at(
                                AccessKind::Load,
                                "atomicrmw",
                                Ptr::Operand(0),
                                Size::Bytes(n),
                                When::Always,
                                false,
                            );
                            add_at(
                                AccessKind::Store,
                                "atomicrmw",
                                Ptr::Operand(0),
                                Size::Bytes(n),
                                When::Always,
                                false,
                            );
                        }
                    }
                    Opcode::LLVMAtomicCmpXchg => {
                        if let Some(n) = inst.operand(1).and_then(|v| m.store_size(v.type_of())) {
                            add_at(
                                AccessKind::Load,
                                "cmpxchg",
                                Ptr::Operand(0),
                                Size::Bytes(n),
                                When::Always,
                                false,
                            );
                            add_at(
                                AccessKind::Store,
                                "cmpxchg",
                                Ptr::Operand(0),
                                Size::IfExchanged(n),
                                When::Always,
                                true,
                            );
                        }
                    }
                    Opcode::LLVMAlloca => {
                        // A new stack object holds no program store's bytes: without this,
                        // reading its uninitialized bytes (padding, an unused union member)
                        // would name a store into a dead frame that happened to use them.
                        if let Some(n) = inst.alloca_bytes(m) {
                            add_at(
                                AccessKind::Clobber,
                                "alloca",
                                Ptr::Result,
                                Size::Bytes(n),
                                When::Always,
                                true,
                            );
                        }
                    }
                    Opcode::LLVMCall => {
                        let name = callee_name(m, inst).unwrap_or_default();
                        if name == "llvm.lifetime.start" {
                            // The object's lifetime starts again (a loop, a new scope; the
                            // code generator may give its slot to another object between).
                            let object =
                                inst.operand(0).filter(|o| o.opcode() == Opcode::LLVMAlloca);
                            if let Some(n) = object.and_then(|o| o.alloca_bytes(m)) {
                                let size = Size::Bytes(n);
                                add_at(
                                    AccessKind::Clobber,
                                    "lifetime.start",
                                    Ptr::Operand(0),
                                    size,
                                    When::Always,
                                    true,
                                );
                            }
                        }
                        if name == "llvm.va_start" {
                            // x86-64 SysV: the prologue's register save area, which `va_arg`
                            // reads, is written by no IR store; so is the `va_list` itself.
                            let list = Size::Bytes(VA_LIST_BYTES);
                            add_at(
                                AccessKind::Clobber,
                                "va_start",
                                Ptr::Operand(0),
                                list,
                                When::Always,
                                true,
                            );
                            let saved = Size::Bytes(REG_SAVE_AREA_BYTES);
                            let at = Ptr::Stored(0, REG_SAVE_AREA_OFFSET);
                            add_at(
                                AccessKind::Clobber,
                                "va_start registers",
                                at,
                                saved,
                                When::Always,
                                true,
                            );
                        }
                        if name == "llvm.va_copy" {
                            let list = Size::Bytes(VA_LIST_BYTES);
                            add_at(
                                AccessKind::Clobber,
                                "va_copy",
                                Ptr::Operand(0),
                                list,
                                When::Always,
                                true,
                            );
                        }
                        // A function the module defines is traced itself, whatever its name.
                        let library = inst.called_function().is_some_and(|f| f.is_declaration());
                        let accesses = if library {
                            call_accesses(&name)
                        } else {
                            Vec::new()
                        };
                        for a in accesses {
                            let after = a.kind == AccessKind::Clobber;
                            add_at(a.kind, a.what, a.ptr, a.size, a.when, after);
                        }
                        if let Some(first) = scanf_arguments(&name).filter(|_| library) {
                            for (arg, size, when) in scanf_writes(inst, first) {
                                let ptr = Ptr::Operand(arg);
                                add_at(AccessKind::Clobber, "scanf", ptr, size, when, true);
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
    }

    /// Inserts the probes: each calls `access(id, address, size)` (see [`Helper`]).
    pub fn instrument(&self, m: Mod<'m>, h: &Helper<'m>) -> usize {
        let b = m.builder();
        let i64t = m.int(64);
        // Where each probe goes, taken before inserting any: an instruction with several
        // probes after it (`va_start`) would otherwise see the first probe's code as its next
        // instruction and put the second before it.
        let nexts: Vec<_> = self.probes.iter().map(|p| p.inst.next()).collect();
        for (p, next) in self.probes.iter().zip(nexts) {
            let operand = |i: u32| p.inst.operand(i).expect("pointer operand");
            let string_ty = m.fn_type(i64t, &[m.ptr()]);
            let strlen = |at| b.call(string_ty, m.declare("strlen", string_ty), &[at]);
            let appended_at = match p.ptr {
                Ptr::AppendedTo(i) => {
                    b.before(p.inst);
                    Some(b.gep(m.int(8), operand(i), &[strlen(operand(i))]))
                }
                _ => None,
            };
            match (p.after, next) {
                (true, Some(next)) => b.before(next),
                (true, None) => continue, // a call is never a terminator
                (false, _) => b.before(p.inst),
            }
            let max = m.const_int(i64t, u64::MAX);
            let holds = holds(m, &b, p.when, p.inst);
            // `strnlen` reads nothing when its bound is 0: what the call wrote is only read
            // when its result says it wrote it.
            let string_length = |at: Value<'m>| {
                let strnlen_ty = m.fn_type(i64t, &[m.ptr(), i64t]);
                let strnlen = m.declare("strnlen", strnlen_ty);
                let bound = holds.map_or(max, |h| b.select(h, max, m.const_int(i64t, 0)));
                b.call(strnlen_ty, strnlen, &[at, bound])
            };
            let (address, at) = match p.ptr {
                Ptr::Operand(i) => (b.ptr_to_i64(operand(i), i64t), Some(operand(i))),
                Ptr::Result => (b.ptr_to_i64(p.inst, i64t), Some(p.inst)),
                Ptr::Stored(i, offset) => {
                    let slot = b.gep(i64t, operand(i), &[m.const_int(i64t, offset / 8)]);
                    (b.load(i64t, slot), None)
                }
                Ptr::ResultStringEnd => {
                    let start = b.ptr_to_i64(p.inst, i64t);
                    (b.add(start, string_length(p.inst)), None)
                }
                Ptr::AppendedTo(_) => {
                    let at = appended_at.expect("the string's end, taken before the call");
                    (b.ptr_to_i64(at, i64t), Some(at))
                }
            };
            let op = |i: u32| b.to_i64(p.inst.operand(i).expect("size operand"), i64t, false);
            // A formatting call's result and its terminating zero.
            let result_plus_one = || {
                let n = b.to_i64(b.positive_or_zero(p.inst), i64t, false);
                b.add(n, m.const_int(i64t, 1))
            };
            let size = match p.size {
                Size::Bytes(n) => m.const_int(i64t, n),
                Size::Operand(i) => op(i),
                Size::Product(i, j) => b.mul(op(i), op(j)),
                Size::Result => b.to_i64(b.positive_or_zero(p.inst), i64t, false),
                Size::ResultPlusOne => result_plus_one(),
                Size::ResultPlusOneAtMost(i) => {
                    let (written, n) = (result_plus_one(), op(i));
                    b.select(b.icmp_uge(written, n), n, written)
                }
                Size::StrlenPlusOne(i) => b.add(strlen(operand(i)), m.const_int(i64t, 1)),
                Size::StringAt => {
                    let at = at.expect("a string access names its pointer");
                    b.add(string_length(at), m.const_int(i64t, 1))
                }
                Size::ResultTimes(i) => b.mul(b.to_i64(p.inst, i64t, false), op(i)),
                Size::IfExchanged(n) => {
                    let ok = b.extract_value(p.inst, 1);
                    b.select(ok, m.const_int(i64t, n), m.const_int(i64t, 0))
                }
            };
            let size = holds.map_or(size, |h| b.select(h, size, m.const_int(i64t, 0)));
            let args = [m.const_int(i64t, h.id_word(p.id)), address, size];
            b.call(h.access_ty, h.access, &args);
        }
        self.probes.len()
    }
}

/// The condition under which a call wrote what its access says (`None`: always).
fn holds<'m>(m: Mod<'m>, b: &Builder<'m>, when: When, call: Value<'m>) -> Option<Value<'m>> {
    let i64t = m.int(64);
    let zero = m.const_int(i64t, 0);
    let result = || b.to_i64(call, i64t, true);
    Some(match when {
        When::Always => return None,
        When::NonNull => b.icmp_ne(b.ptr_to_i64(call, i64t), zero),
        When::Zero => b.icmp_eq(result(), zero),
        When::NonNegative => b.icmp_sge(result(), zero),
        When::Positive => b.icmp_sgt(result(), zero),
        When::AtLeast(n) => b.icmp_sge(result(), m.const_int(i64t, u64::from(n))),
    })
}

/// The inline `access(id, address, size)` helper and the buffer it appends to.
pub(crate) struct Helper<'m> {
    access: Value<'m>,
    access_ty: Type<'m>,
    /// Whether the first word is tagged ([`abi::TAG_ACCESS`]): the event buffer of `ewpp`.
    tagged: bool,
}

impl<'m> Helper<'m> {
    /// `trace-addr` and `ewpp-filter`: adds `__wpp_abuf`, `__wpp_aidx` and the helper
    /// `__wpp_access` to `m`; a full buffer calls `flush_symbol` with `db`, the embedded memory
    /// database (`db_len` bytes). A shared library, whose registration sets `memory_base`,
    /// shares the executable's buffer and adds its memory base to each id, appending nothing
    /// when refused (`wpp_abi`, *Address trace buffer*).
    pub fn for_address_trace(
        m: Mod<'m>,
        flush_symbol: &str,
        (db, db_len): (Value<'m>, u64),
        memory_base: Option<Value<'m>>,
    ) -> Helper<'m> {
        let (i32t, i64t, ptr, void) = (m.int(32), m.int(64), m.ptr(), m.void());
        let cap = u64::from(abi::AT_BUF_CAP);
        let shared = memory_base.is_some();
        let abuf = thread_local(m, abi::SYM_ABUF, ptr, m.const_null(ptr), shared);
        let aidx = thread_local(m, abi::SYM_AIDX, i32t, m.const_int(i32t, cap), shared);
        let flush_ty = m.fn_type(void, &[ptr, ptr, ptr, i64t]);
        let flush = m.declare(flush_symbol, flush_ty);
        let args = [abuf, aidx, db, m.const_int(i64t, db_len)];
        let seq = m
            .global(abi::SYM_ASEQ)
            .unwrap_or_else(|| m.declare_global(abi::SYM_ASEQ, i64t, false));
        let seq = Some(seq);
        Self::build(
            m,
            (abuf, aidx, cap),
            (flush_ty, flush, &args),
            seq,
            memory_base,
        )
    }

    /// `ewpp`: the helper appends to the event buffer of [`crate::helpers::Helpers`] (built
    /// first), tagged, so the runtime sees each access among the events in the order it ran;
    /// `db` is the program database, as for event flushes. A shared library adds its
    /// `memory_base` to each id, as in [`Helper::for_address_trace`].
    pub fn for_event_buffer(
        m: Mod<'m>,
        db: Value<'m>,
        db_len: u64,
        memory_base: Option<Value<'m>>,
    ) -> Helper<'m> {
        let (i64t, ptr, void) = (m.int(64), m.ptr(), m.void());
        let global = |name| m.global(name).expect("the event helpers are built first");
        let (buf, idx, depth) = (
            global(abi::SYM_BUF),
            global(abi::SYM_IDX),
            global(abi::SYM_DEPTH),
        );
        let flush_ty = m.fn_type(void, &[ptr, ptr, ptr, ptr, i64t]);
        let flush = m.declare(abi::SYM_FLUSH, flush_ty);
        let args = [buf, idx, depth, db, m.const_int(i64t, db_len)];
        let cap = u64::from(abi::BUF_CAP);
        Self::build(
            m,
            (buf, idx, cap),
            (flush_ty, flush, &args),
            None,
            memory_base,
        )
    }

    /// The helper appends `id, address, size` and, given the sequence counter `seq` (an
    /// address trace's), the access's sequence number; without it, it writes the event
    /// buffer, with the id tagged. Given a library's `memory_base`, it adds the base loaded
    /// from there to `id`, and appends nothing when it is [`abi::REFUSED_BASE`].
    fn build(
        m: Mod<'m>,
        (buf, idx, cap): (Value<'m>, Value<'m>, u64),
        (flush_ty, flush, flush_args): (Type<'m>, Value<'m>, &[Value<'m>]),
        seq: Option<Value<'m>>,
        memory_base: Option<Value<'m>>,
    ) -> Helper<'m> {
        let (i32t, i64t, ptr, void) = (m.int(32), m.int(64), m.ptr(), m.void());
        m.add_fn_attr(flush, "nounwind");
        m.add_fn_attr(flush, "cold");
        let access_ty = m.fn_type(void, &[i64t, i64t, i64t]);
        let access = m.add_internal_function("__wpp_access", access_ty);
        m.add_fn_attr(access, "alwaysinline");
        m.add_fn_attr(access, "nounwind");
        let b = m.builder();
        let entry = m.append_block(access, "entry");
        let slow = m.append_block(access, "flush");
        let fast = m.append_block(access, "append");
        b.at_end(entry);
        let mut id = crate::ir::param(access, 0);
        if let Some(base) = memory_base {
            let check = m.append_block(access, "check");
            let skip = m.append_block(access, "refused");
            let word = b.load(i64t, base);
            // A tagged id (the event buffer's) has the id above the tag.
            let offset = match seq {
                None => b.shl(word, m.const_int(i64t, abi::TAG_BITS.into())),
                Some(_) => word,
            };
            id = b.add(id, offset);
            let recorded = b.icmp_ne(word, m.const_int(i64t, abi::REFUSED_BASE));
            b.cond_br(recorded, check, skip);
            b.at_end(skip);
            b.ret_void();
            b.at_end(check);
        }
        let words = 3 + u64::from(seq.is_some());
        let i = b.load(i32t, idx);
        // Room for the record: idx ≤ cap − words.
        let full = b.icmp_uge(i, m.const_int(i32t, cap - words + 1));
        b.cond_br(full, slow, fast);
        b.at_end(slow);
        b.call(flush_ty, flush, flush_args);
        b.br(fast);
        b.at_end(fast);
        let j = b.load(i32t, idx);
        let base = b.load(ptr, buf);
        let mut record: Vec<Value<'m>> =
            vec![id, crate::ir::param(access, 1), crate::ir::param(access, 2)];
        record.extend(seq.map(|s| b.fetch_increment(i64t, s)));
        for (k, &word) in record.iter().enumerate() {
            let at = b.zext(b.add(j, m.const_int(i32t, k as u64)), i64t);
            b.store(word, b.gep(i64t, base, &[at]));
        }
        b.store(b.add(j, m.const_int(i32t, words)), idx);
        b.ret_void();
        Helper {
            access,
            access_ty,
            tagged: seq.is_none(),
        }
    }

    /// The first word of instruction `id`'s access record.
    fn id_word(&self, id: u32) -> u64 {
        match self.tagged {
            true => u64::from(id) << abi::TAG_BITS | abi::TAG_ACCESS,
            false => u64::from(id),
        }
    }
}
