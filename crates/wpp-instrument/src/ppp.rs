//! `ppp` mode: preferential path profiling with two counters (PPP §2.3, §5).
//!
//! Each function keeps two registers updated on the same chords: the Ball–Larus register `r`
//! (as in `bl`) and the PPP register `q`, whose weights (from `wpp_paths::PppPlan`, PPP
//! Figure 10) number the interesting paths compactly in `[0, interval)`. At a path end the
//! inline check is
//!
//! ```text
//! if q < interval && ids[q] == r { counts[q] += 1 } else { __wpp_rt_ppp_miss(f, r) }
//! ```
//!
//! `ids[q]` stores the Ball–Larus id of the interesting path with PPP id `q` (all ones in
//! holes), which catches uninteresting paths that alias an interesting id. Misses go to the
//! runtime, which counts them exactly by Ball–Larus id (the residual paths). In a program that
//! may run threads, `counts[q] += 1` is an atomic add (crate docs, "Exact counts under
//! threads"). A function with no interesting path, or whose interval exceeds
//! [`abi::PPP_ARRAY_MAX`], sends every path end to the runtime.
//!
//! # Array policy (PPP §5, "hash table usage policy")
//!
//! PPP numbering pays where Ball–Larus ids are too sparse for an array. A function with at most
//! [`Options::ppp_bl_array_max`](crate::Options) Ball–Larus paths (by default the limit under
//! which `bl` uses an array as well) keeps only `r` and counts `counts[r] += 1` in an array
//! indexed by the Ball–Larus id, exactly like `bl`: no second register, no check, no miss.
//! `ids[r]` is `r` for interesting paths and all ones otherwise, and the runtime splits the
//! counts into interesting and uninteresting ones at exit, so the profile is the same.
//!
//! # Placement (PPP §5; Ball–Larus 1996)
//!
//! The interesting set comes with the counts of the `bl` run it was taken from. Every DAG edge
//! of the CFG gets the summed count of the interesting paths through it, and the spanning tree
//! that decides which edges carry increments is a maximum one for those weights, so the hot
//! edges carry none. Edges where paths start or end weigh 0: their increments merge into the
//! register's initial value or the counter's address. (Callgrind instruction counts against
//! weighing those edges by their executions as well: zlib −7 %, lua −1 %, bzip2 +2 %.) Both registers use this one tree (§5: both counters are updated on the same
//! edges). Without counts the tree is the loop-depth estimate of `wpp_paths::chords`.

use crate::blocks::Sites;
use crate::ir::{self, Mod, Value};
use crate::paths::{FunctionPaths, Model};
use crate::{Error, Options};
use wpp_abi as abi;
use wpp_paths::chords::{Instrumentation, SpanningTree};
use wpp_paths::dag::DagEdgeKind;
use wpp_paths::{Dag, DagPath, PathId, PppPlan};

/// The index kinds of a function's counter array (the `bl_indexed` field of the runtime's
/// `PppSlot`).
const PPP_INDEXED: u64 = 0;
const BL_INDEXED: u64 = 1;

