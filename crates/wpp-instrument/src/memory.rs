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
//! | `llvm.memcpy`/`llvm.memmove`, `memcpy`/`memmove` (and `__*_chk`) | load of the source, store of the destination | before it |
//! | `llvm.memset`, `memset` (and `__memset_chk`) | store | before it |
//! | `malloc`, `calloc`, `realloc`, `aligned_alloc`, C++ `operator new` (`call`, not `invoke`), `mmap` | clobber of the new block | after it |
//! | `read`, `fread` | clobber of the bytes read | after it |
//! | `alloca` (constant size), `llvm.lifetime.start` of one | clobber of the object: its bytes are uninitialized, not a dead frame's | after it |
//! | `llvm.va_start` | clobber of the `va_list` and of the register save area it points to (x86-64 SysV: 176 bytes), which the prologue wrote | after it |
//! | `llvm.va_copy` | clobber of the destination `va_list` | after it |
//!
//! A clobber marks bytes as written outside the program, so a load of fresh heap memory (or
//! of a reused block before the program writes it) is reported as external instead of
//! depending on a store to a freed block. Writes by other uninstrumented code (libc functions
//! not in the table, such as `strcpy` or `sprintf`, native libraries, the kernel through other
//! system calls, inline assembly) are not seen: their bytes keep their previous last writer, so
//! a load of such bytes is attributed to the program's previous store there. So are blocks
//! from allocation calls made through `invoke` (C++ `new` inside a `try`) or by libraries
//! (`strdup`): a load of their bytes before the program writes them can be attributed to a
//! store into a freed block that occupied the same bytes. Masked and gather/scatter vector
//! intrinsics and scalable vectors are not traced.
//!
//! Ids number the memory instructions in module order (function id, block layout order,
//! instruction order), so they are stable for a given bitcode file.

use crate::helpers::thread_local;
use crate::ir::{Mod, Opcode, Type, Value};
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
    /// `calloc`: the product of operands 0 and 1.
    Product,
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
}

/// One access a probe records.
struct Probe<'m> {
    inst: Value<'m>,
    id: u32,
    /// The pointer: an operand, or the call's result.
    ptr: Option<u32>,
    /// Whether the address is the pointer stored at this byte offset of `ptr` instead.
    deref: Option<u64>,
    size: Size,
    /// After the instruction (it needs the result).
    after: bool,
}

/// The memory sites of a module, collected before any probe is inserted.
pub(crate) struct Sites<'m> {
    probes: Vec<Probe<'m>>,
    /// The memory database's instructions (index = id).
    pub instructions: Vec<MemInstr>,
}

