//! Thin, safe wrappers over the parts of the LLVM C API that inkwell does not cover well:
//! walking instructions by opcode, reading call targets and attributes, debug locations, and an
//! IR builder positioned before arbitrary instructions.
//!
//! Every wrapper takes handles that come from a live [`inkwell::module::Module`] borrowed for
//! `'m`, so the underlying LLVM objects outlive the handles. This module is the only place in the
//! crate with `unsafe`.

use inkwell::llvm_sys::core as c;
use inkwell::llvm_sys::debuginfo as di;
use inkwell::llvm_sys::error as llvm_error;
use inkwell::llvm_sys::prelude::{
    LLVMBasicBlockRef, LLVMBuilderRef, LLVMContextRef, LLVMMetadataRef, LLVMModuleRef, LLVMTypeRef,
    LLVMValueRef,
};
use inkwell::llvm_sys::transforms::pass_builder as pb;
use inkwell::llvm_sys::{
    LLVMAtomicOrdering, LLVMAtomicRMWBinOp, LLVMLinkage, LLVMOpcode, LLVMTailCallKind,
};
use std::ffi::{CStr, CString};
use std::marker::PhantomData;

pub use inkwell::llvm_sys::LLVMOpcode as Opcode;

/// A value (function, instruction, constant, global) of a module alive for `'m`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Value<'m>(LLVMValueRef, PhantomData<&'m ()>);

/// A basic block of a module alive for `'m`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Block<'m>(LLVMBasicBlockRef, PhantomData<&'m ()>);

/// A type of a context alive for `'m`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Type<'m>(LLVMTypeRef, PhantomData<&'m ()>);

fn opt_value<'m>(v: LLVMValueRef) -> Option<Value<'m>> {
    (!v.is_null()).then_some(Value(v, PhantomData))
}

fn opt_block<'m>(b: LLVMBasicBlockRef) -> Option<Block<'m>> {
    (!b.is_null()).then_some(Block(b, PhantomData))
}

fn cstr(s: &str) -> CString {
    CString::new(s.replace('\0', "")).expect("NULs removed")
}

/// A module handle with the context it lives in.
#[derive(Clone, Copy)]
pub struct Mod<'m> {
    m: LLVMModuleRef,
    ctx: LLVMContextRef,
    _p: PhantomData<&'m ()>,
}

impl<'m> Mod<'m> {
    /// Wraps an inkwell module.
    pub fn new(module: &'m inkwell::module::Module<'_>) -> Self {
        let m = module.as_mut_ptr();
        // SAFETY: `m` is a live module owned by `module`, borrowed for 'm.
        let ctx = unsafe { c::LLVMGetModuleContext(m) };
        Mod {
            m,
            ctx,
            _p: PhantomData,
        }
    }

    /// The module's source file name (`source_filename`): the compiled file for a module
    /// from one source, whatever the debug information.
    pub fn source_file_name(self) -> String {
        let mut len = 0usize;
        // SAFETY: the module is live; the returned bytes belong to it.
        unsafe {
            let p = c::LLVMGetSourceFileName(self.m, &mut len);
            if p.is_null() {
                return String::new();
            }
            String::from_utf8_lossy(std::slice::from_raw_parts(p.cast::<u8>(), len)).into_owned()
        }
    }