/// Instruments every function for `ppp`; returns the number of record sites. `atomic` makes
/// the counter increments atomic (see the crate docs, "Exact counts under threads").
#[allow(clippy::too_many_arguments)]
pub(crate) fn instrument<'m>(
    m: Mod<'m>,
    targets: &[Value<'m>],
    all_sites: &[Sites<'m>],
    all_paths: &[(Model<'m>, FunctionPaths, Instrumentation)],
    opts: &Options,
    (db_global, db_len): (Value<'m>, usize),
    atomic: bool,
    function_ids: crate::FunctionIds<'m>,
    renumbered: &[String],
) -> Result<usize, Error> {
    let i32t = m.int(32);
    let i64t = m.int(64);
    let ptr = m.ptr();
    let void = m.void();
    let miss_ty = m.fn_type(void, &[i32t, i64t]);
    let miss = m.declare(abi::SYM_PPP_MISS, miss_ty);
    m.add_fn_attr(miss, "nounwind");
    let count_ty = m.fn_type(void, &[ptr, ptr, i64t, i32t, i64t, i64t]);
    let count = build_count_helper(m, count_ty, miss, miss_ty, atomic);
    let slot_ty = m.struct_type(&[ptr, ptr, i64t, i64t]);
    // One entry of the table `__wpp_rt_ppp_init` reads (`abi::SYM_PPP_INIT`).
    let slot = |counts, ids, len, indexing| {
        m.const_struct(&[
            counts,
            ids,
            m.const_int(i64t, len),
            m.const_int(i64t, indexing),
        ])
    };
    let mut slots = Vec::with_capacity(targets.len());
    let mut records = 0;
    let no_paths = Default::default();
    for (fid, sites) in all_sites.iter().enumerate() {
        let (model, fp, _) = &all_paths[fid];
        let unsupported = |e: wpp_paths::Error| Error::Unsupported {
            function: fp.cfg.name.clone(),
            what: e.to_string(),
        };
        let (ids, freq): (Vec<u64>, Vec<u64>) = interesting_of(fp, opts)
            .filter(|_| !renumbered.contains(&fp.cfg.name))
            .map_or(&no_paths, |(_, paths)| paths)
            .range(..fp.bl.path_count())
            .map(|(&id, &c)| (id, c))
            .unzip();
        let paths = ids
            .iter()
            .map(|&id| fp.bl.decode(&fp.dag, PathId(id)))
            .collect::<Result<Vec<_>, _>>()
            .map_err(unsupported)?;
        let tree = placement_tree(fp, &paths, &freq);
        let bl_plan = Instrumentation::plan(
            &fp.dag,
            &fp.cfg,
            &tree.increments(&fp.dag, fp.bl.increments()),
        );
        let n = fp.bl.path_count();
        if n <= opts.ppp_bl_array_max {
            let mut stored = vec![u64::MAX; n as usize];
            ids.iter().for_each(|&id| stored[id as usize] = id);
            let (counts, id_arr, arr_ty) = counter_arrays(m, fid, &stored);
            slots.push(slot(counts, id_arr, n, BL_INDEXED));
            let record = |b: &ir::Builder<'m>, v: &[Value<'m>]| {
                let p = b.gep(arr_ty, counts, &[m.const_int(i64t, 0), v[0]]);
                b.increment(i64t, p, atomic);
            };
            records += crate::paths::place_registers(m, sites, model, fp, &[&bl_plan], &record);
            continue;
        }
        let plan = PppPlan::compute(&fp.dag, &fp.bl, &paths).map_err(unsupported)?;
        if ids.is_empty() || plan.interval > abi::PPP_ARRAY_MAX {
            slots.push(slot(m.const_null(ptr), m.const_null(ptr), 0, PPP_INDEXED));
            let record = |b: &ir::Builder<'m>, v: &[Value<'m>]| {
                b.call(miss_ty, miss, &[function_ids.id(m, b, fid), v[0]]);
            };
            // Every path end is a miss: the Ball–Larus register is all the runtime needs.
            records += crate::paths::place_registers(m, sites, model, fp, &[&bl_plan], &record);
            continue;
        }
        let q_plan =
            Instrumentation::plan(&fp.dag, &fp.cfg, &tree.increments(&fp.dag, &plan.values()));
        let n = plan.interval;
        let mut stored = vec![u64::MAX; n as usize];
        for &(q, i) in &plan.slots {
            stored[q as usize] = plan.bl_ids[i as usize];
        }
        let (counts, id_arr, _) = counter_arrays(m, fid, &stored);
        slots.push(slot(counts, id_arr, n, PPP_INDEXED));
        let nv = m.const_int(i64t, n);
        let record = |b: &ir::Builder<'m>, v: &[Value<'m>]| {
            b.call(
                count_ty,
                count,
                &[counts, id_arr, nv, function_ids.id(m, b, fid), v[0], v[1]],
            );
        };
        records +=
            crate::paths::place_registers(m, sites, model, fp, &[&bl_plan, &q_plan], &record);
    }
    let db = (db_global, db_len);
    crate::hand_table_to_runtime(
        m,
        "__wpp_ppp_table",
        slot_ty,
        &slots,
        (abi::SYM_PPP_INIT, abi::SYM_PPP_REGISTER),
        targets,
        all_sites,
        db,
        function_ids,
    );
    Ok(records)
}

/// The zeroed counter array and the constant id array (`stored`) of function `fid`, and
/// their type.
fn counter_arrays<'m>(
    m: Mod<'m>,
    fid: usize,
    stored: &[u64],
) -> (Value<'m>, Value<'m>, ir::Type<'m>) {
    let i64t = m.int(64);
    let arr_ty = m.array(i64t, stored.len() as u64);
    let counts = m.add_global(
        &format!("__wpp_ppp_counts.{fid}"),
        arr_ty,
        m.const_null(arr_ty),
        true,
        false,
        false,
    );
    let stored: Vec<Value<'m>> = stored.iter().map(|&v| m.const_int(i64t, v)).collect();
    let ids = m.add_global(
        &format!("__wpp_ppp_ids.{fid}"),
        arr_ty,
        m.const_array(i64t, &stored),
        true,
        true,
        false,
    );
    (counts, ids, arr_ty)
}

