//! Recovery and chains against brute force over the raw access list: Figure 22's backtracking
//! (scan back from each load, byte by byte, to the latest write), independent of the
//! last-writer table, and Figure 21 evaluated on it.

use proptest::prelude::*;
use std::collections::BTreeMap;
use wpp_deps::at::Run;
use wpp_deps::chain::ChainIndex;
use wpp_deps::{recover, Access, AccessKind, Dependence, Instance, MemInstr, MemoryDb, Writer};

/// Instructions of two blocks and lines; a kind of 3 makes the instruction a block copy's
/// destination, and the one before it the copy's source (as the instrumenter numbers a
/// `memcpy`'s two accesses).
fn db_strategy() -> impl Strategy<Value = MemoryDb> {
    prop::collection::vec((0u32..2, 0u32..2, 0u8..4), 2..8).prop_map(|v| {
        let mut instructions: Vec<MemInstr> = v
            .iter()
            .map(|&(block, line, k)| MemInstr {
                function: 0,
                block,
                line,
                column: 0,
                file: wpp_deps::memdb::NO_FILE,
                kind: [AccessKind::Load, AccessKind::Store, AccessKind::Clobber][k as usize % 3],
                what: String::new(),
            })
            .collect();
        for (i, &(_, _, k)) in v.iter().enumerate().skip(1) {
            if k == 3 && instructions[i - 1].what.is_empty() {
                let (block, line) = (instructions[i].block, instructions[i].line);
                let src = &mut instructions[i - 1];
                (src.kind, src.block, src.line, src.what) =
                    (AccessKind::Load, block, line, "memcpy src".into());
                let dst = &mut instructions[i];
                (dst.kind, dst.what) = (AccessKind::Store, "memcpy dst".into());
            }
        }
        MemoryDb {
            version: 1,
            program: Default::default(),
            instructions,
            files: Vec::new(),
        }
    })
}

fn case() -> impl Strategy<Value = (MemoryDb, Vec<Access>)> {
    case_with(24, 9)
}

/// Accesses below `addrs` of fewer than `sizes` bytes.
fn case_with(addrs: u64, sizes: u64) -> impl Strategy<Value = (MemoryDb, Vec<Access>)> {
    db_strategy().prop_flat_map(move |db| {
        let n = db.instructions.len() as u32;
        let acc = prop::collection::vec((0..n, 0..addrs, 1..sizes), 0..120).prop_map(|v| {
            v.into_iter()
                .map(|(id, addr, size)| Access { id, addr, size })
                .collect::<Vec<_>>()
        });
        (Just(db), acc)
    })
}

/// The instance number of the access at position `p`.
fn instance_at(acc: &[Access], p: usize) -> Instance {
    let id = acc[p].id;
    Instance {
        id,
        n: acc[..=p].iter().filter(|a| a.id == id).count() as u64,
    }
}

/// Figure 22: the writer of byte `b` as seen by the access at position `p`.
fn backtrack(db: &MemoryDb, acc: &[Access], p: usize, b: u64) -> Writer {
    for q in (0..p).rev() {
        let a = acc[q];
        if a.addr <= b && b < a.addr + a.size {
            match db.instructions[a.id as usize].kind {
                AccessKind::Store => return Writer::Store(instance_at(acc, q)),
                AccessKind::Clobber => return Writer::External,
                AccessKind::Load => {}
            }
        }
    }
    Writer::External
}

/// Per load instance: writer → (first offset, bytes, one past the last, each byte's offset).
type Deps = BTreeMap<(Instance, Writer), (u64, u64, u64, Vec<u64>)>;

/// What recovery says of a dependence, as [`Deps`] holds it (every load here is narrower
/// than 64 bytes, so its pieces are known).
fn entry(d: &Dependence) -> (u64, u64, u64, Vec<u64>) {
    let pieces = d.pieces().expect("a load narrower than 64 bytes");
    let bytes = pieces.iter().flat_map(|&(at, len)| at..at + len).collect();
    (d.offset, d.bytes, d.end, bytes)
}

fn brute_deps(db: &MemoryDb, acc: &[Access]) -> Deps {
    let mut out = Deps::new();
    for (p, a) in acc.iter().enumerate() {
        if db.instructions[a.id as usize].kind != AccessKind::Load {
            continue;
        }
        let u = instance_at(acc, p);
        for off in 0..a.size {
            let e = out
                .entry((u, backtrack(db, acc, p, a.addr + off)))
                .or_insert((off, 0, 0, Vec::new()));
            e.1 += 1;
            e.2 = off + 1;
            e.3.push(off);
        }
    }
    out
}

/// Whether load `u` is a use at the statement of store `d` (same block and line, before it).
fn is_use_at(db: &MemoryDb, u: u32, d: u32) -> bool {
    let (iu, id) = (&db.instructions[u as usize], &db.instructions[d as usize]);
    u < d
        && iu.kind == AccessKind::Load
        && id.line != 0
        && iu.line == id.line
        && (u..d).all(|x| db.instructions[x as usize].block == id.block)
}

/// Whether store `d` is a block copy whose source is load `u`.
fn copies(db: &MemoryDb, d: u32, u: u32) -> bool {
    db.instructions[d as usize].what == "memcpy dst" && u + 1 == d
}