    /// The functions of the module, in order.
    pub fn functions(self) -> Vec<Value<'m>> {
        let mut out = Vec::new();
        // SAFETY: iterating the live module's function list with the C API.
        let mut f = unsafe { c::LLVMGetFirstFunction(self.m) };
        while !f.is_null() {
            out.push(Value(f, PhantomData));
            // SAFETY: `f` is a function of the live module.
            f = unsafe { c::LLVMGetNextFunction(f) };
        }
        out
    }

    /// The named global variable, if any.
    pub fn global(self, name: &str) -> Option<Value<'m>> {
        let n = cstr(name);
        // SAFETY: the module is live and `n` is a valid C string.
        opt_value(unsafe { c::LLVMGetNamedGlobal(self.m, n.as_ptr()) })
    }

    /// Runs passes over the module, written as `opt -passes=` writes them, for no particular
    /// target; LLVM's message if it cannot.
    pub fn run_passes(self, passes: &str) -> Result<(), String> {
        let p = cstr(passes);
        // SAFETY: the module is live and `p` a valid C string; the options are disposed here,
        // and an error is consumed by reading its message, which is copied and then disposed.
        unsafe {
            let options = pb::LLVMCreatePassBuilderOptions();
            let err = pb::LLVMRunPasses(self.m, p.as_ptr(), std::ptr::null_mut(), options);
            pb::LLVMDisposePassBuilderOptions(options);
            if err.is_null() {
                return Ok(());
            }
            let message = llvm_error::LLVMGetErrorMessage(err);
            let text = CStr::from_ptr(message).to_string_lossy().into_owned();
            llvm_error::LLVMDisposeErrorMessage(message);
            Err(text)
        }
    }

    /// The named function, if any.
    pub fn function(self, name: &str) -> Option<Value<'m>> {
        let n = cstr(name);
        // SAFETY: the module is live and `n` is a valid C string.
        opt_value(unsafe { c::LLVMGetNamedFunction(self.m, n.as_ptr()) })
    }

    /// `iN`.
    pub fn int(self, bits: u32) -> Type<'m> {
        // SAFETY: the context is live.
        Type(
            unsafe { c::LLVMIntTypeInContext(self.ctx, bits) },
            PhantomData,
        )
    }

    /// `void`.
    pub fn void(self) -> Type<'m> {
        // SAFETY: the context is live.
        Type(unsafe { c::LLVMVoidTypeInContext(self.ctx) }, PhantomData)
    }

    /// `ptr` (address space 0).
    pub fn ptr(self) -> Type<'m> {
        // SAFETY: the context is live.
        Type(
            unsafe { c::LLVMPointerTypeInContext(self.ctx, 0) },
            PhantomData,
        )
    }

    /// `[n x elem]`.
    pub fn array(self, elem: Type<'m>, n: u64) -> Type<'m> {
        // SAFETY: `elem` belongs to the live context.
        Type(unsafe { c::LLVMArrayType2(elem.0, n) }, PhantomData)
    }

    /// A function type.
    pub fn fn_type(self, ret: Type<'m>, params: &[Type<'m>]) -> Type<'m> {
        let mut ps: Vec<LLVMTypeRef> = params.iter().map(|t| t.0).collect();
        // SAFETY: all types belong to the live context; `ps` outlives the call.
        Type(
            unsafe { c::LLVMFunctionType(ret.0, ps.as_mut_ptr(), ps.len() as u32, 0) },
            PhantomData,
        )
    }

    /// An integer constant.
    pub fn const_int(self, ty: Type<'m>, v: u64) -> Value<'m> {
        // SAFETY: `ty` is an integer type of the live context.
        Value(unsafe { c::LLVMConstInt(ty.0, v, 0) }, PhantomData)
    }

    /// A constant byte array (no terminating NUL).
    pub fn const_bytes(self, bytes: &[u8]) -> Value<'m> {
        // SAFETY: the context is live; LLVM copies `bytes`.
        Value(
            unsafe {
                c::LLVMConstStringInContext2(self.ctx, bytes.as_ptr().cast(), bytes.len(), 1)
            },
            PhantomData,
        )
    }

    /// The all-zero constant of a type.
    pub fn const_null(self, ty: Type<'m>) -> Value<'m> {
        // SAFETY: `ty` belongs to the live context.
        Value(unsafe { c::LLVMConstNull(ty.0) }, PhantomData)
    }

    /// Adds a global variable with an initializer and linkage.
    pub fn add_global(
        self,
        name: &str,
        ty: Type<'m>,
        init: Value<'m>,
        internal: bool,
        constant: bool,
        thread_local: bool,
    ) -> Value<'m> {
        let n = cstr(name);
        // SAFETY: the module is live; `init` has type `ty`.
        unsafe {
            let g = c::LLVMAddGlobal(self.m, ty.0, n.as_ptr());
            c::LLVMSetInitializer(g, init.0);
            c::LLVMSetLinkage(
                g,
                if internal {
                    LLVMLinkage::LLVMInternalLinkage
                } else {
                    LLVMLinkage::LLVMExternalLinkage
                },
            );
            c::LLVMSetGlobalConstant(g, constant as i32);
            c::LLVMSetThreadLocal(g, thread_local as i32);
            Value(g, PhantomData)
        }
    }

    /// Declares (or returns the existing) external function.
    pub fn declare(self, name: &str, ty: Type<'m>) -> Value<'m> {
        if let Some(f) = self.function(name) {
            return f;
        }
        let n = cstr(name);
        // SAFETY: the module is live and `ty` is a function type of its context.
        Value(
            unsafe { c::LLVMAddFunction(self.m, n.as_ptr(), ty.0) },
            PhantomData,
        )
    }

    /// Adds an internal function with the given body-less signature, to be filled by the caller.
    pub fn add_internal_function(self, name: &str, ty: Type<'m>) -> Value<'m> {
        let f = self.declare(name, ty);
        // SAFETY: `f` is a function of the live module.
        unsafe { c::LLVMSetLinkage(f.0, LLVMLinkage::LLVMInternalLinkage) };
        f
    }

    /// Adds an enum attribute (e.g. `alwaysinline`, `nounwind`) to a function.
    pub fn add_fn_attr(self, f: Value<'m>, attr: &str) {
        // SAFETY: the context and function are live; the name is read for its length only.
        unsafe {
            let kind = c::LLVMGetEnumAttributeKindForName(attr.as_ptr().cast(), attr.len());
            let a = c::LLVMCreateEnumAttribute(self.ctx, kind, 0);
            c::LLVMAddAttributeAtIndex(f.0, u32::MAX, a);
        }
    }

    /// Appends a new basic block to a function.
    pub fn append_block(self, f: Value<'m>, name: &str) -> Block<'m> {
        let n = cstr(name);
        // SAFETY: `f` is a function of the live module/context.
        Block(
            unsafe { c::LLVMAppendBasicBlockInContext(self.ctx, f.0, n.as_ptr()) },
            PhantomData,
        )
    }

    /// A new IR builder in this module's context.
    pub fn builder(self) -> Builder<'m> {
        // SAFETY: the context is live; the builder is disposed in Drop.
        Builder(
            unsafe { c::LLVMCreateBuilderInContext(self.ctx) },
            PhantomData,
        )
    }

    /// Whether the function (or call site) has an enum attribute by name.
    pub fn fn_has_attr(self, f: Value<'m>, attr: &str) -> bool {
        // SAFETY: `f` is a live function; the name is read for its length only.
        unsafe {
            let kind = c::LLVMGetEnumAttributeKindForName(attr.as_ptr().cast(), attr.len());
            !c::LLVMGetEnumAttributeAtIndex(f.0, u32::MAX, kind).is_null()
        }
    }

    /// Removes an enum function attribute (by name) from a function, if it has it.
    pub fn remove_fn_attr(self, f: Value<'m>, attr: &str) {
        // SAFETY: `f` is a live function; the name is read for its length only.
        unsafe {
            let kind = c::LLVMGetEnumAttributeKindForName(attr.as_ptr().cast(), attr.len());
            c::LLVMRemoveEnumAttributeAtIndex(f.0, u32::MAX, kind);
        }
    }

    /// Removes an enum function attribute (by name) from a call site, if it has it.
    pub fn remove_call_attr(self, call: Value<'m>, attr: &str) {
        // SAFETY: `call` is a live call or invoke instruction.
        unsafe {
            let kind = c::LLVMGetEnumAttributeKindForName(attr.as_ptr().cast(), attr.len());
            c::LLVMRemoveCallSiteEnumAttribute(call.0, u32::MAX, kind);
        }
    }

    /// Whether a call site has an enum function attribute by name.
    pub fn call_has_attr(self, call: Value<'m>, attr: &str) -> bool {
        // SAFETY: `call` is a live call or invoke instruction.
        unsafe {
            let kind = c::LLVMGetEnumAttributeKindForName(attr.as_ptr().cast(), attr.len());
            !c::LLVMGetCallSiteEnumAttribute(call.0, u32::MAX, kind).is_null()
        }
    }
}

impl<'m> Value<'m> {
    /// The raw handle (for calls into inkwell's `llvm_sys`).
    pub fn raw(self) -> LLVMValueRef {
        self.0
    }

    /// The value's name (empty if unnamed).
    pub fn name(self) -> String {
        let mut len = 0usize;
        // SAFETY: the value is live; LLVM returns a pointer to `len` bytes it owns.
        unsafe {
            let p = c::LLVMGetValueName2(self.0, &mut len);
            if p.is_null() {
                return String::new();
            }
            String::from_utf8_lossy(std::slice::from_raw_parts(p.cast::<u8>(), len)).into_owned()
        }
    }

    /// Whether this function is only a declaration.
    pub fn is_declaration(self) -> bool {
        // SAFETY: the value is a live global.
        unsafe { c::LLVMIsDeclaration(self.0) != 0 }
    }

    /// Whether this global has `available_externally` linkage (its body is discarded).
    pub fn is_available_externally(self) -> bool {
        // SAFETY: the value is a live global.
        unsafe { c::LLVMGetLinkage(self.0) == LLVMLinkage::LLVMAvailableExternallyLinkage }
    }

    /// Whether this global is local to its translation unit (`static`: internal or private
    /// linkage), so that `llvm-link` renames it (`sq.17`) when another unit has one so named.
    pub fn is_local(self) -> bool {
        // SAFETY: the value is a live global.
        let linkage = unsafe { c::LLVMGetLinkage(self.0) };
        matches!(
            linkage,
            LLVMLinkage::LLVMInternalLinkage | LLVMLinkage::LLVMPrivateLinkage
        )
    }

    /// The source file of the translation unit a function was compiled in, as the compiler
    /// was given it (`util.c`), when its `DISubprogram` names one.
    pub fn unit_file(self) -> Option<String> {
        // `DISubprogram::getUnit` is its operand 5; the C API has no getter for it.
        const UNIT: usize = 5;
        // SAFETY: the value is a live function; metadata handles come from it, and each is
        // checked to be a compile unit before it is read as one.
        unsafe {
            let sp = di::LLVMGetSubprogram(self.0);
            if sp.is_null() {
                return None;
            }
            let ctx = c::LLVMGetModuleContext(c::LLVMGetGlobalParent(self.0));
            let node = c::LLVMMetadataAsValue(ctx, sp);
            let n = c::LLVMGetMDNodeNumOperands(node) as usize;
            if n <= UNIT {
                return None;
            }
            let mut ops = vec![std::ptr::null_mut(); n];
            c::LLVMGetMDNodeOperands(node, ops.as_mut_ptr());
            if ops[UNIT].is_null() || c::LLVMIsAMDNode(ops[UNIT]).is_null() {
                return None;
            }
            let unit = c::LLVMValueAsMetadata(ops[UNIT]);
            let kind = di::LLVMGetMetadataKind(unit);
            if !matches!(kind, di::LLVMMetadataKind::LLVMDICompileUnitMetadataKind) {
                return None;
            }
            let file = di::LLVMDIScopeGetFile(unit);
            if file.is_null() {
                return None;
            }
            let mut len = 0u32;
            let name = text(di::LLVMDIFileGetFilename(file, &mut len), len);
            (!name.is_empty()).then_some(name)
        }
    }

    /// The basic blocks of a function, in layout order.
    pub fn blocks(self) -> Vec<Block<'m>> {
        let mut out = Vec::new();
        // SAFETY: iterating a live function's block list.
        let mut b = unsafe { c::LLVMGetFirstBasicBlock(self.0) };
        while !b.is_null() {
            out.push(Block(b, PhantomData));
            // SAFETY: `b` is a block of the live function.
            b = unsafe { c::LLVMGetNextBasicBlock(b) };
        }
        out
    }

    /// The opcode of an instruction.
    pub fn opcode(self) -> LLVMOpcode {
        // SAFETY: the value is a live instruction.
        unsafe { c::LLVMGetInstructionOpcode(self.0) }
    }

    /// The next instruction in the block.
    pub fn next(self) -> Option<Value<'m>> {
        // SAFETY: the value is a live instruction.
        opt_value(unsafe { c::LLVMGetNextInstruction(self.0) })
    }

    /// The previous instruction in the block.
    pub fn prev(self) -> Option<Value<'m>> {
        // SAFETY: the value is a live instruction.
        opt_value(unsafe { c::LLVMGetPreviousInstruction(self.0) })
    }

    /// The called function of a call/invoke, when it is a direct call.
    pub fn called_function(self) -> Option<Value<'m>> {
        // SAFETY: the value is a live call or invoke instruction.
        unsafe {
            let v = c::LLVMGetCalledValue(self.0);
            if v.is_null() {
                return None;
            }
            opt_value(inkwell::llvm_sys::core::LLVMIsAFunction(v))
        }
    }

    /// Whether a call is `musttail`.
    pub fn is_musttail(self) -> bool {
        // SAFETY: the value is a live call instruction.
        unsafe { c::LLVMGetTailCallKind(self.0) == LLVMTailCallKind::LLVMTailCallKindMustTail }
    }

    /// The normal destination of an invoke.
    pub fn normal_dest(self) -> Block<'m> {
        // SAFETY: the value is a live invoke instruction.
        Block(unsafe { c::LLVMGetNormalDest(self.0) }, PhantomData)
    }

    /// The number of successors of a terminator.
    pub fn num_successors(self) -> u32 {
        // SAFETY: the value is a live terminator.
        unsafe { c::LLVMGetNumSuccessors(self.0) }
    }

    /// Successor `i` of a terminator.
    pub fn successor(self, i: u32) -> Block<'m> {
        // SAFETY: the value is a live terminator and `i` is below its successor count.
        Block(unsafe { c::LLVMGetSuccessor(self.0, i) }, PhantomData)
    }

    /// The source line of an instruction's debug location, 0 when it has none.
    pub fn debug_line(self) -> u32 {
        // SAFETY: the value is a live instruction.
        unsafe { c::LLVMGetDebugLocLine(self.0) }
    }

    /// A function's source file and line from its `DISubprogram`, when it has one.
    pub fn subprogram_location(self) -> Option<(String, u32)> {
        // SAFETY: the value is a live function; metadata handles come from it.
        unsafe {
            let sp = di::LLVMGetSubprogram(self.0);
            if sp.is_null() {
                return None;
            }
            let line = di::LLVMDISubprogramGetLine(sp);
            Some((scope_file(sp), line))
        }
    }

    /// The source file and line of an instruction's debug location, when it has one with a
    /// line: the file of its scope, which for code inlined from a header is the header.
    pub fn debug_location(self) -> Option<(String, u32)> {
        let line = self.debug_line();
        if line == 0 {
            return None;
        }
        // SAFETY: the value is a live instruction; metadata handles come from it.
        unsafe {
            let loc = di::LLVMInstructionGetDebugLoc(self.0);
            if loc.is_null() {
                return Some((String::new(), line));
            }
            Some((scope_file(di::LLVMDILocationGetScope(loc)), line))
        }
    }
}

