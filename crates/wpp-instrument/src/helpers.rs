//! The inline helpers every instrumented module gets: internal `alwaysinline` functions that
//! append an event word to the thread-local buffer, track the shadow-stack depth and repair it
//! after non-local control transfers. See `wpp_abi` for the contract they implement.
//!
//! Generating small helper functions and letting LLVM's always-inliner expand them (it runs at
//! every optimization level, `-O0` included) keeps the instrumentation passes free of block
//! splitting: a probe is a single `call` inserted before an instruction, yet the final machine
//! code has the buffer append inline, with the runtime reached only on a full buffer.

use crate::ir::{Mod, TlsModel, Type, Value};
use wpp_abi as abi;

/// Handles to the helpers and globals of one module.
pub struct Helpers<'m> {
    /// `void emit(i64 word)`.
    pub emit: Value<'m>,
    /// Type of `emit`.
    pub emit_ty: Type<'m>,
    /// `i32 enter(i64 word)`: emit, then increment the depth and return it.
    pub enter: Value<'m>,
    /// Type of `enter`.
    pub enter_ty: Type<'m>,
    /// `void leave()`: emit `Leave`, decrement the depth.
    pub leave: Value<'m>,
    /// Type of `leave`.
    pub leave_ty: Type<'m>,
    /// `void restore(i32 saved)`: if the depth differs from `saved`, ask the runtime to emit the
    /// missing `Leave`s.
    pub restore: Value<'m>,
    /// Type of `restore`.
    pub restore_ty: Type<'m>,
    /// `void record(i64 path)`: emit `Path(path)`.
    pub record: Value<'m>,
    /// Type of `record`.
    pub record_ty: Type<'m>,
}

impl<'m> Helpers<'m> {
    /// Adds the thread-local globals, runtime declarations and helpers to `m`.
    ///
    /// `db` is the module's `__wpp_program_db` global and `db_len` its length; they are passed
    /// to the runtime on every flush. A shared library, registered as `base` says
    /// ([`register`]), shares the executable's thread-locals and adds its base to its
    /// `Enter` words (`wpp_abi`, *Shared libraries*).
    pub fn build(m: Mod<'m>, db: Value<'m>, db_len: u64, base: Option<Value<'m>>) -> Helpers<'m> {
        let i32t = m.int(32);
        let i64t = m.int(64);
        let ptr = m.ptr();
        let void = m.void();
        let (buf, idx, depth) = thread_locals(m, base.is_some());
        let flush_ty = m.fn_type(void, &[ptr, ptr, ptr, ptr, i64t]);
        let flush = m.declare(abi::SYM_FLUSH, flush_ty);
        m.add_fn_attr(flush, "nounwind");
        m.add_fn_attr(flush, "cold");
        let unwind_ty = m.fn_type(void, &[i32t]);
        let unwind = m.declare(abi::SYM_UNWIND, unwind_ty);
        m.add_fn_attr(unwind, "nounwind");
        m.add_fn_attr(unwind, "cold");

        let b = m.builder();
        let helper = |name: &str, ty: Type<'m>| {
            let f = m.add_internal_function(name, ty);
            m.add_fn_attr(f, "alwaysinline");
            m.add_fn_attr(f, "nounwind");
            f
        };

        // emit(word)
        let emit_ty = m.fn_type(void, &[i64t]);
        let emit = helper("__wpp_emit", emit_ty);
        {
            let entry = m.append_block(emit, "entry");
            let slow = m.append_block(emit, "flush");
            let fast = m.append_block(emit, "append");
            b.at_end(entry);
            if let Some(base) = base {
                let check = m.append_block(emit, "check");
                let skip = m.append_block(emit, "refused");
                let recorded = b.icmp_ne(b.load(i64t, base), m.const_int(i64t, abi::REFUSED_BASE));
                b.cond_br(recorded, check, skip);
                b.at_end(skip);
                b.ret_void();
                b.at_end(check);
            }
            let i = b.load(i32t, idx);
            let full = b.icmp_uge(i, m.const_int(i32t, u64::from(abi::BUF_CAP)));
            b.cond_br(full, slow, fast);
            b.at_end(slow);
            b.call(
                flush_ty,
                flush,
                &[buf, idx, depth, db, m.const_int(i64t, db_len)],
            );
            b.br(fast);
            b.at_end(fast);
            let j = b.load(i32t, idx);
            let j64 = b.zext(j, i64t);
            let base = b.load(ptr, buf);
            let slot = b.gep(i64t, base, &[j64]);
            b.store(param(emit, 0), slot);
            b.store(b.add(j, m.const_int(i32t, 1)), idx);
            b.ret_void();
        }

        // enter(word) -> depth
        let enter_ty = m.fn_type(i32t, &[i64t]);
        let enter = helper("__wpp_enter", enter_ty);
        {
            let entry = m.append_block(enter, "entry");
            b.at_end(entry);
            let word = match base {
                Some(base) => b.add(param(enter, 0), b.load(i64t, base)),
                None => param(enter, 0),
            };
            b.call(emit_ty, emit, &[word]);
            let d = b.load(i32t, depth);
            let d1 = b.add(d, m.const_int(i32t, 1));
            b.store(d1, depth);
            b.ret(d1);
        }

        // leave()
        let leave_ty = m.fn_type(void, &[]);
        let leave = helper("__wpp_leave", leave_ty);
        {
            let entry = m.append_block(leave, "entry");
            b.at_end(entry);
            b.call(emit_ty, emit, &[m.const_int(i64t, abi::LEAVE_WORD)]);
            let d = b.load(i32t, depth);
            b.store(b.sub(d, m.const_int(i32t, 1)), depth);
            b.ret_void();
        }

        // restore(saved)
        let restore_ty = m.fn_type(void, &[i32t]);
        let restore = helper("__wpp_restore", restore_ty);
        {
            let entry = m.append_block(restore, "entry");
            let slow = m.append_block(restore, "unwind");
            let done = m.append_block(restore, "done");
            b.at_end(entry);
            let d = b.load(i32t, depth);
            let ne = b.icmp_ne(d, param(restore, 0));
            b.cond_br(ne, slow, done);
            b.at_end(slow);
            b.call(unwind_ty, unwind, &[param(restore, 0)]);
            b.br(done);
            b.at_end(done);
            b.ret_void();
        }

        // record(path)
        let record_ty = m.fn_type(void, &[i64t]);
        let record = helper("__wpp_record", record_ty);
        {
            let entry = m.append_block(record, "entry");
            b.at_end(entry);
            let w = b.shl(
                param(record, 0),
                m.const_int(i64t, u64::from(abi::TAG_BITS)),
            );
            let w = b.or(w, m.const_int(i64t, abi::TAG_PATH));
            b.call(emit_ty, emit, &[w]);
            b.ret_void();
        }

        Helpers {
            emit,
            emit_ty,
            enter,
            enter_ty,
            leave,
            leave_ty,
            restore,
            restore_ty,
            record,
            record_ty,
        }
    }
}

