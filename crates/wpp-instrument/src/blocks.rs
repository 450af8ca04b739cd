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
//! # Elided blocks
//!
//! In `trace-blocks` (unless turned off) a block whose event the CFG implies gets no probe
//! ([`implied_blocks`]): block `b` is implied when every predecessor `p` has `b` as its only
//! successor and no call (which could record events of its own, `longjmp`, throw or exit)
//! runs in `p` after `p`'s probe, so `b`'s event always comes right after `p`'s. The program
//! database names each `p`'s implied block (`wpp_trace::Function::implied_next`) and every
//! trace reader puts the events back. The entry block's event always follows the `Enter`
//! probe, so it is elided too (`wpp_trace::Function::entry_implied`) — but in programs that
//! may fork (`module_may_fork`), whose children's streams start with `Enter`s of frames
//! already open.
//!
//! What only asynchronous events can tell apart: a restored event comes right after the one
//! implying it, so a signal handler that records events while `p` runs is restored as having
//! run after `b`'s event, and a process that dies inside `p` (a fault, a kill, another thread's
//! `exit`) has `b`'s event restored before its closing `Leave`s — each the trace of a run
//! interrupted a few instructions later.

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

/// Whether a call runs only code that records nothing and returns normally: an intrinsic that
/// computes or moves memory. Traps, exception handling, coroutines, statepoints and the like,
/// inline assembly and every real function may record events or leave the block abnormally.
fn is_quiet_call(call: Value<'_>) -> bool {
    let Some(f) = call.called_function().filter(|f| f.intrinsic_id() != 0) else {
        return false;
    };
    let name = f.name();
    const LOUD: [&str; 7] = [
        "llvm.eh.",
        "llvm.coro.",
        "llvm.experimental.",
        "llvm.seh.",
        "llvm.wasm.",
        "llvm.objc.",
        "llvm.icall.",
    ];
    !name.contains("trap") && !LOUD.iter().any(|p| name.starts_with(p))
}

/// Whether no call in `b` can record events or leave `b` other than by its terminator (the
/// block's probe comes before all of its instructions but phis and a landing pad).
fn runs_quietly(b: Block<'_>) -> bool {
    b.instructions().into_iter().all(|i| {
        !matches!(
            i.opcode(),
            Opcode::LLVMCall | Opcode::LLVMInvoke | Opcode::LLVMCallBr
        ) || is_quiet_call(i)
    })
}

/// Per block of a function: the block whose event its own implies (module docs, *Elided
/// blocks*), so that block gets no probe; all `None` when nothing can be elided. Following the
/// result from any block ends: a cycle (an endless loop without calls) keeps one of its blocks
/// recorded.
pub(crate) fn implied_blocks(sites: &Sites<'_>) -> Vec<Option<u32>> {
    let blocks = &sites.blocks;
    let index = sites.ids();
    let mut only_successor = vec![None; blocks.len()];
    let mut preds = vec![Vec::new(); blocks.len()];
    for (i, &b) in blocks.iter().enumerate() {
        let Some(term) = b.terminator() else { continue };
        let mut succ: Vec<usize> = (0..term.num_successors())
            .filter_map(|s| index.get(&term.successor(s).raw()).copied())
            .collect();
        succ.sort_unstable();
        succ.dedup();
        for &s in &succ {
            preds[s].push(i);
        }
        if let [s] = succ[..] {
            if runs_quietly(b) {
                only_successor[i] = Some(s as u32);
            }
        }
    }
    let elided = |j: usize| {
        j != 0
            && !preds[j].is_empty()
            && preds[j]
                .iter()
                .all(|&p| only_successor[p] == Some(j as u32))
    };
    let mut next: Vec<Option<u32>> = only_successor
        .iter()
        .map(|s| s.filter(|&j| elided(j as usize)))
        .collect();
    while let Some(b) = wpp_trace::program::implied_cycle(&next) {
        for &p in &preds[b as usize] {
            next[p] = None;
        }
    }
    next
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
    implied: &wpp_trace::Function,
) -> usize {
    let mut elided = vec![false; sites.blocks.len()];
    if let Some(entry) = elided.first_mut() {
        *entry = implied.entry_implied;
    }
    for &b in implied.implied_next.iter().flatten() {
        elided[b as usize] = true;
    }
    let (saved, probes) = instrument_entry(m, h, fid, sites, true, &elided);
    probes + instrument_exits(m, h, f, saved, sites, block_again)
}

/// The `Enter` probe, `Block` probes when `block_events` (but for `elided` blocks), and depth
/// repair at landing pads. Returns the `saved` depth value and the probe count.
pub(crate) fn instrument_entry<'m>(
    m: Mod<'m>,
    h: &Helpers<'m>,
    fid: u32,
    sites: &Sites<'m>,
    block_events: bool,
    elided: &[bool],
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
    if block_events && !elided.first().copied().unwrap_or(false) {
        b.call(h.emit_ty, h.emit, &[m.const_int(i64t, abi::block_word(0))]);
        probes += 1;
    }
    for bi in 1..sites.blocks.len() {
        b.before(sites.start[bi]);
        if sites.landing[bi] || sites.after_invoke_twice[bi] {
            b.call(h.restore_ty, h.restore, &[saved]);
            probes += 1;
        }
        if block_events && !elided.get(bi).copied().unwrap_or(false) {
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