/// The path of a debug-info scope's file (`directory/filename` when the name is relative, so
/// tools find the source from anywhere), or empty when it has none.
///
/// # Safety
/// `scope` must be null or a live `DIScope`.
unsafe fn scope_file(scope: LLVMMetadataRef) -> String {
    if scope.is_null() {
        return String::new();
    }
    let file = di::LLVMDIScopeGetFile(scope);
    if file.is_null() {
        return String::new();
    }
    let mut len = 0u32;
    let name = text(di::LLVMDIFileGetFilename(file, &mut len), len);
    let dir = text(di::LLVMDIFileGetDirectory(file, &mut len), len);
    if name.is_empty() || name.starts_with('/') || dir.is_empty() {
        name
    } else {
        format!("{dir}/{name}")
    }
}

/// The `len` bytes at `p`, which LLVM owns, as text (empty for null).
///
/// # Safety
/// `p` must be null or point to `len` readable bytes.
unsafe fn text(p: *const std::ffi::c_char, len: u32) -> String {
    if p.is_null() {
        return String::new();
    }
    String::from_utf8_lossy(std::slice::from_raw_parts(p.cast::<u8>(), len as usize)).into_owned()
}

impl<'m> Block<'m> {
    /// The raw handle.
    pub fn raw(self) -> LLVMBasicBlockRef {
        self.0
    }