/// The spanning tree of the module docs' placement: DAG edges weighted by
/// [`placement_weights`]; the loop-depth tree when nothing ran.
/// The interesting paths `opts` names for `fp`, and under which name: its module-qualified one
/// (`libq.so!helper`) first, else its own.
pub(crate) fn interesting_of<'o>(
    fp: &FunctionPaths,
    opts: &'o Options,
) -> Option<(String, &'o std::collections::BTreeMap<u64, u64>)> {
    let qualified = opts
        .module_name
        .as_ref()
        .map(|m| format!("{m}!{}", fp.cfg.name));
    qualified
        .into_iter()
        .chain([fp.cfg.name.clone()])
        .find_map(|key| opts.interesting.get(&key).map(|paths| (key, paths)))
}

/// Whether the `--interesting` profile numbered `fp`'s paths (under `key`) on another CFG, from
/// another build of the function: some path it names is other blocks here, so its ids would
/// pick other paths as interesting (and `wpp profile residual` list the wrong ones). A profile
/// without the function's CFG is trusted.
pub(crate) fn numbered_elsewhere(fp: &FunctionPaths, key: &str, opts: &Options) -> bool {
    let Some(cfg) = opts.interesting_cfgs.get(key) else {
        return false;
    };
    let Ok((there, _)) = crate::paths::number(cfg) else {
        return true;
    };
    opts.interesting[key].keys().any(|&id| {
        let blocks = |f: &FunctionPaths| f.bl.block_names(&f.dag, PathId(id)).ok();
        blocks(&there) != blocks(fp)
    })
}

pub(crate) fn placement_tree(fp: &FunctionPaths, paths: &[DagPath], freq: &[u64]) -> SpanningTree {
    let weights = placement_weights(&fp.dag, paths, freq);
    if weights.iter().all(|&w| w == 0) {
        return SpanningTree::build(&fp.dag, &fp.cfg, fp.bl.increments());
    }
    let mut tree = SpanningTree::default();
    tree.compute(&fp.dag, &weights, fp.bl.increments());
    tree
}

/// Per DAG edge standing for a CFG edge: the summed count of the paths through it (an edge
/// profile derived from a path profile; saturating). `ENTRY→v` and `v→EXIT` edges get 0:
/// an increment there costs nothing at run time, because it merges into the constant the
/// register is set to when a path starts, or into the counter's address when it ends, so
/// they are the best chords.
fn placement_weights(dag: &Dag, paths: &[DagPath], freq: &[u64]) -> Vec<u64> {
    let mut w = vec![0u64; dag.edge_count()];
    for (p, &c) in paths.iter().zip(freq) {
        for &e in &p.edges {
            if matches!(dag.edge(e).kind, DagEdgeKind::Cfg(_)) {
                w[e.index()] = w[e.index()].saturating_add(c);
            }
        }
    }
    w
}

