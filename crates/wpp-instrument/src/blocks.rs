//! The `trace-blocks` probes (Zhang–Gupta §3): `Enter(f)` and `Block(0)` at the top of the entry
//! block, `Block(b)` at the top of every other block (after its phis and landing pad), `Leave`
//! before every `ret` and `resume`, and depth repair after `setjmp`-like calls and in landing
//! pads.
//!
//! Block ids are the blocks' positions in the function's layout order, so they are stable for a
//! given bitcode file and every mode numbers the same blocks the same way. Probe placement per
//! instruction kind:
//!
//! | instruction | probe |
//! |---|---|
//! | first non-phi of the entry block | `saved = enter(Enter(f))`, `emit(Block(0))` |
//! | first non-phi of another block | `emit(Block(b))` |
//! | `landingpad` (first non-phi) | after it: `restore(saved)`, `emit(Block(b))` |
//! | `ret` | `leave()` before it (before the `musttail` call that must precede it, if any) |
//! | `resume` | `leave()` before it: the frame is left by unwinding |
//! | call to a `returns_twice` function | `restore(saved)` right after it (`ewpp`: then `emit(Block(b))` of its block again) |
//! | `unreachable` | nothing: the frame is left by `exit`, `longjmp` or a throw, whose Leaves come from the runtime's exit handler, the `setjmp` site or the catching landing pad |
//!
//! # Blocks recorded as paths
//!
//! By default (`Options::elide`) a `trace-blocks` build gets the `trace-paths` probes
//! instead ([`crate::paths`]): a path register updated on chords and one event where an
//! acyclic path ends (a backedge, a call, a return), not one per block. Its program database
//! carries the CFGs and says that its paths stand for blocks
//! (`wpp_trace::ProgramDb::paths_are_blocks`), and every trace reader decodes each path to the
//! blocks it ran along (`wpp_paths::trace::open`), so a consumer sees the block trace that
//! these probes record. Paths end before every call, so the decoded blocks come in the same
//! order around callees' events, `longjmp`s, throws and exits.
//!
//! What only asynchronous events can tell apart: a path's blocks are recorded when it ends, so
//! a signal handler that records events in the middle of a path comes before the blocks of
//! that path that ran before the signal, and a process that dies inside a path (a fault, a
//! kill, another thread's `exit`) has no events for the blocks of its innermost frame's path in
//! progress (the outer frames' paths ended at their calls). `--wpp-no-elide` gives every block
//! its probe, which records each block as it runs.

use crate::helpers::Helpers;
use crate::ir::{Block, Mod, Opcode, Value};
use crate::Error;
use wpp_abi as abi;

/// Where the probes of one function go, collected before any insertion so that inserting does
/// not disturb the walk.
pub(crate) struct Sites<'m> {
    /// Blocks in layout order (index = block id).
    pub blocks: Vec<Block<'m>>,
    /// Per block: the instruction to insert start probes before.
    pub start: Vec<Value<'m>>,
    /// Per block: whether it starts with a landing pad (depth repair first).
    pub landing: Vec<bool>,
    /// Per block: whether it is the normal destination of an invoke of a `returns_twice`
    /// function (depth repair first).
    pub after_invoke_twice: Vec<bool>,
    /// Instructions to put `leave()` before.
    pub leaves: Vec<Value<'m>>,
    /// Instructions to put `restore(saved)` before (those following a `returns_twice` call),
    /// with their block's id.
    pub restores: Vec<(Value<'m>, u32)>,
}

impl Sites<'_> {
    /// Each block's id (its index in [`blocks`](Self::blocks)), by its LLVM handle.
    pub fn ids(
        &self,
    ) -> std::collections::HashMap<inkwell::llvm_sys::prelude::LLVMBasicBlockRef, usize> {
        self.blocks
            .iter()
            .enumerate()
            .map(|(i, b)| (b.raw(), i))
            .collect()
    }
}

/// Whether a call or invoke targets a `returns_twice` function (`setjmp` and friends).
pub(crate) fn is_returns_twice(m: Mod<'_>, call: Value<'_>) -> bool {
    if m.call_has_attr(call, "returns_twice") {
        return true;
    }
    match call.called_function() {
        Some(f) => {
            m.fn_has_attr(f, "returns_twice")
                || matches!(
                    f.name().as_str(),
                    "setjmp" | "_setjmp" | "sigsetjmp" | "__sigsetjmp" | "savectx" | "vfork"
                )
        }
        None => false,
    }
}