    /// The instructions of the block, in order.
    pub fn instructions(self) -> Vec<Value<'m>> {
        let mut out = Vec::new();
        // SAFETY: iterating a live block's instruction list.
        let mut i = unsafe { c::LLVMGetFirstInstruction(self.0) };
        while !i.is_null() {
            out.push(Value(i, PhantomData));
            // SAFETY: `i` is an instruction of the live block.
            i = unsafe { c::LLVMGetNextInstruction(i) };
        }
        out
    }

    /// The first instruction that is not a phi.
    pub fn first_non_phi(self) -> Option<Value<'m>> {
        self.instructions()
            .into_iter()
            .find(|i| i.opcode() != Opcode::LLVMPHI)
    }

    /// The terminator.
    pub fn terminator(self) -> Option<Value<'m>> {
        // SAFETY: the block is live.
        opt_value(unsafe { c::LLVMGetBasicBlockTerminator(self.0) })
    }

    /// Wraps a raw handle.
    pub fn from_raw(b: LLVMBasicBlockRef) -> Option<Block<'m>> {
        opt_block(b)
    }
}

/// An IR builder.
pub struct Builder<'m>(LLVMBuilderRef, PhantomData<&'m ()>);

impl Drop for Builder<'_> {
    fn drop(&mut self) {
        // SAFETY: the builder was created by LLVMCreateBuilderInContext and is disposed once.
        unsafe { c::LLVMDisposeBuilder(self.0) }
    }
}

impl<'m> Builder<'m> {
    /// Positions the builder before an instruction.
    pub fn before(&self, inst: Value<'m>) {
        // SAFETY: builder and instruction are live.
        unsafe { c::LLVMPositionBuilderBefore(self.0, inst.0) }
    }

    /// Positions the builder at the end of a block.
    pub fn at_end(&self, b: Block<'m>) {
        // SAFETY: builder and block are live.
        unsafe { c::LLVMPositionBuilderAtEnd(self.0, b.0) }
    }

