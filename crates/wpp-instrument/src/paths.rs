//! Acyclic-path probes (`trace-paths`; Larus §2): each function gets a path register that the
//! `wpp-paths` library's instrumentation plan updates on chords (Ball–Larus event counting),
//! and records as `Path(id)` where a path ends — at loop backedges, call sites and returns.
//!
//! # From LLVM to the CFG model
//!
//! | LLVM | `wpp_paths::Cfg` |
//! |---|---|
//! | basic block `i` (layout order, as `trace-blocks`) | node `i` |
//! | successor `s` of a terminator, in order (a `switch` with two cases to one block gives two edges) | one edge each |
//! | block ending in `ret` or `resume` | exit |
//! | block with a call that may run instrumented code (not an intrinsic, inline asm or wpp helper) | cut node: the path ends just before the *first* such call, a new one starts after it |
//! | edge that cannot be split: out of `indirectbr`/`callbr`, the unwind edge of an `invoke` | cut edge, and so is every other edge into the same target |
//!
//! Calls after the first in a block need no cut: they cannot change which blocks run, so
//! decoding the path trace still yields the block trace exactly (the tail half of a cut node
//! contributes no block when decoded).
//!
//! # Where each action goes
//!
//! * `r = entry` at function entry; `r = init` at the top of every block whose in-edges are all
//!   cut edges (the start value depends only on the target).
//! * Cut nodes: `r += add; record(r); r = init` right before the first call (before the
//!   terminator for cuts the numbering adds to keep counts in range).
//! * Edge actions (`r += k`, `r = k`, and `r += add; record(r); r = init` on backedges): at the
//!   end of the source when it has one successor (or is an `invoke`'s normal edge), else at the
//!   top of the target when it has one in-edge, else in a new block splitting the edge (phis of
//!   the target are rebuilt with the new block as the incoming block).
//! * Unsplittable cut edges: the `r += add; record(r)` half goes before the `indirectbr` /
//!   `callbr` terminator; on unwind edges it is dropped — the abandoned path is the tail of the
//!   `invoke`'s cut node, which holds no block, so no block is lost from the decoded trace.
//! * Returns: `r += add; record(r)` before `ret`/`resume`/`unreachable`, before the `Leave`.

use crate::blocks::Sites;
use crate::ir::{Block, Mod, Opcode, Value};
use crate::Error;
use wpp_paths::chords::{EdgeAction, Instrumentation, Restart, SpanningTree};
use wpp_paths::{BallLarus, Cfg, Dag, Edge, EdgeId, NodeId};

/// Path ids at or above this do not fit an event word.
pub const MAX_PATHS: u64 = 1 << 61;

/// A function's CFG with its numbering, as the instrumenter used it.
#[derive(Clone, Debug)]
pub struct FunctionPaths {
    /// The CFG (with any cut nodes the numbering added).
    pub cfg: Cfg,
    /// Its Ball–Larus DAG.
    pub dag: Dag,
    /// The numbering.
    pub bl: BallLarus,
}

/// The CFG of a function plus what the placement needs to know about each edge.
pub(crate) struct Model<'m> {
    pub cfg: Cfg,
    /// Per CFG edge: (source block index, successor index).
    pub sites: Vec<(usize, u32)>,
    /// Per CFG edge: whether it can carry code.
    pub splittable: Vec<bool>,
    /// Per block: the first call that may run instrumented code.
    pub first_call: Vec<Option<Value<'m>>>,
}