/// Finds the probe sites of a defined function.
pub(crate) fn collect_sites<'m>(m: Mod<'m>, f: Value<'m>) -> Result<Sites<'m>, Error> {
    let blocks = f.blocks();
    let mut s = Sites {
        start: Vec::with_capacity(blocks.len()),
        landing: vec![false; blocks.len()],
        after_invoke_twice: vec![false; blocks.len()],
        leaves: Vec::new(),
        restores: Vec::new(),
        blocks: Vec::new(),
    };
    for (bi, &b) in blocks.iter().enumerate() {
        let first = b.first_non_phi().ok_or_else(|| Error::Malformed {
            function: f.name(),
            what: format!("block {bi} has no terminator"),
        })?;
        match first.opcode() {
            Opcode::LLVMLandingPad => {
                s.landing[bi] = true;
                s.start.push(first.next().ok_or_else(|| Error::Malformed {
                    function: f.name(),
                    what: format!("landing pad block {bi} has no terminator"),
                })?);
            }
            Opcode::LLVMCatchSwitch | Opcode::LLVMCatchPad | Opcode::LLVMCleanupPad => {
                return Err(Error::Unsupported {
                    function: f.name(),
                    what: "funclet-based (Windows) exception handling".into(),
                });
            }
            _ => s.start.push(first),
        }
        for inst in b.instructions() {
            match inst.opcode() {
                Opcode::LLVMRet => {
                    let at = match inst.prev() {
                        Some(p) if p.opcode() == Opcode::LLVMCall && p.is_musttail() => p,
                        _ => inst,
                    };
                    s.leaves.push(at);
                }
                Opcode::LLVMResume => s.leaves.push(inst),
                Opcode::LLVMCall if is_returns_twice(m, inst) => {
                    if let Some(next) = inst.next() {
                        s.restores.push((next, bi as u32));
                    }
                }
                Opcode::LLVMInvoke if is_returns_twice(m, inst) => {
                    let dest = inst.normal_dest();
                    if let Some(i) = blocks.iter().position(|&x| x == dest) {
                        s.after_invoke_twice[i] = true;
                    }
                }
                _ => {}
            }
        }
    }
    s.blocks = blocks;
    Ok(s)
}

/// Instruments one function for `trace-blocks`; returns the number of probes inserted.
/// `block_again` (`ewpp`): `Block(b)` again where a `setjmp`-like call in block `b` returns,
/// so the accesses after it, which run a second time after a `longjmp`, belong to the block
/// they are in (the eCF's checks name the load's block execution).
pub(crate) fn instrument<'m>(
    m: Mod<'m>,
    h: &Helpers<'m>,
    f: Value<'m>,
    fid: u32,
    sites: &Sites<'m>,
    block_again: bool,
) -> usize {
    let (saved, probes) = instrument_entry(m, h, fid, sites, true);
    probes + instrument_exits(m, h, f, saved, sites, block_again)
}

/// The `Enter` probe, `Block` probes when `block_events`, and depth repair at landing pads. Returns the `saved` depth value and the probe count.
pub(crate) fn instrument_entry<'m>(
    m: Mod<'m>,
    h: &Helpers<'m>,
    fid: u32,
    sites: &Sites<'m>,
    block_events: bool,
) -> (Value<'m>, usize) {
    let b = m.builder();
    let i64t = m.int(64);
    let mut probes = 1;
    // Entry: Enter(f) and the depth it returns, then Block(0).
    b.before(sites.start[0]);
    let saved = b.call(
        h.enter_ty,
        h.enter,
        &[m.const_int(i64t, abi::enter_word(fid))],
    );
    if block_events {
        b.call(h.emit_ty, h.emit, &[m.const_int(i64t, abi::block_word(0))]);
        probes += 1;
    }
    for bi in 1..sites.blocks.len() {
        b.before(sites.start[bi]);
        if sites.landing[bi] || sites.after_invoke_twice[bi] {
            b.call(h.restore_ty, h.restore, &[saved]);
            probes += 1;
        }
        if block_events {
            b.call(
                h.emit_ty,
                h.emit,
                &[m.const_int(i64t, abi::block_word(bi as u32))],
            );
            probes += 1;
        }
    }
    (saved, probes)
}

/// Depth repair after `returns_twice` calls, and `Leave` before returns and `resume`s (insert
/// after everything else that goes before a return, so `Leave` is last).
pub(crate) fn instrument_exits<'m>(
    m: Mod<'m>,
    h: &Helpers<'m>,
    f: Value<'m>,
    saved: Value<'m>,
    sites: &Sites<'m>,
    block_again: bool,
) -> usize {
    let b = m.builder();
    let mut probes = 0;
    for &(at, block) in &sites.restores {
        b.before(at);
        b.call(h.restore_ty, h.restore, &[saved]);
        probes += 1;
        if block_again {
            let word = m.const_int(m.int(64), abi::block_word(block));
            b.call(h.emit_ty, h.emit, &[word]);
            probes += 1;
        }
    }
    for &at in &sites.leaves {
        b.before(at);
        b.call(h.leave_ty, h.leave, &[]);
        probes += 1;
    }
    let _ = f;
    probes
}