    /// `call fty f(args)`.
    pub fn call(&self, fty: Type<'m>, f: Value<'m>, args: &[Value<'m>]) -> Value<'m> {
        let mut a: Vec<LLVMValueRef> = args.iter().map(|v| v.0).collect();
        let empty = c"";
        // SAFETY: builder positioned in a live block; `f` has type `fty`; `a` outlives the call.
        Value(
            unsafe {
                c::LLVMBuildCall2(
                    self.0,
                    fty.0,
                    f.0,
                    a.as_mut_ptr(),
                    a.len() as u32,
                    empty.as_ptr(),
                )
            },
            PhantomData,
        )
    }

    /// `load ty, ptr p`.
    pub fn load(&self, ty: Type<'m>, p: Value<'m>) -> Value<'m> {
        // SAFETY: builder positioned in a live block; `p` is a pointer.
        Value(
            unsafe { c::LLVMBuildLoad2(self.0, ty.0, p.0, c"".as_ptr()) },
            PhantomData,
        )
    }

    /// `store v, ptr p`.
    pub fn store(&self, v: Value<'m>, p: Value<'m>) {
        // SAFETY: builder positioned in a live block; `p` is a pointer.
        unsafe { c::LLVMBuildStore(self.0, v.0, p.0) };
    }

    /// `*p += 1` on a counter of integer type `ty`. Plain, it is a load, an add and a store;
    /// `atomic` makes it one `atomicrmw add … monotonic` (a `lock xadd` on x86-64), so
    /// increments of concurrent threads are never lost. Monotonic suffices: a count is only
    /// read after the threads that wrote it were joined or the process exits, and those
    /// synchronize.
    pub fn increment(&self, ty: Type<'m>, p: Value<'m>, atomic: bool) {
        if atomic {
            self.fetch_increment(ty, p);
        } else {
            // SAFETY: `ty` is an integer type of the live context.
            let one = unsafe { c::LLVMConstInt(ty.0, 1, 0) };
            let c = self.load(ty, p);
            self.store(self.add(c, Value(one, PhantomData)), p);
        }
    }

    /// `atomicrmw add ptr p, 1 monotonic`: the counter's value before the increment. Each
    /// thread's increments follow its synchronizations in the counter's modification order,
    /// which is all an order of events across threads needs.
    pub fn fetch_increment(&self, ty: Type<'m>, p: Value<'m>) -> Value<'m> {
        // SAFETY: `ty` is an integer type of the live context.
        let one = unsafe { c::LLVMConstInt(ty.0, 1, 0) };
        // SAFETY: builder positioned in a live block; `p` points to a `ty`.
        Value(
            unsafe {
                c::LLVMBuildAtomicRMW(
                    self.0,
                    LLVMAtomicRMWBinOp::LLVMAtomicRMWBinOpAdd,
                    p.0,
                    one,
                    LLVMAtomicOrdering::LLVMAtomicOrderingMonotonic,
                    0,
                )
            },
            PhantomData,
        )
    }

    /// `add a, b`.
    pub fn add(&self, a: Value<'m>, b: Value<'m>) -> Value<'m> {
        // SAFETY: builder positioned; operands of the same integer type.
        Value(
            unsafe { c::LLVMBuildAdd(self.0, a.0, b.0, c"".as_ptr()) },
            PhantomData,
        )
    }

    /// `sub a, b`.
    pub fn sub(&self, a: Value<'m>, b: Value<'m>) -> Value<'m> {
        // SAFETY: builder positioned; operands of the same integer type.
        Value(
            unsafe { c::LLVMBuildSub(self.0, a.0, b.0, c"".as_ptr()) },
            PhantomData,
        )
    }

    fn icmp(
        &self,
        predicate: inkwell::llvm_sys::LLVMIntPredicate,
        a: Value<'m>,
        b: Value<'m>,
    ) -> Value<'m> {
        // SAFETY: builder positioned; operands of the same integer type.
        Value(
            unsafe { c::LLVMBuildICmp(self.0, predicate, a.0, b.0, c"".as_ptr()) },
            PhantomData,
        )
    }

    /// `icmp uge a, b`.
    pub fn icmp_uge(&self, a: Value<'m>, b: Value<'m>) -> Value<'m> {
        self.icmp(inkwell::llvm_sys::LLVMIntPredicate::LLVMIntUGE, a, b)
    }

    /// `icmp ne a, b`.
    pub fn icmp_ne(&self, a: Value<'m>, b: Value<'m>) -> Value<'m> {
        self.icmp(inkwell::llvm_sys::LLVMIntPredicate::LLVMIntNE, a, b)
    }

    /// `icmp eq a, b`.
    pub fn icmp_eq(&self, a: Value<'m>, b: Value<'m>) -> Value<'m> {
        self.icmp(inkwell::llvm_sys::LLVMIntPredicate::LLVMIntEQ, a, b)
    }

    /// `icmp sge a, b`.
    pub fn icmp_sge(&self, a: Value<'m>, b: Value<'m>) -> Value<'m> {
        self.icmp(inkwell::llvm_sys::LLVMIntPredicate::LLVMIntSGE, a, b)
    }

    /// `icmp sgt a, b`.
    pub fn icmp_sgt(&self, a: Value<'m>, b: Value<'m>) -> Value<'m> {
        self.icmp(inkwell::llvm_sys::LLVMIntPredicate::LLVMIntSGT, a, b)
    }

    /// `zext v to ty`.
    pub fn zext(&self, v: Value<'m>, ty: Type<'m>) -> Value<'m> {
        // SAFETY: builder positioned; `v` is an integer narrower than `ty`.
        Value(
            unsafe { c::LLVMBuildZExt(self.0, v.0, ty.0, c"".as_ptr()) },
            PhantomData,
        )
    }

    /// `getelementptr ty, ptr base, idx...` (inbounds).
    pub fn gep(&self, ty: Type<'m>, base: Value<'m>, idx: &[Value<'m>]) -> Value<'m> {
        let mut i: Vec<LLVMValueRef> = idx.iter().map(|v| v.0).collect();
        // SAFETY: builder positioned; indices are integers valid for `ty`.
        Value(
            unsafe {
                c::LLVMBuildInBoundsGEP2(
                    self.0,
                    ty.0,
                    base.0,
                    i.as_mut_ptr(),
                    i.len() as u32,
                    c"".as_ptr(),
                )
            },
            PhantomData,
        )
    }

    /// `br label b`.
    pub fn br(&self, b: Block<'m>) {
        // SAFETY: builder positioned at the end of a live block.
        unsafe { c::LLVMBuildBr(self.0, b.0) };
    }

    /// `br i1 cond, label t, label f`.
    pub fn cond_br(&self, cond: Value<'m>, t: Block<'m>, f: Block<'m>) {
        // SAFETY: builder positioned at the end of a live block; `cond` is i1.
        unsafe { c::LLVMBuildCondBr(self.0, cond.0, t.0, f.0) };
    }

    /// `ret void`.
    pub fn ret_void(&self) {
        // SAFETY: builder positioned at the end of a live block.
        unsafe { c::LLVMBuildRetVoid(self.0) };
    }

    /// `ret v`.
    pub fn ret(&self, v: Value<'m>) {
        // SAFETY: builder positioned at the end of a live block.
        unsafe { c::LLVMBuildRet(self.0, v.0) };
    }
}

/// Parameter `i` of a function.
pub fn param<'m>(f: Value<'m>, i: u32) -> Value<'m> {
    // SAFETY: `f` is a live function with more than `i` parameters.
    Value(unsafe { c::LLVMGetParam(f.0, i) }, PhantomData)
}