/// How a call touches memory, by callee name (intrinsics by their base name): per access,
/// its kind, a description, the pointer operand (`None`: the call's result) and its size.
fn call_accesses(name: &str) -> &'static [(AccessKind, &'static str, Option<u32>, Size)] {
    use AccessKind::*;
    use Size::*;
    match name {
        "llvm.memcpy" | "llvm.memcpy.inline" | "memcpy" | "__memcpy_chk" => &[
            (Load, "memcpy src", Some(1), Operand(2)),
            (Store, "memcpy dst", Some(0), Operand(2)),
        ],
        "llvm.memmove" | "memmove" | "__memmove_chk" => &[
            (Load, "memmove src", Some(1), Operand(2)),
            (Store, "memmove dst", Some(0), Operand(2)),
        ],
        "llvm.memset" | "llvm.memset.inline" | "memset" | "__memset_chk" => {
            &[(Store, "memset", Some(0), Operand(2))]
        }
        "malloc" => &[(Clobber, "malloc", None, Operand(0))],
        "calloc" => &[(Clobber, "calloc", None, Product)],
        "realloc" => &[(Clobber, "realloc", None, Operand(1))],
        "aligned_alloc" => &[(Clobber, "aligned_alloc", None, Operand(1))],
        "_Znwm"
        | "_Znam"
        | "_ZnwmRKSt9nothrow_t"
        | "_ZnamRKSt9nothrow_t"
        | "_ZnwmSt11align_val_t"
        | "_ZnamSt11align_val_t" => &[(Clobber, "operator new", None, Operand(0))],
        "mmap" | "mmap64" => &[(Clobber, "mmap", None, Operand(1))],
        "read" => &[(Clobber, "read", Some(1), Result)],
        "fread" => &[(Clobber, "fread", Some(0), ResultTimes(1))],
        // libc writes a program reads back: formatted numbers, copied strings, the end of a
        // parsed number, the parts of a float.
        "snprintf" | "vsnprintf" | "__snprintf_chk" | "__vsnprintf_chk" => {
            &[(Clobber, "snprintf", Some(0), ResultPlusOneAtMost(1))]
        }
        "sprintf" | "vsprintf" | "__sprintf_chk" | "__vsprintf_chk" => {
            &[(Clobber, "sprintf", Some(0), ResultPlusOne)]
        }
        "strcpy" | "stpcpy" | "__strcpy_chk" | "__stpcpy_chk" => {
            &[(Clobber, "strcpy", Some(0), StrlenPlusOne(0))]
        }
        "strncpy" | "__strncpy_chk" => &[(Clobber, "strncpy", Some(0), Operand(2))],
        "strtod" | "strtof" | "strtold" | "strtol" | "strtoul" | "strtoll" | "strtoull"
        | "__isoc23_strtol" | "__isoc23_strtoul" | "__isoc23_strtoll" | "__isoc23_strtoull" => {
            &[(Clobber, "strtod endptr", Some(1), Bytes(8))]
        }
        "frexp" | "frexpf" | "frexpl" => &[(Clobber, "frexp", Some(1), Bytes(4))],
        "modf" => &[(Clobber, "modf", Some(1), Bytes(8))],
        "modff" => &[(Clobber, "modff", Some(1), Bytes(4))],
        "modfl" => &[(Clobber, "modfl", Some(1), Bytes(16))],
        _ => &[],
    }
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
        }
    }

    /// Collects the accesses of function `fid`, whose blocks are `blocks` in layout order.
    pub fn collect(&mut self, m: Mod<'m>, fid: u32, blocks: &[crate::ir::Block<'m>]) {
        for (bi, b) in blocks.iter().enumerate() {
            for inst in b.instructions() {
                let mut add_at = |kind, what: &str, ptr, deref, size, after| {
                    let id = self.instructions.len() as u32;
                    self.instructions.push(MemInstr {
                        function: fid,
                        block: bi as u32,
                        line: inst.debug_line(),
                        column: inst.debug_column(),
                        kind,
                        what: what.to_string(),
                    });
                    self.probes.push(Probe {
                        inst,
                        id,
                        ptr,
                        deref,
                        size,
                        after,
                    });
                };

                match inst.opcode() {
                    Opcode::LLVMLoad => {
                        if let Some(n) = m.store_size(inst.type_of()) {
                            add_at(
                                AccessKind::Load,
                                "load",
                                Some(0),
                                None,
                                Size::Bytes(n),
                                false,
                            );
                        }
                    }
                    Opcode::LLVMStore => {
                        if let Some(n) = inst.operand(0).and_then(|v| m.store_size(v.type_of())) {
                            add_at(
                                AccessKind::Store,
                                "store",
                                Some(1),
                                None,
                                Size::Bytes(n),
                                false,
                            );
                        }
                    }
                    Opcode::LLVMAtomicRMW => {
                        if let Some(n) = m.store_size(inst.type_of()) {
                            add_at(
                                AccessKind::Load,
                                "atomicrmw",
                                Some(0),
                                None,
                                Size::Bytes(n),
                                false,
                            );
                            add_at(
                                AccessKind::Store,
                                "atomicrmw",
                                Some(0),
                                None,
                                Size::Bytes(n),
                                false,
                            );
                        }
                    }
                    Opcode::LLVMAtomicCmpXchg => {
                        if let Some(n) = inst.operand(1).and_then(|v| m.store_size(v.type_of())) {
                            add_at(
                                AccessKind::Load,
                                "cmpxchg",
                                Some(0),
                                None,
                                Size::Bytes(n),
                                false,
                            );
                            add_at(
                                AccessKind::Store,
                                "cmpxchg",
                                Some(0),
                                None,
                                Size::IfExchanged(n),
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
                                None,
                                None,
                                Size::Bytes(n),
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
                                    Some(0),
                                    None,
                                    size,
                                    true,
                                );
                            }
                        }
                        if name == "llvm.va_start" {
                            // x86-64 SysV: the prologue's register save area, which `va_arg`
                            // reads, is written by no IR store; so is the `va_list` itself.
                            let list = Size::Bytes(VA_LIST_BYTES);
                            add_at(AccessKind::Clobber, "va_start", Some(0), None, list, true);
                            let saved = Size::Bytes(REG_SAVE_AREA_BYTES);
                            let at = Some(REG_SAVE_AREA_OFFSET);
                            add_at(
                                AccessKind::Clobber,
                                "va_start registers",
                                Some(0),
                                at,
                                saved,
                                true,
                            );
                        }
                        if name == "llvm.va_copy" {
                            let list = Size::Bytes(VA_LIST_BYTES);
                            add_at(AccessKind::Clobber, "va_copy", Some(0), None, list, true);
                        }
                        for &(kind, what, ptr, size) in call_accesses(&name) {
                            let after = kind == AccessKind::Clobber;
                            add_at(kind, what, ptr, None, size, after);
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
            match (p.after, next) {
                (true, Some(next)) => b.before(next),
                (true, None) => continue, // a call is never a terminator
                (false, _) => b.before(p.inst),
            }
            let ptr = match p.ptr {
                Some(i) => p.inst.operand(i).expect("pointer operand"),
                None => p.inst,
            };
            let address = match p.deref {
                None => b.ptr_to_i64(ptr, i64t),
                Some(offset) => {
                    let slot = b.gep(i64t, ptr, &[m.const_int(i64t, offset / 8)]);
                    b.load(i64t, slot)
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
                Size::Product => b.mul(op(0), op(1)),
                Size::Result => b.to_i64(b.positive_or_zero(p.inst), i64t, false),
                Size::ResultPlusOne => result_plus_one(),
                Size::ResultPlusOneAtMost(i) => {
                    let (written, n) = (result_plus_one(), op(i));
                    b.select(b.icmp_uge(written, n), n, written)
                }
                Size::StrlenPlusOne(i) => {
                    let strlen_ty = m.fn_type(i64t, &[m.ptr()]);
                    let strlen = m.declare("strlen", strlen_ty);
                    let operand = p.inst.operand(i).expect("string operand");
                    let len = b.call(strlen_ty, strlen, &[operand]);
                    b.add(len, m.const_int(i64t, 1))
                }
                Size::ResultTimes(i) => b.mul(b.to_i64(p.inst, i64t, false), op(i)),
                Size::IfExchanged(n) => {
                    let ok = b.extract_value(p.inst, 1);
                    b.select(ok, m.const_int(i64t, n), m.const_int(i64t, 0))
                }
            };
            let args = [m.const_int(i64t, h.id_word(p.id)), address, size];
            b.call(h.access_ty, h.access, &args);
        }
        self.probes.len()
    }
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
    /// `db` is the program database, as for event flushes.
    pub fn for_event_buffer(m: Mod<'m>, db: Value<'m>, db_len: u64) -> Helper<'m> {
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
        Self::build(m, (buf, idx, cap), (flush_ty, flush, &args), None, None)
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
            id = b.add(id, word);
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