fn block_index(blocks: &[Block<'_>], b: Block<'_>) -> Option<usize> {
    blocks.iter().position(|&x| x == b)
}

/// Builds the CFG model of a function from its probe sites.
pub(crate) fn model<'m>(f: Value<'m>, sites: &Sites<'m>) -> Result<Model<'m>, Error> {
    let blocks = &sites.blocks;
    let index = sites.ids();
    let mut cfg = Cfg {
        name: f.name(),
        nodes: (0..blocks.len()).map(|i| format!("b{i}")).collect(),
        entry: NodeId(0),
        ..Cfg::default()
    };
    let mut edge_sites = Vec::new();
    let mut splittable = Vec::new();
    let mut first_call = vec![None; blocks.len()];
    let mut forced_target = vec![false; blocks.len()];
    // Every edge: source, target, successor index, whether an increment can go on it.
    let mut out = Vec::new();
    for (i, &b) in blocks.iter().enumerate() {
        for inst in b.instructions() {
            if matches!(
                inst.opcode(),
                Opcode::LLVMCall | Opcode::LLVMInvoke | Opcode::LLVMCallBr
            ) && first_call[i].is_none()
                && !inst.calls_nothing_instrumented()
            {
                first_call[i] = Some(inst);
            }
        }
        let term = b.terminator().ok_or_else(|| Error::Malformed {
            function: f.name(),
            what: format!("block {i} has no terminator"),
        })?;
        let op = term.opcode();
        if matches!(op, Opcode::LLVMRet | Opcode::LLVMResume) {
            cfg.exits.push(NodeId(i as u32));
        }
        for s in 0..term.num_successors() {
            let dst = *index
                .get(&term.successor(s).raw())
                .ok_or_else(|| Error::Malformed {
                    function: f.name(),
                    what: format!("block {i} branches outside the function"),
                })?;
            let can_split = match op {
                Opcode::LLVMIndirectBr | Opcode::LLVMCallBr => false,
                Opcode::LLVMInvoke => s == 0,
                Opcode::LLVMCatchSwitch | Opcode::LLVMCleanupRet | Opcode::LLVMCatchRet => false,
                _ => true,
            };
            out.push((i, dst, s, can_split));
        }
    }
    // Only edges from blocks a path reaches: an unoptimized `goto *` leaves an unreachable
    // block after each, whose cut edge skewed the numbering of the paths that run (session
    // 32's trial: path ids past the count at -O0).
    let reachable = reachable_blocks(blocks.len(), &out);
    for (i, dst, s, can_split) in out.into_iter().filter(|e| reachable[e.0]) {
        if !can_split {
            forced_target[dst] = true;
        }
        cfg.edges.push(Edge {
            src: NodeId(i as u32),
            dst: NodeId(dst as u32),
        });
        edge_sites.push((i, s));
        splittable.push(can_split);
    }
    for (i, landing) in sites.landing.iter().enumerate() {
        forced_target[i] |= *landing;
    }
    cfg.cut_nodes = (0..blocks.len())
        .filter(|&i| first_call[i].is_some())
        .map(|i| NodeId(i as u32))
        .collect();
    cfg.cut_edges = cfg
        .edges
        .iter()
        .enumerate()
        .filter(|(_, e)| forced_target[e.dst.index()])
        .map(|(i, _)| EdgeId(i as u32))
        .collect();
    Ok(Model {
        cfg,
        sites: edge_sites,
        splittable,
        first_call,
    })
}

/// Which of `n` blocks the entry (block 0) reaches through `edges` (source, target, …).
fn reachable_blocks(n: usize, edges: &[(usize, usize, u32, bool)]) -> Vec<bool> {
    let mut successors = vec![Vec::new(); n];
    for e in edges {
        successors[e.0].push(e.1);
    }
    let mut reached = vec![false; n];
    let mut stack = vec![0];
    while let Some(b) = stack.pop() {
        if b < n && !std::mem::replace(&mut reached[b], true) {
            stack.extend_from_slice(&successors[b]);
        }
    }
    reached
}

/// Numbers a CFG and plans chord increments.
pub(crate) fn number(cfg: &Cfg) -> Result<(FunctionPaths, Instrumentation), Error> {
    let mut cfg = cfg.clone();
    let (dag, bl) =
        wpp_paths::ball_larus::number_with_limit(&mut cfg, MAX_PATHS - 1).map_err(|e| {
            Error::Unsupported {
                function: cfg.name.clone(),
                what: format!("path numbering failed: {e}"),
            }
        })?;
    if bl.path_count() >= MAX_PATHS {
        return Err(Error::Unsupported {
            function: cfg.name.clone(),
            what: format!(
                "{} acyclic paths (at most 2^61 fit an event word)",
                bl.path_count()
            ),
        });
    }
    let tree = SpanningTree::build(&dag, &cfg, bl.increments());
    let inc = tree.increments(&dag, bl.increments());
    let plan = Instrumentation::plan(&dag, &cfg, &inc);
    Ok((FunctionPaths { cfg, dag, bl }, plan))
}

/// Where an edge's code goes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Spot {
    /// Nothing to place.
    Nothing,
    /// Unsplittable (indirectbr/callbr/unwind): the recording half goes before the source's
    /// terminator, the init at the target's top.
    Unsplittable,
    /// Before the source's terminator.
    SourceEnd,
    /// At the top of the target (its only in-edge).
    TargetTop,
    /// In a new block on the edge.
    Split,
}

/// Emits the path-register code of one function; `record` is called with the path id value
/// wherever a path ends. Returns the number of record sites inserted.
pub(crate) fn place<'m>(
    m: Mod<'m>,
    sites: &Sites<'m>,
    model: &Model<'m>,
    fp: &FunctionPaths,
    plan: &Instrumentation,
    record: &dyn Fn(&crate::ir::Builder<'m>, Value<'m>),
) -> usize {
    place_registers(m, sites, model, fp, &[plan], &|b, v| record(b, v[0]))
}