/// `void count(ptr counts, ptr ids, i64 interval, i32 f, i64 r, i64 q)`, always inlined:
/// the two-counter check of the module docs; `atomic` as in [`ir::Builder::increment`].
fn build_count_helper<'m>(
    m: Mod<'m>,
    ty: ir::Type<'m>,
    miss: Value<'m>,
    miss_ty: ir::Type<'m>,
    atomic: bool,
) -> Value<'m> {
    let i64t = m.int(64);
    let f = m.add_internal_function("__wpp_ppp_count", ty);
    m.add_fn_attr(f, "alwaysinline");
    m.add_fn_attr(f, "nounwind");
    let p = |i| ir::param(f, i);
    let entry = m.append_block(f, "entry");
    let check = m.append_block(f, "check");
    let hit = m.append_block(f, "hit");
    let missb = m.append_block(f, "miss");
    let done = m.append_block(f, "done");
    let b = m.builder();
    b.at_end(entry);
    // q < interval  ⇔  !(q >= interval)
    let out = b.icmp_uge(p(5), p(2));
    b.cond_br(out, missb, check);
    b.at_end(check);
    let slot = b.gep(i64t, p(1), &[p(5)]);
    let stored = b.load(i64t, slot);
    let differs = b.icmp_ne(stored, p(4));
    b.cond_br(differs, missb, hit);
    b.at_end(hit);
    let c = b.gep(i64t, p(0), &[p(5)]);
    b.increment(i64t, c, atomic);
    b.br(done);
    b.at_end(missb);
    b.call(miss_ty, miss, &[p(3), p(4)]);
    b.br(done);
    b.at_end(done);
    b.ret_void();
    f
}

#[cfg(test)]
mod tests {
    use super::*;
    use wpp_paths::random::{structured_cfg, Rng};

    /// The sum of `weights` over the chords of `tree`: the executions of increments it costs.
    fn chord_weight(tree: &SpanningTree, weights: &[u64]) -> u64 {
        (0..weights.len())
            .filter(|&i| tree.is_chord(wpp_paths::DagEdgeId(i as u32)))
            .map(|i| weights[i])
            .sum()
    }

    /// On random structured CFGs with random path counts: the profile-weighted tree still
    /// gives every path its Ball–Larus id (checked on every path), and its chords carry no more
    /// executed increments than those of the loop-depth tree or of trees of random weights (a
    /// maximum spanning tree minimizes the chords' total weight).
    #[test]
    fn profile_placement_keeps_ids_and_moves_increments_off_hot_edges() {
        let mut rng = Rng::new(7);
        for round in 0..300 {
            let mut cfg = structured_cfg(&mut rng, "f", 4 + round % 20);
            let (dag, bl) = wpp_paths::number_with_cuts(&mut cfg).unwrap();
            let n = bl.path_count().min(200);
            let ids: Vec<u64> = (0..n).filter(|_| rng.chance(50)).collect();
            let freq: Vec<u64> = ids.iter().map(|_| rng.below(1000) as u64).collect();
            let paths: Vec<DagPath> = ids
                .iter()
                .map(|&id| bl.decode(&dag, PathId(id)).unwrap())
                .collect();
            let fp = FunctionPaths { cfg, dag, bl };
            let tree = placement_tree(&fp, &paths, &freq);
            let inc = tree.increments(&fp.dag, fp.bl.increments());
            for id in 0..n {
                let p = fp.bl.decode(&fp.dag, PathId(id)).unwrap();
                let sum = p
                    .edges
                    .iter()
                    .fold(0u64, |a, e| a.wrapping_add(inc[e.index()]));
                assert_eq!(sum, id, "round {round}: path {id}");
            }
            let weights = placement_weights(&fp.dag, &paths, &freq);
            let best = chord_weight(&tree, &weights);
            let depth_tree = SpanningTree::build(&fp.dag, &fp.cfg, fp.bl.increments());
            assert!(best <= chord_weight(&depth_tree, &weights), "round {round}");
            for _ in 0..5 {
                let random: Vec<u64> = weights.iter().map(|_| rng.next_u64()).collect();
                let mut other = SpanningTree::default();
                other.compute(&fp.dag, &random, fp.bl.increments());
                assert!(best <= chord_weight(&other, &weights), "round {round}");
            }
        }
    }
}