impl<'m> Mod<'m> {
    /// Inserts a new block right before `before` in its function.
    pub fn insert_block_before(self, before: Block<'m>, name: &str) -> Block<'m> {
        let n = cstr(name);
        // SAFETY: `before` is a live block of this context.
        Block(
            unsafe { c::LLVMInsertBasicBlockInContext(self.ctx, before.0, n.as_ptr()) },
            PhantomData,
        )
    }
}

impl<'m> Value<'m> {
    /// Sets successor `i` of a terminator (inkwell has no API for this).
    pub fn set_successor(self, i: u32, b: Block<'m>) {
        // SAFETY: the value is a live terminator with more than `i` successors; `b` is a block
        // of the same function.
        unsafe { c::LLVMSetSuccessor(self.0, i, b.0) }
    }

    /// The incoming (value, block) pairs of a phi.
    pub fn incoming(self) -> Vec<(Value<'m>, Block<'m>)> {
        // SAFETY: the value is a live phi; indices are below its incoming count.
        unsafe {
            (0..c::LLVMCountIncoming(self.0))
                .map(|i| {
                    (
                        Value(c::LLVMGetIncomingValue(self.0, i), PhantomData),
                        Block(c::LLVMGetIncomingBlock(self.0, i), PhantomData),
                    )
                })
                .collect()
        }
    }

    /// Replaces every use of this value with `other` and deletes this instruction.
    pub fn replace_and_erase(self, other: Value<'m>) {
        // SAFETY: both values are live and of the same type; `self` is an instruction that no
        // longer has uses after the replacement.
        unsafe {
            c::LLVMReplaceAllUsesWith(self.0, other.0);
            c::LLVMInstructionEraseFromParent(self.0);
        }
    }

    /// Whether a call's callee is an intrinsic, inline asm, or a wpp helper — calls that
    /// cannot run instrumented code.
    pub fn calls_nothing_instrumented(self) -> bool {
        // SAFETY: the value is a live call/invoke/callbr instruction.
        unsafe {
            let v = c::LLVMGetCalledValue(self.0);
            if v.is_null() || !c::LLVMIsAInlineAsm(v).is_null() {
                return true;
            }
            let f = c::LLVMIsAFunction(v);
            if f.is_null() {
                return false;
            }
            if c::LLVMGetIntrinsicID(f) != 0 {
                return true;
            }
        }
        self.called_function()
            .is_some_and(|f| f.name().starts_with("__wpp_"))
    }
}

impl<'m> Builder<'m> {
    /// `phi ty [v, b]...`.
    pub fn phi(&self, ty: Type<'m>, incoming: &[(Value<'m>, Block<'m>)]) -> Value<'m> {
        let mut vs: Vec<LLVMValueRef> = incoming.iter().map(|x| x.0 .0).collect();
        let mut bs: Vec<LLVMBasicBlockRef> = incoming.iter().map(|x| x.1 .0).collect();
        // SAFETY: builder positioned at the top of a live block; values have type `ty`.
        unsafe {
            let p = c::LLVMBuildPhi(self.0, ty.0, c"".as_ptr());
            c::LLVMAddIncoming(p, vs.as_mut_ptr(), bs.as_mut_ptr(), vs.len() as u32);
            Value(p, PhantomData)
        }
    }

    /// `alloca ty`.
    pub fn alloca(&self, ty: Type<'m>) -> Value<'m> {
        // SAFETY: builder positioned in a live block.
        Value(
            unsafe { c::LLVMBuildAlloca(self.0, ty.0, c"wpp.path".as_ptr()) },
            PhantomData,
        )
    }

    /// `shl a, b`.
    pub fn shl(&self, a: Value<'m>, b: Value<'m>) -> Value<'m> {
        // SAFETY: builder positioned; operands of the same integer type.
        Value(
            unsafe { c::LLVMBuildShl(self.0, a.0, b.0, c"".as_ptr()) },
            PhantomData,
        )
    }

    /// `or a, b`.
    pub fn or(&self, a: Value<'m>, b: Value<'m>) -> Value<'m> {
        // SAFETY: builder positioned; operands of the same integer type.
        Value(
            unsafe { c::LLVMBuildOr(self.0, a.0, b.0, c"".as_ptr()) },
            PhantomData,
        )
    }
}

impl<'m> Value<'m> {
    /// The type of a value.
    pub fn type_of(self) -> Type<'m> {
        // SAFETY: the value is live.
        Type(unsafe { c::LLVMTypeOf(self.0) }, PhantomData)
    }

    /// The bytes an `alloca` allocates, when its element count is a constant.
    pub fn alloca_bytes(self, m: Mod<'m>) -> Option<u64> {
        // SAFETY: the value is a live `alloca` (callers check the opcode).
        let ty = Type(unsafe { c::LLVMGetAllocatedType(self.0) }, PhantomData);
        let count = self.operand(0)?.const_int_value()?;
        m.alloc_size(ty)?.checked_mul(count)
    }
}