/// Like [`place`] with several registers updated on the same edges (PPP §5: the PPP and the
/// Ball–Larus counter side by side); `record` gets every register's value.
///
/// Insertion order matters where two pieces of code share an anchor instruction, so the code
/// goes in phases: register init, code at the top of targets, cut nodes, re-init after
/// `returns_twice` calls, code at the end of sources and on split edges, returns.
pub(crate) fn place_registers<'m>(
    m: Mod<'m>,
    sites: &Sites<'m>,
    model: &Model<'m>,
    fp: &FunctionPaths,
    plans: &[&Instrumentation],
    record: &dyn Fn(&crate::ir::Builder<'m>, &[Value<'m>]),
) -> usize {
    let i64t = m.int(64);
    let b = m.builder();
    let blocks = &sites.blocks;
    let cfg = &fp.cfg;
    let mut records = 0;
    // The registers, initialized at entry.
    b.before(blocks[0].instructions()[0]);
    let regs: Vec<Value<'m>> = plans.iter().map(|_| b.alloca(i64t)).collect();
    b.before(sites.start[0]);
    for (r, p) in regs.iter().zip(plans) {
        b.store(m.const_int(i64t, p.entry), *r);
    }

    let add = |b: &crate::ir::Builder<'m>, r: Value<'m>, k: u64| {
        if k != 0 {
            let v = b.load(i64t, r);
            b.store(b.add(v, m.const_int(i64t, k)), r);
        }
    };
    let set = |b: &crate::ir::Builder<'m>, r: Value<'m>, k: u64| b.store(m.const_int(i64t, k), r);
    let rec = |b: &crate::ir::Builder<'m>| {
        let vs: Vec<Value<'m>> = regs.iter().map(|&r| b.load(i64t, r)).collect();
        record(b, &vs);
    };
    // The code of one edge for every register; `forced_target`: the init is done at the
    // target's top.
    let emit = |b: &crate::ir::Builder<'m>, edge: usize, forced_target: bool| -> usize {
        let restart = plans
            .iter()
            .any(|p| matches!(p.edges[edge], EdgeAction::Restart(_)));
        for (&r, p) in regs.iter().zip(plans) {
            match p.edges[edge] {
                EdgeAction::Add(k) => add(b, r, k),
                EdgeAction::Set(k) => set(b, r, k),
                EdgeAction::Restart(Restart { add: k, .. }) => add(b, r, k),
                EdgeAction::None | EdgeAction::Dead => {}
            }
        }
        if !restart {
            return 0;
        }
        rec(b);
        if !forced_target {
            for (&r, p) in regs.iter().zip(plans) {
                if let EdgeAction::Restart(Restart { init, .. }) = p.edges[edge] {
                    set(b, r, init);
                }
            }
        }
        1
    };

    // Targets whose in-edges are all cut: `r = init` at their top.
    let mut forced = vec![false; blocks.len()];
    for &e in &cfg.cut_edges {
        let w = cfg.edges[e.index()].dst.index();
        if !forced[w] {
            b.before(sites.start[w]);
            for (&r, p) in regs.iter().zip(plans) {
                if let EdgeAction::Restart(Restart { init, .. }) = p.edges[e.index()] {
                    set(&b, r, init);
                }
            }
        }
        forced[w] = true;
    }

    let mut in_degree = vec![0u32; blocks.len()];
    cfg.edges.iter().for_each(|e| in_degree[e.dst.index()] += 1);
    let spots: Vec<Spot> = (0..cfg.edges.len())
        .map(|i| {
            let (src, _) = model.sites[i];
            let dst = cfg.edges[i].dst.index();
            let term = blocks[src].terminator().expect("checked in model");
            let idle = plans
                .iter()
                .all(|p| matches!(p.edges[i], EdgeAction::None | EdgeAction::Dead));
            if !model.splittable[i] {
                Spot::Unsplittable
            } else if idle {
                Spot::Nothing
            } else if term.num_successors() == 1 || term.opcode() == Opcode::LLVMInvoke {
                Spot::SourceEnd
            } else if in_degree[dst] == 1 && !forced[dst] {
                Spot::TargetTop
            } else {
                Spot::Split
            }
        })
        .collect();

    // Code at the top of targets (before any cut in the target).
    for (i, &spot) in spots.iter().enumerate() {
        if spot == Spot::TargetTop {
            b.before(sites.start[cfg.edges[i].dst.index()]);
            records += emit(&b, i, false);
        }
    }

    // Cut nodes (calls, and cuts added by the numbering). Every register has the same cut
    // nodes, in the same (sorted) order.
    let mut tail_init: Vec<Option<Vec<u64>>> = vec![None; blocks.len()];
    for (k, (v, _)) in plans[0].cut_nodes.iter().enumerate() {
        let at = match model.first_call.get(v.index()).copied().flatten() {
            Some(call) => call,
            None => blocks[v.index()].terminator().expect("checked in model"),
        };
        b.before(at);
        for (&r, p) in regs.iter().zip(plans) {
            add(&b, r, p.cut_nodes[k].1.add);
        }
        rec(&b);
        for (&r, p) in regs.iter().zip(plans) {
            set(&b, r, p.cut_nodes[k].1.init);
        }
        tail_init[v.index()] = Some(plans.iter().map(|p| p.cut_nodes[k].1.init).collect());
        records += 1;
    }

    // A `setjmp` returning again resumes the path after its block's cut: reset the registers,
    // whose memory holds whatever they had when `longjmp` was called.
    for (v, block) in blocks.iter().enumerate() {
        for inst in block.instructions() {
            if inst.opcode() == Opcode::LLVMCall && crate::blocks::is_returns_twice(m, inst) {
                if let (Some(next), Some(inits)) = (inst.next(), &tail_init[v]) {
                    b.before(next);
                    for (&r, &init) in regs.iter().zip(inits) {
                        set(&b, r, init);
                    }
                }
            }
        }
    }

    // Code at the end of sources and on split edges.
    let mut unsplittable_done = vec![false; blocks.len()];
    for (i, &spot) in spots.iter().enumerate() {
        let (src, s) = model.sites[i];
        let dst = cfg.edges[i].dst.index();
        let term = blocks[src].terminator().expect("checked in model");
        match spot {
            Spot::Nothing | Spot::TargetTop => {}
            Spot::Unsplittable => {
                // Record the ending path once per source, before the terminator (indirectbr,
                // callbr); unwind edges drop it (see the module docs).
                let restart = plans
                    .iter()
                    .all(|p| matches!(p.edges[i], EdgeAction::Restart(_)));
                if restart && term.opcode() != Opcode::LLVMInvoke && !unsplittable_done[src] {
                    unsplittable_done[src] = true;
                    b.before(term);
                    for (&r, p) in regs.iter().zip(plans) {
                        if let EdgeAction::Restart(Restart { add: k, .. }) = p.edges[i] {
                            add(&b, r, k);
                        }
                    }
                    rec(&b);
                    records += 1;
                }
            }
            Spot::SourceEnd => {
                b.before(term);
                records += emit(&b, i, forced[dst]);
            }
            Spot::Split => {
                let n = split_edge(m, term, s, blocks[src], blocks[dst]);
                b.before(n.terminator().expect("split block has a branch"));
                records += emit(&b, i, forced[dst]);
            }
        }
    }

    // Returns and blocks without successors.
    for (k, (x, _)) in plans[0].returns.iter().enumerate() {
        let term = blocks[x.index()].terminator().expect("checked in model");
        let at = match term.prev() {
            Some(p) if p.opcode() == Opcode::LLVMCall && p.is_musttail() => p,
            _ => term,
        };
        b.before(at);
        for (&r, p) in regs.iter().zip(plans) {
            add(&b, r, p.returns[k].1);
        }
        rec(&b);
        records += 1;
    }
    records
}

/// Splits edge `s` of `term` (in `u`) to `w` with a new block; returns it.
fn split_edge<'m>(m: Mod<'m>, term: Value<'m>, s: u32, u: Block<'m>, w: Block<'m>) -> Block<'m> {
    let n = m.insert_block_before(w, "wpp.edge");
    let b = m.builder();
    b.at_end(n);
    b.br(w);
    term.set_successor(s, n);
    // Rebuild each phi of `w` with one of its entries from `u` now coming from `n`.
    for phi in w
        .instructions()
        .into_iter()
        .take_while(|i| i.opcode() == Opcode::LLVMPHI)
    {
        let mut inc = phi.incoming();
        if let Some(slot) = inc.iter_mut().find(|(_, from)| *from == u) {
            slot.1 = n;
            b.before(phi);
            let new = b.phi(phi.type_of(), &inc);
            phi.replace_and_erase(new);
        }
    }
    n
}

/// Finds a block's index (for tests and decoders).
pub fn index_of(blocks: &[Block<'_>], b: Block<'_>) -> Option<usize> {
    block_index(blocks, b)
}