/// Figure 21 on the raw list: does the load at position `p` start `chain`? Every byte of the
/// load counts, except after a block copy: there only the byte the copy took from its source
/// (`byte`, in the load's coordinates).
fn brute_chain(db: &MemoryDb, acc: &[Access], p: usize, chain: &[u32], byte: Option<u64>) -> bool {
    let Some(&d) = chain.first() else { return true };
    let a = acc[p];
    let bytes = match byte {
        Some(b) => b..(b + 1).min(a.size),
        None => 0..a.size,
    };
    bytes
        .into_iter()
        .any(|off| match backtrack(db, acc, p, a.addr + off) {
            Writer::Store(s) if s.id == d => {
                let q = (0..p)
                    .rev()
                    .find(|&q| instance_at(acc, q) == s)
                    .expect("writer position");
                match chain.get(1) {
                    None => true,
                    Some(&u) => {
                        // The copy's byte is the same byte of its source.
                        let copied = copies(db, d, u).then(|| a.addr + off - acc[q].addr);
                        is_use_at(db, u, d)
                            && (0..q)
                                .rev()
                                .find(|&r| acc[r].id == u)
                                .is_some_and(|r| brute_chain(db, acc, r, &chain[2..], copied))
                    }
                }
            }
            _ => false,
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Loads of 17 to 63 bytes over stores of 1 or 2: dozens of writers each, some of them
    /// repeated (the map path of `Recovery`).
    #[test]
    fn recovery_matches_backtracking_on_wide_loads((db, mut acc) in case_with(96, 64)) {
        for a in &mut acc {
            a.size = match db.instructions[a.id as usize].kind {
                AccessKind::Load => 17 + a.size % 47,
                _ => 1 + a.size % 2,
            };
        }
        let mut got = Deps::new();
        recover(&db, [Ok::<_, std::convert::Infallible>(acc.clone())], |d| {
            let old = got.insert((d.load, d.store), entry(d));
            assert!(old.is_none(), "writer reported twice for one load");
        }).unwrap();
        prop_assert_eq!(&got, &brute_deps(&db, &acc));
    }

    #[test]
    fn recovery_matches_backtracking((db, acc) in case()) {
        let mut got = Deps::new();
        let stats = recover(&db, [Ok::<_, std::convert::Infallible>(acc.clone())], |d| {
            let old = got.insert((d.load, d.store), entry(d));
            assert!(old.is_none(), "writer reported twice for one load");
        }).unwrap();
        let want = brute_deps(&db, &acc);
        prop_assert_eq!(&got, &want);
        let loads = acc.iter().filter(|a| db.instructions[a.id as usize].kind == AccessKind::Load).count();
        prop_assert_eq!(stats.loads, loads as u64);
        prop_assert_eq!(stats.dependences + stats.external, want.len() as u64);
    }

    /// The same accesses spread over threads (in runs, as the AT reader gives them): the
    /// dependences are those of the one order, and each names the load's thread and the
    /// thread of the store position the backtracking finds.
    #[test]
    fn threaded_recovery_matches_backtracking((db, acc) in case(), threads in prop::collection::vec(0u32..3, 120)) {
        let thread = |p: usize| threads[p];
        let mut runs: Vec<Run> = Vec::new();
        for (p, &a) in acc.iter().enumerate() {
            match runs.last_mut() {
                Some(r) if r.thread == thread(p) => r.accesses.push(a),
                _ => runs.push(Run { thread: thread(p), accesses: vec![a] }),
            }
        }
        let mut got = BTreeMap::new();
        let stats = recover(&db, runs.into_iter().map(Ok::<_, std::convert::Infallible>), |d| {
            got.insert((d.load, d.store), (d.thread, d.store_thread));
        }).unwrap();
        let position = |i: Instance| (0..acc.len()).find(|&q| instance_at(&acc, q) == i).unwrap();
        let want: BTreeMap<_, _> = brute_deps(&db, &acc)
            .into_keys()
            .map(|(u, w)| {
                let store_thread = match w {
                    Writer::Store(s) => Some(thread(position(s))),
                    Writer::External => None,
                };
                ((u, w), (thread(position(u)), store_thread))
            })
            .collect();
        let cross = want.values().filter(|(l, s)| s.is_some_and(|s| s != *l)).count();
        prop_assert_eq!(&got, &want);
        prop_assert_eq!(stats.cross_thread, cross as u64);
    }

    #[test]
    fn chains_match_figure_21_by_brute_force((db, acc) in case(), depth in 1usize..4) {
        let index = ChainIndex::build(&db, [Ok::<_, std::convert::Infallible>(acc.clone())]).unwrap();
        for u0 in 0..db.instructions.len() as u32 {
            if db.instructions[u0 as usize].kind != AccessKind::Load {
                continue;
            }
            let positions: Vec<usize> = (0..acc.len()).filter(|&p| acc[p].id == u0).collect();
            let chains = index.chains(u0, depth);
            // The index of only what these chains need, level by level, gives the same.
            let open = || Ok(vec![Ok::<_, std::convert::Infallible>(acc.clone())]);
            let only = ChainIndex::build_for(&db, &[u0], depth, open).unwrap();
            prop_assert_eq!(&only.chains(u0, depth), &chains);
            for (chain, &freq) in &chains {
                prop_assert!(freq > 0);
                let brute = positions.iter().filter(|&&p| brute_chain(&db, &acc, p, chain, None)).count() as u64;
                prop_assert_eq!(freq, brute, "chain {:?} from {}", chain, u0);
                prop_assert_eq!(index.chain_freq(u0, chain), brute);
            }
            // Every one-step chain the brute force finds is enumerated.
            for d in 0..db.instructions.len() as u32 {
                let brute = positions.iter().filter(|&&p| brute_chain(&db, &acc, p, &[d], None)).count() as u64;
                prop_assert_eq!(chains.get(&vec![d]).copied().unwrap_or(0), brute);
            }
        }
    }
}