impl<'m> Mod<'m> {
    /// A literal struct type.
    pub fn struct_type(self, fields: &[Type<'m>]) -> Type<'m> {
        let mut f: Vec<LLVMTypeRef> = fields.iter().map(|t| t.0).collect();
        // SAFETY: the context is live; field types belong to it.
        Type(
            unsafe { c::LLVMStructTypeInContext(self.ctx, f.as_mut_ptr(), f.len() as u32, 0) },
            PhantomData,
        )
    }

    /// A constant literal struct.
    pub fn const_struct(self, fields: &[Value<'m>]) -> Value<'m> {
        let mut f: Vec<LLVMValueRef> = fields.iter().map(|v| v.0).collect();
        // SAFETY: the context is live; fields are constants of it.
        Value(
            unsafe { c::LLVMConstStructInContext(self.ctx, f.as_mut_ptr(), f.len() as u32, 0) },
            PhantomData,
        )
    }

    /// A constant array.
    pub fn const_array(self, elem: Type<'m>, items: &[Value<'m>]) -> Value<'m> {
        let mut v: Vec<LLVMValueRef> = items.iter().map(|x| x.0).collect();
        // SAFETY: items are constants of type `elem`.
        Value(
            unsafe { c::LLVMConstArray2(elem.0, v.as_mut_ptr(), v.len() as u64) },
            PhantomData,
        )
    }
}

/// Memory-access inspection and the few builders `trace-addr` probes need.
impl<'m> Value<'m> {
    /// Operand `i` of an instruction (for calls, argument `i`).
    pub fn operand(self, i: u32) -> Option<Value<'m>> {
        // SAFETY: the value is a live user; the index is checked against its operand count.
        unsafe {
            if i32::try_from(i).is_ok_and(|i| i < c::LLVMGetNumOperands(self.0)) {
                opt_value(c::LLVMGetOperand(self.0, i))
            } else {
                None
            }
        }
    }

    /// The arguments of a call (its operands without the callee).
    pub fn num_arguments(self) -> u32 {
        // SAFETY: the value is a live call instruction.
        unsafe { c::LLVMGetNumArgOperands(self.0) }
    }

    /// The bytes of a constant global's string initializer (`@.str = private constant
    /// [N x i8] c"..."`), its terminating zero included.
    pub fn const_string(self) -> Option<Vec<u8>> {
        // SAFETY: the value is live; only a constant global's initializer is read, and only
        // when it is a constant data array of bytes, whose `len` bytes LLVM owns.
        unsafe {
            if c::LLVMIsAGlobalVariable(self.0).is_null() || c::LLVMIsGlobalConstant(self.0) == 0 {
                return None;
            }
            let init = c::LLVMGetInitializer(self.0);
            if init.is_null() || c::LLVMIsConstantString(init) == 0 {
                return None;
            }
            let mut len = 0;
            let bytes = c::LLVMGetAsString(init, &mut len);
            Some(std::slice::from_raw_parts(bytes.cast::<u8>(), len).to_vec())
        }
    }

    /// Whether the value is a constant integer, and its zero-extended value.
    pub fn const_int_value(self) -> Option<u64> {
        // SAFETY: the value is live; only constant integers are read.
        unsafe {
            (!c::LLVMIsAConstantInt(self.0).is_null()).then(|| c::LLVMConstIntGetZExtValue(self.0))
        }
    }

    /// The source column of an instruction's debug location, 0 when it has none.
    pub fn debug_column(self) -> u32 {
        // SAFETY: the value is a live instruction.
        unsafe { c::LLVMGetDebugLocColumn(self.0) }
    }

    /// The intrinsic id of a function (0 for ordinary functions).
    pub fn intrinsic_id(self) -> u32 {
        // SAFETY: the value is a live function.
        unsafe { c::LLVMGetIntrinsicID(self.0) }
    }
}

impl<'m> Mod<'m> {
    /// The store size in bytes of a sized type under the module's data layout (`None` for
    /// scalable vectors, whose size is only known at run time).
    pub fn store_size(self, ty: Type<'m>) -> Option<u64> {
        use inkwell::llvm_sys::LLVMTypeKind;
        // SAFETY: the module and type are live; the data layout belongs to the module.
        unsafe {
            if c::LLVMGetTypeKind(ty.0) == LLVMTypeKind::LLVMScalableVectorTypeKind
                || c::LLVMTypeIsSized(ty.0) == 0
            {
                return None;
            }
            let dl = inkwell::llvm_sys::target::LLVMGetModuleDataLayout(self.m);
            Some(inkwell::llvm_sys::target::LLVMStoreSizeOfType(dl, ty.0))
        }
    }

    /// The allocation size in bytes (with tail padding) of a sized type (`None` as for
    /// [`Mod::store_size`]).
    pub fn alloc_size(self, ty: Type<'m>) -> Option<u64> {
        self.store_size(ty)?;
        // SAFETY: as in `store_size`; the type is sized.
        unsafe {
            let dl = inkwell::llvm_sys::target::LLVMGetModuleDataLayout(self.m);
            Some(inkwell::llvm_sys::target::LLVMABISizeOfType(dl, ty.0))
        }
    }

    /// The name of an intrinsic by id (`llvm.memcpy.p0.p0.i64` → `llvm.memcpy`).
    pub fn intrinsic_name(self, id: u32) -> String {
        let mut len = 0usize;
        // SAFETY: LLVM returns a static name of `len` bytes for a valid id.
        unsafe {
            let p = c::LLVMIntrinsicGetName(id, &mut len);
            if p.is_null() {
                return String::new();
            }
            String::from_utf8_lossy(std::slice::from_raw_parts(p.cast::<u8>(), len)).into_owned()
        }
    }
}

impl<'m> Builder<'m> {
    /// `ptrtoint p to i64`.
    pub fn ptr_to_i64(&self, p: Value<'m>, i64t: Type<'m>) -> Value<'m> {
        // SAFETY: builder positioned; `p` is a pointer.
        Value(
            unsafe { c::LLVMBuildPtrToInt(self.0, p.0, i64t.0, c"".as_ptr()) },
            PhantomData,
        )
    }