/// `__wpp_buf`, `__wpp_idx` and `__wpp_depth`: defined by an executable, declared by a
/// shared library.
fn thread_locals(m: Mod<'_>, shared: bool) -> (Value<'_>, Value<'_>, Value<'_>) {
    let (i32t, ptr) = (m.int(32), m.ptr());
    let [buf, idx, depth] = [
        (abi::SYM_BUF, ptr, m.const_null(ptr)),
        (
            abi::SYM_IDX,
            i32t,
            m.const_int(i32t, u64::from(abi::BUF_CAP)),
        ),
        (abi::SYM_DEPTH, i32t, m.const_int(i32t, 0)),
    ]
    .map(|(name, ty, init)| thread_local(m, name, ty, init, shared));
    (buf, idx, depth)
}

/// A thread-local shared by every module of the process (`wpp_abi`, *Shared libraries*):
/// defined `local-exec` by an executable, declared `initial-exec` by a shared library.
pub(crate) fn thread_local<'m>(
    m: Mod<'m>,
    name: &str,
    ty: Type<'m>,
    init: Value<'m>,
    shared: bool,
) -> Value<'m> {
    let (g, model) = match shared {
        true => (m.declare_global(name, ty, true), TlsModel::InitialExec),
        false => (
            m.add_global(name, ty, init, false, false, true),
            TlsModel::LocalExec,
        ),
    };
    m.set_tls_model(g, model);
    g
}

/// What a shared library's registration gives its probes.
pub(crate) struct Registration<'m> {
    /// Its base, as an `Enter` word offset.
    pub base: Value<'m>,
    /// Its memory base, added to its memory-instruction ids (`trace-addr`).
    pub memory_base: Option<Value<'m>>,
}

/// A shared library's bases and the constructor and destructor that register and unregister
/// it: priority 0, so the constructor runs before the library's own constructors (which may
/// run instrumented code) and the destructor after its own. `memory` is its memory database
/// and its length (`trace-addr`), registered with its functions.
pub(crate) fn register<'m>(
    m: Mod<'m>,
    db: Value<'m>,
    db_len: u64,
    memory: Option<(Value<'m>, u64)>,
) -> Registration<'m> {
    let (i64t, ptr, void) = (m.int(64), m.ptr(), m.void());
    let word = |name, init| m.add_global(name, i64t, m.const_int(i64t, init), true, false, false);
    let base = word("__wpp_module_base", 0);
    // Refused until registered: an access that ran first (another module's constructor
    // calling in) would otherwise take an id of the executable's range.
    let memory_base = memory.map(|_| word("__wpp_memory_base", abi::REFUSED_BASE));
    let b = m.builder();
    let register = match memory {
        Some(_) => abi::SYM_REGISTER_MEMORY,
        None => abi::SYM_REGISTER,
    };
    let calls = [
        (register, "__wpp_module_register", false),
        (abi::SYM_UNREGISTER, "__wpp_module_unregister", true),
    ];
    for (runtime, name, destructor) in calls {
        let (ty, args) = match (destructor, memory.zip(memory_base)) {
            (false, None) => (
                m.fn_type(void, &[ptr, i64t, ptr]),
                vec![db, m.const_int(i64t, db_len), base],
            ),
            (false, Some(((mdb, mdb_len), memory_base))) => (
                m.fn_type(void, &[ptr, i64t, ptr, ptr, i64t, ptr]),
                vec![
                    db,
                    m.const_int(i64t, db_len),
                    base,
                    mdb,
                    m.const_int(i64t, mdb_len),
                    memory_base,
                ],
            ),
            (true, _) => (m.fn_type(void, &[ptr]), vec![base]),
        };
        let callee = m.declare(runtime, ty);
        m.add_fn_attr(callee, "nounwind");
        let f = m.add_internal_function(name, m.fn_type(void, &[]));
        m.add_fn_attr(f, "nounwind");
        b.at_end(m.append_block(f, "entry"));
        b.call(ty, callee, &args);
        b.ret_void();
        m.add_to_init_list(f, 0, destructor);
    }
    Registration { base, memory_base }
}

fn param(f: Value<'_>, i: u32) -> Value<'_> {
    crate::ir::param(f, i)
}