    /// An integer value as `i64`: zero-extended or truncated (`signed`: sign-extended).
    pub fn to_i64(&self, v: Value<'m>, i64t: Type<'m>, signed: bool) -> Value<'m> {
        // SAFETY: builder positioned; `v` is an integer.
        Value(
            unsafe { c::LLVMBuildIntCast2(self.0, v.0, i64t.0, signed as i32, c"".as_ptr()) },
            PhantomData,
        )
    }

    /// `mul a, b`.
    pub fn mul(&self, a: Value<'m>, b: Value<'m>) -> Value<'m> {
        // SAFETY: builder positioned; operands of the same integer type.
        Value(
            unsafe { c::LLVMBuildMul(self.0, a.0, b.0, c"".as_ptr()) },
            PhantomData,
        )
    }

    /// `select (icmp sgt v, 0), v, 0`: a byte count from a signed result (`read(2)`'s).
    pub fn positive_or_zero(&self, v: Value<'m>) -> Value<'m> {
        // SAFETY: builder positioned; `v` is an integer.
        unsafe {
            let zero = c::LLVMConstNull(c::LLVMTypeOf(v.0));
            let pos = c::LLVMBuildICmp(
                self.0,
                inkwell::llvm_sys::LLVMIntPredicate::LLVMIntSGT,
                v.0,
                zero,
                c"".as_ptr(),
            );
            Value(
                c::LLVMBuildSelect(self.0, pos, v.0, zero, c"".as_ptr()),
                PhantomData,
            )
        }
    }

    /// `extractvalue agg, i`.
    pub fn extract_value(&self, agg: Value<'m>, i: u32) -> Value<'m> {
        // SAFETY: builder positioned; `agg` is an aggregate with more than `i` fields.
        Value(
            unsafe { c::LLVMBuildExtractValue(self.0, agg.0, i, c"".as_ptr()) },
            PhantomData,
        )
    }

    /// `select c, a, b`.
    pub fn select(&self, cond: Value<'m>, a: Value<'m>, b: Value<'m>) -> Value<'m> {
        // SAFETY: builder positioned; `cond` is i1, `a` and `b` of one type.
        Value(
            unsafe { c::LLVMBuildSelect(self.0, cond.0, a.0, b.0, c"".as_ptr()) },
            PhantomData,
        )
    }
}

/// The thread-local storage model of a thread-local global.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TlsModel {
    /// Defined in the executable: one `fs`-relative access.
    LocalExec,
    /// Defined in a module loaded at startup or from static TLS: one more load (the offset).
    InitialExec,
}

/// Globals shared across modules, and the constructor lists (`wpp_abi`, *Shared libraries*).
impl<'m> Mod<'m> {
    /// Sets a thread-local global's TLS model.
    pub fn set_tls_model(self, g: Value<'m>, model: TlsModel) {
        let model = match model {
            TlsModel::LocalExec => inkwell::llvm_sys::LLVMThreadLocalMode::LLVMLocalExecTLSModel,
            TlsModel::InitialExec => {
                inkwell::llvm_sys::LLVMThreadLocalMode::LLVMInitialExecTLSModel
            }
        };
        // SAFETY: `g` is a global of the live module.
        unsafe { c::LLVMSetThreadLocalMode(g.0, model) };
    }

    /// Gives a global hidden visibility: found by name within its module's link (the
    /// statically linked runtime finds the executable's memory database so), reached
    /// PC-relative, never exported.
    pub fn set_hidden(self, g: Value<'m>) {
        // SAFETY: `g` is a global of the live module.
        unsafe {
            c::LLVMSetVisibility(g.0, inkwell::llvm_sys::LLVMVisibility::LLVMHiddenVisibility)
        };
    }

    /// Declares a global defined by another module (no initializer, external linkage).
    pub fn declare_global(self, name: &str, ty: Type<'m>, thread_local: bool) -> Value<'m> {
        let n = cstr(name);
        // SAFETY: the module is live and `ty` belongs to its context.
        unsafe {
            let g = c::LLVMAddGlobal(self.m, ty.0, n.as_ptr());
            c::LLVMSetThreadLocal(g, thread_local as i32);
            Value(g, PhantomData)
        }
    }

    /// Adds `f` (a `void()` function) to `llvm.global_ctors` (or `llvm.global_dtors`) with
    /// `priority`, keeping the entries already there.
    pub fn add_to_init_list(self, f: Value<'m>, priority: u32, destructor: bool) {
        let name = if destructor {
            "llvm.global_dtors"
        } else {
            "llvm.global_ctors"
        };
        let (i32t, ptr) = (self.int(32), self.ptr());
        let entry_ty = self.struct_type(&[i32t, ptr, ptr]);
        let mut entries = Vec::new();
        if let Some(old) = self.global(name) {
            // SAFETY: the list is a live appending global whose initializer is a constant array
            // of `{ i32, ptr, ptr }` structs; it is removed after its entries are copied.
            unsafe {
                let init = c::LLVMGetInitializer(old.0);
                if !init.is_null() {
                    for i in 0..c::LLVMGetNumOperands(init) as u32 {
                        entries.push(Value(c::LLVMGetOperand(init, i), PhantomData));
                    }
                }
                c::LLVMDeleteGlobal(old.0);
            }
        }
        entries.push(self.const_struct(&[
            self.const_int(i32t, u64::from(priority)),
            f,
            self.const_null(ptr),
        ]));
        let arr = self.array(entry_ty, entries.len() as u64);
        let g = self.add_global(
            name,
            arr,
            self.const_array(entry_ty, &entries),
            false,
            false,
            false,
        );
        // SAFETY: `g` is the new global of the live module.
        unsafe { c::LLVMSetLinkage(g.0, LLVMLinkage::LLVMAppendingLinkage) };
    }
}
