//! The eCF against the address trace: on random programs (functions of blocks of memory
//! instructions, calls between a block's instructions, addresses fixed or varying), the
//! dependences recovered from the eCF equal those the last-writer replay of the AT finds,
//! instance by instance; chains and `ChainFreq` agree; the eCF survives SEQUITUR exactly.

use proptest::prelude::*;
use std::collections::BTreeSet;
use wpp_deps::chain::ChainIndex;
use wpp_deps::ecf::{self, EcfDependence};
use wpp_deps::filter::{classify, FilterReport};
use wpp_deps::{recover, Access, AccessKind, Instance, MemInstr, MemoryDb, Writer};
use wpp_grammar::{compress, expand::expand_into, Algorithm};
use wpp_trace::{Alphabet, BlockId, Event, FunctionId};

/// splitmix64: the test's own generator, so a case is one seed.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

struct Program {
    db: MemoryDb,
    /// Per function, per block: instruction ids.
    blocks: Vec<Vec<Vec<u32>>>,
    /// Per instruction: its one address, if fixed.
    fixed: Vec<Option<(u64, u64)>>,
}

fn program(r: &mut Rng) -> Program {
    let mut db = MemoryDb {
        version: 1,
        ..Default::default()
    };
    let mut blocks = Vec::new();
    let mut fixed = Vec::new();
    for f in 0..1 + r.below(3) as u32 {
        let mut fb = Vec::new();
        for b in 0..1 + r.below(3) as u32 {
            let mut ids = Vec::new();
            for _ in 0..r.below(4) {
                ids.push(db.instructions.len() as u32);
                let kind = [AccessKind::Load, AccessKind::Store, AccessKind::Clobber]
                    [[0, 0, 1, 1, 2][r.below(5) as usize]];
                db.instructions.push(MemInstr {
                    function: f,
                    block: b,
                    line: r.below(2) as u32,
                    column: 0,
                    file: wpp_deps::memdb::NO_FILE,
                    kind,
                    what: String::new(),
                });
                fixed.push((r.below(2) == 0).then(|| (r.below(24), 1 + r.below(8))));
            }
            fb.push(ids);
        }
        blocks.push(fb);
        db.program.functions.push(wpp_trace::Function {
            name: format!("f{f}"),
            ..Default::default()
        });
    }
    Program { db, blocks, fixed }
}

fn run(p: &Program, r: &mut Rng, f: usize, depth: u32, ev: &mut Vec<Event>, at: &mut Vec<Access>) {
    ev.push(Event::Enter(FunctionId(f as u32)));
    for _ in 0..1 + r.below(4) {
        let b = r.below(p.blocks[f].len() as u64) as usize;
        ev.push(Event::Block(BlockId(b as u32)));
        for &id in &p.blocks[f][b] {
            // Calls go to later functions only: see `ecf`'s "Alignment" on recursion.
            if depth < 2 && f + 1 < p.blocks.len() && r.below(4) == 0 {
                let g = f + 1 + r.below((p.blocks.len() - f - 1) as u64) as usize;
                run(p, r, g, depth + 1, ev, at);
            }
            let (addr, size) =
                p.fixed[id as usize].unwrap_or_else(|| (r.below(24), 1 + r.below(8)));
            at.push(Access { id, addr, size });
        }
    }
    ev.push(Event::Leave);
}

type Pairs = BTreeSet<(Instance, Instance)>;

fn at_truth(db: &MemoryDb, at: &[Access]) -> Pairs {
    let mut out = Pairs::new();
    recover(db, [Ok::<_, std::convert::Infallible>(at.to_vec())], |d| {
        if let Writer::Store(s) = d.store {
            out.insert((d.load, s));
        }
    })
    .unwrap();
    out
}

fn case(seed: u64, keep: u64) -> (Program, Vec<Event>, Vec<Access>, FilterReport) {
    let mut r = Rng(seed);
    let p = program(&mut r);
    let (mut ev, mut at) = (Vec::new(), Vec::new());
    for _ in 0..1 + r.below(3) {
        run(&p, &mut r, 0, 0, &mut ev, &mut at);
    }
    let mut report = classify(&p.db, [Ok::<_, std::convert::Infallible>(at.clone())]).unwrap();
    // Drop some pairs: the filtering run "did not see" them.
    report.pairs.retain(|_| r.below(8) < keep);
    (p, ev, at, report)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn ecf_recovery_equals_at_recovery(seed in any::<u64>(), keep in 4u64..9) {
        let (p, ev, at, report) = case(seed, keep);
        let db = &p.db;
        let built = ecf::build(db, &ev, [Ok::<_, std::convert::Infallible>(at.clone())], &report).unwrap();
        let mut got = Vec::new();
        ecf::recover(db, &built.events, |d: EcfDependence| got.push(d)).unwrap();
        let got_pairs: Pairs = got.iter().map(|d| (d.load, d.store)).collect();
        prop_assert_eq!(got_pairs.len(), got.len(), "a dependence recovered twice");
        let want = at_truth(db, &at);
        prop_assert_eq!(&got_pairs, &want);
        prop_assert_eq!(built.stats.dependences, want.len() as u64);
        let exercised: BTreeSet<(u32, u32)> = report.pairs.iter().map(|p| (p.store, p.load)).collect();
        for d in &got {
            prop_assert_eq!(d.unexpected, !exercised.contains(&(d.store.id, d.load.id)));
        }
        prop_assert!(built.stats.binary <= built.stats.linear + built.stats.dependences * 64);
        prop_assert_eq!(got.iter().map(|d| u64::from(d.comparisons)).sum::<u64>(), built.stats.binary);
        prop_assert_eq!(got.iter().map(|d| d.linear).sum::<u64>(), built.stats.linear);
        let count = |f| got.iter().filter(|d| d.found == f).count() as u64;
        prop_assert_eq!(count(ecf::Found::Last), built.stats.fixed);
        prop_assert_eq!(count(ecf::Found::Predicted), built.stats.predicted);
        // Without the check calls, the eCF is the block trace.
        let check = ecf::check_function(db);
        let mut depth = 0;
        let plain: Vec<Event> = built.events.iter().copied().filter(|&e| {
            let inside = depth > 0 || e == Event::Enter(check);
            match e { Event::Enter(f) if f == check => depth = 1, Event::Leave if depth > 0 => { depth = 0; return false } _ => {} }
            !inside
        }).collect();
        prop_assert_eq!(plain, ev);
    }

    #[test]
    fn chains_from_the_ecf_equal_chains_from_the_at(seed in any::<u64>(), depth in 1usize..4) {
        let (p, ev, at, report) = case(seed, 8);
        let db = &p.db;
        let built = ecf::build(db, &ev, [Ok::<_, std::convert::Infallible>(at.clone())], &report).unwrap();
        let mut deps = Vec::new();
        let instances = ecf::recover(db, &built.events, |d| deps.push((d.load, d.store))).unwrap();
        let from_ecf = ChainIndex::from_dependences(db, deps, instances);
        let from_at = ChainIndex::build(db, [Ok::<_, std::convert::Infallible>(at)]).unwrap();
        for u0 in 0..db.instructions.len() as u32 {
            if db.instructions[u0 as usize].kind != AccessKind::Load { continue; }
            let chains = from_at.chains(u0, depth);
            prop_assert_eq!(&from_ecf.chains(u0, depth), &chains);
            // A level at a time, as for a raw eCF: only what these chains need, the same.
            let levels = ChainIndex::build_for_ecf(db, &[u0], depth, |push| {
                ecf::recover(db, &built.events, |d| push(d.load, d.store))
            }).unwrap();
            prop_assert_eq!(&levels.chains(u0, depth), &chains);
            for chain in chains.keys() {
                prop_assert_eq!(from_ecf.chain_freq(u0, chain), from_at.chain_freq(u0, chain));
            }
        }
    }

    #[test]
    fn ecf_round_trips_through_sequitur(seed in any::<u64>()) {
        let (p, ev, at, report) = case(seed, 8);
        let built = ecf::build(&p.db, &ev, [Ok::<_, std::convert::Infallible>(at)], &report).unwrap();
        let mut alphabet = Alphabet::new();
        let terms: Vec<_> = built.events.iter().map(|&e| alphabet.intern(e).unwrap()).collect();
        let g = compress(Algorithm::Sequitur, &[&terms]).unwrap();
        let mut back = Vec::new();
        expand_into(&g, g.starts()[0].rule, &mut back);
        prop_assert_eq!(back, terms);
    }
}

/// Function 0: a store in block 0, a load in block 1.
fn store_then_load() -> MemoryDb {
    MemoryDb {
        version: 1,
        instructions: vec![
            instruction(0, AccessKind::Store),
            instruction(1, AccessKind::Load),
        ],
        ..Default::default()
    }
}

/// A memory instruction of function 0 in block `block`.
fn instruction(block: u32, kind: AccessKind) -> MemInstr {
    MemInstr {
        function: 0,
        block,
        line: 1,
        column: 0,
        file: wpp_deps::memdb::NO_FILE,
        kind,
        what: String::new(),
    }
}

/// Figure 12/13 by hand: store 0 runs in block 0 five times (timestamps 2, 4, 6, 8, 10 with
/// the load's block 1 between), then stores to another address; the load reads the address of
/// the second instance. The paper searches the timestamps [2, 4, 6, 8, 10] for 4; the ranks
/// 1..=5 for 2 make the same comparisons: mid 3 → B0, mid 1 → B1, mid 2 → E.
#[test]
fn binary_search_by_hand() {
    let db = store_then_load();
    let mut ev = vec![Event::Enter(FunctionId(0))];
    let mut at = Vec::new();
    for k in 0..5u64 {
        ev.push(Event::Block(BlockId(0)));
        at.push(Access {
            id: 0,
            addr: 8 * k,
            size: 8,
        });
        ev.push(Event::Block(BlockId(1)));
        at.push(Access {
            id: 1,
            addr: 100,
            size: 8,
        });
    }
    ev.push(Event::Block(BlockId(1)));
    at.push(Access {
        id: 1,
        addr: 8,
        size: 8,
    });
    ev.push(Event::Leave);
    let report = classify(&db, [Ok::<_, std::convert::Infallible>(at.clone())]).unwrap();
    let built = ecf::build(&db, &ev, [Ok::<_, std::convert::Infallible>(at)], &report).unwrap();
    let b = |x: u32| Event::Block(BlockId(x));
    let check = ecf::check_function(&db);
    let tail = &built.events[built.events.len() - 8..];
    assert_eq!(
        tail,
        [
            Event::Enter(check),
            Event::Block(ecf::site(1)),
            Event::Block(ecf::source(0)),
            b(ecf::LOWER),
            b(ecf::HIGHER),
            b(ecf::END),
            Event::Leave,
            Event::Leave,
        ]
    );
    assert_eq!(built.stats.binary, 3);
    assert_eq!(built.stats.linear, 4); // 10, 8, 6, 4
    let mut got = Vec::new();
    ecf::recover(&db, &built.events, |d| got.push(d)).unwrap();
    assert_eq!(
        got,
        [EcfDependence {
            store: Instance { id: 0, n: 2 },
            load: Instance { id: 1, n: 6 },
            unexpected: false,
            comparisons: 3,
            found: ecf::Found::Searched,
            linear: 4,
        }]
    );
}

/// A `longjmp` in a `trace-addr` recording, by hand: `g` (function 0) stores `A`, calls
/// `setjmp`, stores and loads `r` (block 0); calls `h` (block 1), which stores `x` and calls
/// `k`, which loads `x` and `longjmp`s back: the runtime's `Leave`s for `k` and `h` (left
/// half-way: its load after the call never runs), then `g` stores and loads `r` again in
/// block 0 with no block event, and loads `r` in block 2. The eCF gets `Block(0)` again where
/// `setjmp` returned (as the collection run records it), and recovery gives the AT's
/// dependences, instance by instance.
#[test]
fn a_longjmp_resumes_the_setjmp_block() {
    let at_fn = |function, block, kind| MemInstr {
        function,
        block,
        ..instruction(block, kind)
    };
    let db = MemoryDb {
        version: 1,
        instructions: vec![
            at_fn(0, 0, AccessKind::Store), // 0: A
            at_fn(0, 0, AccessKind::Store), // 1: r = setjmp(…)
            at_fn(0, 0, AccessKind::Load),  // 2: if (r)
            at_fn(0, 2, AccessKind::Load),  // 3: return r
            at_fn(1, 0, AccessKind::Store), // 4: x = …; k();
            at_fn(1, 0, AccessKind::Load),  // 5: … x (never runs)
            at_fn(2, 0, AccessKind::Load),  // 6: … x; longjmp
        ],
        ..Default::default()
    };
    let (f, b) = (
        |x| Event::Enter(FunctionId(x)),
        |x| Event::Block(BlockId(x)),
    );
    let ev = [
        f(0),
        b(0),
        b(1),
        f(1),
        b(0),
        f(2),
        b(0),
        Event::Leave,
        Event::Leave,
        b(2),
        Event::Leave,
    ];
    let a = |id, addr| Access { id, addr, size: 8 };
    let at = vec![
        a(0, 0),
        a(1, 8),
        a(2, 8),
        a(4, 16),
        a(6, 16),
        a(1, 8),
        a(2, 8),
        a(3, 8),
    ];
    let ok = || [Ok::<_, std::convert::Infallible>(at.clone())];
    let report = classify(&db, ok()).unwrap();
    let built = ecf::build(&db, &ev, ok(), &report).unwrap();
    let check = ecf::check_function(&db);
    let mut program = Vec::new();
    let mut inside = false;
    for &e in &built.events {
        match e {
            Event::Enter(c) if c == check => inside = true,
            Event::Leave if inside => inside = false,
            _ if !inside => program.push(e),
            _ => {}
        }
    }
    let mut want = ev.to_vec();
    want.insert(9, b(0));
    assert_eq!(program, want);
    let mut got = Pairs::new();
    ecf::recover(&db, &built.events, |d| {
        assert!(got.insert((d.load, d.store)), "{d:?} twice");
    })
    .unwrap();
    assert_eq!(got, at_truth(&db, &at));
    assert_eq!(got.len(), 4);
}

/// A block left half-way is still refused where the access that comes next is its own
/// function's: the placement cannot tell a `longjmp` from an access it gave the wrong frame.
#[test]
fn a_block_left_half_way_for_its_own_function_is_refused() {
    let db = MemoryDb {
        version: 1,
        instructions: vec![
            instruction(0, AccessKind::Store),
            instruction(0, AccessKind::Load),
        ],
        ..Default::default()
    };
    let (f, b) = (Event::Enter(FunctionId(0)), Event::Block(BlockId(0)));
    let ev = [f, b, Event::Leave, f, b, Event::Leave];
    let a = |id| Access {
        id,
        addr: 0,
        size: 8,
    };
    let at = vec![a(0), a(0), a(1)];
    let ok = || [Ok::<_, std::convert::Infallible>(at.clone())];
    let report = classify(&db, ok()).unwrap();
    let e = ecf::build(&db, &ev, ok(), &report).err().expect("refused");
    assert!(e.to_string().contains("needs whole blocks"), "{e}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// A damaged eCF (one event replaced or dropped) gives dependences or an error naming
    /// an event, never a panic.
    #[test]
    fn damaged_ecf_never_panics(seed in any::<u64>(), at in any::<prop::sample::Index>(), kind in 0u32..4, x in 0u32..40) {
        let (p, ev, acc, report) = case(seed, 8);
        let mut events = ecf::build(&p.db, &ev, [Ok::<_, std::convert::Infallible>(acc)], &report).unwrap().events;
        let i = at.index(events.len());
        match kind {
            0 => { events.remove(i); }
            1 => events[i] = Event::Block(BlockId(x)),
            2 => events[i] = Event::Enter(FunctionId(x % 4)),
            _ => events[i] = Event::Leave,
        }
        if let Err(e) = ecf::recover(&p.db, &events, |_| {}) {
            prop_assert!(e.to_string().starts_with("eCF event "), "{}", e);
        }
    }
}

/// What a collection run sees: block events and accesses in the order they ran.
enum Item {
    Event(Event),
    Access(Access),
}

/// Like [`run`], but calls go to any function, the caller's own included (recursion from the
/// middle of a block), and a block may be left half-way (`longjmp`, an exception: the frame
/// ends there), which a recording's greedy alignment cannot place but the collection can.
fn run_anywhere(p: &Program, r: &mut Rng, f: usize, depth: u32, out: &mut Vec<Item>) {
    out.push(Item::Event(Event::Enter(FunctionId(f as u32))));
    'blocks: for _ in 0..1 + r.below(4) {
        let b = r.below(p.blocks[f].len() as u64) as usize;
        out.push(Item::Event(Event::Block(BlockId(b as u32))));
        for &id in &p.blocks[f][b] {
            if depth < 3 && r.below(3) == 0 {
                let g = r.below(p.blocks.len() as u64) as usize;
                run_anywhere(p, r, g, depth + 1, out);
            }
            if r.below(12) == 0 {
                break 'blocks;
            }
            let (addr, size) =
                p.fixed[id as usize].unwrap_or_else(|| (r.below(24), 1 + r.below(8)));
            out.push(Item::Access(Access { id, addr, size }));
        }
    }
    out.push(Item::Event(Event::Leave));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// The collection's eCF, with recursion from mid-block and blocks left half-way: recovery
    /// gives exactly the AT's dependences, instance by instance, and SEQUITUR keeps it.
    #[test]
    fn collection_recovery_equals_at_recovery(seed in any::<u64>(), keep in 4u64..9) {
        let mut r = Rng(seed);
        let p = program(&mut r);
        let mut items = Vec::new();
        for _ in 0..1 + r.below(3) {
            let f = r.below(p.blocks.len() as u64) as usize;
            run_anywhere(&p, &mut r, f, 0, &mut items);
        }
        let at: Vec<Access> = items.iter().filter_map(|i| match i { Item::Access(a) => Some(*a), _ => None }).collect();
        let mut report = classify(&p.db, [Ok::<_, std::convert::Infallible>(at.clone())]).unwrap();
        report.pairs.retain(|_| r.below(8) < keep);
        let (out, c) = collect(&p.db, &items, &report);
        let mut got = Vec::new();
        ecf::recover(&p.db, &out, |d| got.push((d.load, d.store))).unwrap();
        let got_pairs: Pairs = got.iter().copied().collect();
        prop_assert_eq!(got_pairs.len(), got.len(), "a dependence recovered twice");
        prop_assert_eq!(got_pairs, at_truth(&p.db, &at));
        prop_assert_eq!(c.stats().dependences, got.len() as u64);
    }
}

/// The eCF the collection run writes for `items`, and its collector.
fn collect<'a>(
    db: &'a MemoryDb,
    items: &[Item],
    report: &'a FilterReport,
) -> (Vec<Event>, ecf::Collector<'a>) {
    let mut c = ecf::Collector::new(db, report);
    let mut out = Vec::new();
    for i in items {
        match *i {
            Item::Event(e) => {
                c.event(e).unwrap();
                out.push(e);
            }
            Item::Access(a) => c.access(a, &mut out).unwrap(),
        }
    }
    (out, c)
}

/// A collection eCF of `runs` calls from the top, some loads' pairs not exercised.
fn collection_case(seed: u64, runs: u64) -> (Program, Vec<Event>) {
    let mut r = Rng(seed);
    let p = program(&mut r);
    let mut items = Vec::new();
    for _ in 0..1 + r.below(runs) {
        let f = r.below(p.blocks.len() as u64) as usize;
        run_anywhere(&p, &mut r, f, 0, &mut items);
    }
    let at: Vec<Access> = items
        .iter()
        .filter_map(|i| match i {
            Item::Access(a) => Some(*a),
            _ => None,
        })
        .collect();
    let mut report = classify(&p.db, [Ok::<_, std::convert::Infallible>(at)]).unwrap();
    report.pairs.retain(|_| r.below(8) < 6);
    let out = collect(&p.db, &items, &report).0;
    (p, out)
}

/// What a full recovery of `events` (§5) gives for `loads`: their dependences, and the error.
fn full_recovery(
    db: &MemoryDb,
    events: &[Event],
    loads: &[u32],
) -> (Vec<EcfDependence>, Option<String>) {
    let mut got = Vec::new();
    let r = ecf::recover(db, events, |d| {
        if loads.contains(&d.load.id) {
            got.push(d)
        }
    });
    (got, r.err().map(|e| e.to_string()))
}

/// The same from the grammar `algorithm` makes of `events`, by [`ecf::rules::recover_loads`].
fn rule_recovery(
    db: &MemoryDb,
    events: &[Event],
    loads: &[u32],
    algorithm: Algorithm,
) -> (Vec<EcfDependence>, Option<String>, Vec<(u32, u64)>) {
    let mut alphabet = Alphabet::new();
    let terms: Vec<_> = events
        .iter()
        .map(|&e| alphabet.intern(e).unwrap())
        .collect();
    let g = compress(algorithm, &[&terms]).unwrap();
    let mut got = Vec::new();
    let r = ecf::rules::recover_loads(db, &g, alphabet.events(), g.starts()[0].rule, loads, |d| {
        got.push(d)
    });
    let runs = r.as_ref().cloned().unwrap_or_default();
    (got, r.err().map(|e| e.to_string()), runs)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(150))]

    /// One load's (or a few loads') dependences from the grammar, summarizing the rules that
    /// hold none of its calls, are exactly the full recovery's for those loads, with every
    /// compressor, on eCFs with recursion from mid-block, blocks left half-way, and cut short
    /// anywhere (a recording killed inside a check).
    #[test]
    fn one_loads_dependences_from_the_grammar_equal_the_full_recovery(seed in any::<u64>(), cut in any::<prop::sample::Index>(), cut_it in any::<bool>()) {
        let (p, mut events) = collection_case(seed, 40);
        if cut_it {
            events.truncate(cut.index(events.len() + 1));
        }
        let loads: Vec<u32> = (0..p.db.instructions.len() as u32).filter(|&i| p.db.instructions[i as usize].kind == AccessKind::Load).collect();
        let mut asked: Vec<Vec<u32>> = loads.iter().map(|&u| vec![u]).collect();
        asked.push(loads.clone());
        asked.push(loads.iter().copied().step_by(2).collect());
        for algorithm in Algorithm::ALL {
            for a in &asked {
                let (want, want_err) = full_recovery(&p.db, &events, a);
                let (got, got_err, got_runs) = rule_recovery(&p.db, &events, a, algorithm);
                prop_assert_eq!(&got, &want, "{:?} loads {:?}", algorithm, a);
                prop_assert_eq!(&got_err, &want_err, "{:?} loads {:?}", algorithm, a);
                if got_err.is_none() {
                    let runs = ecf::recover(&p.db, &events, |_| {}).unwrap();
                    let want_runs: Vec<_> = a.iter().map(|&u| (u, runs[u as usize])).collect();
                    prop_assert_eq!(&got_runs, &want_runs);
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(100))]

    /// Chains and `ChainFreq` (Figure 21) from the grammar, whose dependences are recovered
    /// level by level for the loads the chains reach, are the whole eCF's.
    #[test]
    fn chains_from_the_grammar_equal_the_whole_runs(seed in any::<u64>(), depth in 1usize..4, pick in any::<prop::sample::Index>()) {
        let (p, events) = collection_case(seed, 40);
        let db = &p.db;
        let loads: Vec<u32> = (0..db.instructions.len() as u32).filter(|&i| db.instructions[i as usize].kind == AccessKind::Load).collect();
        prop_assume!(!loads.is_empty());
        let u0 = loads[pick.index(loads.len())];
        let mut deps = Vec::new();
        let instances = ecf::recover(db, &events, |d| deps.push((d.load, d.store))).unwrap();
        let whole = ChainIndex::from_dependences(db, deps, instances);
        let mut alphabet = Alphabet::new();
        let terms: Vec<_> = events.iter().map(|&e| alphabet.intern(e).unwrap()).collect();
        for algorithm in [Algorithm::Sequitur, Algorithm::Frequency] {
            let g = compress(algorithm, &[&terms]).unwrap();
            let index = ecf::rules::chain_index(db, &g, alphabet.events(), g.starts()[0].rule, &[u0], depth).unwrap();
            let chains = whole.chains(u0, depth);
            prop_assert_eq!(&index.chains(u0, depth), &chains);
            for chain in chains.keys() {
                prop_assert_eq!(index.chain_freq(u0, chain), whole.chain_freq(u0, chain));
            }
        }
    }
}

/// A load after a recursive call from its own block: the outer execution of the block ran
/// first but reads second, so the load's instances are not its block's ranks; the check says
/// by how much (`SHIFT`), and recovery gives the AT's instances.
#[test]
fn shift_by_hand() {
    let db = store_then_load();
    let (f, b) = (FunctionId(0), |x| Event::Block(BlockId(x)));
    let store = Access {
        id: 0,
        addr: 0,
        size: 4,
    };
    let load = Access {
        id: 1,
        addr: 0,
        size: 4,
    };
    // f: B0 (store) B1 [call f: B0 (store) B1 (load)] (load)
    let items = [
        Item::Event(Event::Enter(f)),
        Item::Event(b(0)),
        Item::Access(store),
        Item::Event(b(1)),
        Item::Event(Event::Enter(f)),
        Item::Event(b(0)),
        Item::Access(store),
        Item::Event(b(1)),
        Item::Access(load),
        Item::Event(Event::Leave),
        Item::Access(load),
        Item::Event(Event::Leave),
    ];
    let report = FilterReport::default();
    let mut c = ecf::Collector::new(&db, &report);
    let mut out = Vec::new();
    for i in &items {
        match *i {
            Item::Event(e) => {
                c.event(e).unwrap();
                out.push(e);
            }
            Item::Access(a) => c.access(a, &mut out).unwrap(),
        }
    }
    let check = ecf::check_function(&db);
    // The inner load ran first (instance 1) in block 1's second execution (rank 2): shift
    // zigzag(1 - 2) = 1; the outer load is instance 2 at rank 1: zigzag(1) = 2, binary 10.
    // Each reads the store of its own frame's block 0: instance 2, then instance 2 again
    // (the inner store overwrote the outer's), the latest of 2 executions: the second check
    // is the pair's previous instance, `AGAIN`, with no search.
    let tail = &out[out.len() - 11..out.len() - 1];
    assert_eq!(
        *tail,
        [
            Event::Enter(check),
            Event::Block(ecf::site(1)),
            b(ecf::SHIFT),
            b(ecf::HIGHER),
            b(ecf::LOWER),
            b(ecf::END),
            b(ecf::UNEXPECTED),
            Event::Block(ecf::source(0)),
            b(ecf::AGAIN),
            Event::Leave,
        ]
    );
    let mut got = Vec::new();
    ecf::recover(&db, &out, |d| got.push((d.load, d.store))).unwrap();
    let want = at_truth(&db, &[store, store, load, load]);
    assert_eq!(got.into_iter().collect::<Pairs>(), want);
}

/// A damaged eCF whose last check of load 1 follows, in the load's frame, another block and
/// a call (a stretch that repeats, so a rule holds it): the grammar walk, which applies that
/// rule whole, refuses the check as a full recovery does, never taking the earlier execution
/// of the load's block as its caller.
#[test]
fn a_check_after_another_block_is_refused_from_the_grammar() {
    let mut db = store_then_load();
    db.program.functions = vec![wpp_trace::Function::default(); 2];
    let (b, check) = (|x| Event::Block(BlockId(x)), ecf::check_function(&db));
    let check_call = [
        Event::Enter(check),
        Event::Block(ecf::site(1)),
        Event::Block(ecf::source(0)),
        b(ecf::LAST),
        Event::Leave,
    ];
    let other = [b(2), Event::Enter(FunctionId(1)), b(3), Event::Leave];
    let mut events = vec![Event::Enter(FunctionId(0))];
    for _ in 0..30 {
        events.extend([b(0), b(1)]);
        events.extend(check_call);
        events.extend(other);
    }
    events.extend([b(0), b(1)]);
    events.extend(other);
    events.extend(check_call);
    events.push(Event::Leave);
    let (want, want_err) = full_recovery(&db, &events, &[1]);
    assert_eq!(want.len(), 30);
    let want_err = want_err.expect("the full recovery refuses the last check");
    assert!(
        want_err.contains("not called from its load's block"),
        "{want_err}"
    );
    for algorithm in Algorithm::ALL {
        let (got, got_err, _) = rule_recovery(&db, &events, &[1], algorithm);
        assert_eq!(got, want, "{algorithm:?}");
        assert_eq!(got_err.as_ref(), Some(&want_err), "{algorithm:?}");
    }
}

/// A stream read in the order it was written: store 0 fills five bytes (instances 1–5), then
/// load 1 reads them in order. The first check searches (no previous dependence of the pair);
/// each later one is the instance after the previous one's, `NEXT`; a second pass reading the
/// last byte twice is the same instance, `AGAIN`. Recovery gives the AT's instances.
#[test]
fn predicted_instances_by_hand() {
    let (db, at, built) = one_pair_ecf(5, &[0, 1, 2, 3, 4, 4]);
    let after_source: Vec<u32> = built
        .events
        .windows(2)
        .filter(|w| w[0] == Event::Block(ecf::source(0)))
        .map(|w| match w[1] {
            Event::Block(b) => b.0,
            e => panic!("{e:?} after the source"),
        })
        .collect();
    // Store 0 ran 5 times: the first search for 1 compares with 3 (B0), then 1 (E).
    let b0 = ecf::LOWER;
    assert_eq!(
        after_source,
        [b0, ecf::NEXT, ecf::NEXT, ecf::NEXT, ecf::NEXT, ecf::AGAIN]
    );
    assert_eq!(built.stats.predicted, 5);
    assert_eq!(built.stats.binary, 2 + 4 * 2 + 1);
    let mut got = Vec::new();
    ecf::recover(&db, &built.events, |d| got.push(d)).unwrap();
    let stores: Vec<u64> = got.iter().map(|d| d.store.n).collect();
    assert_eq!(stores, [1, 2, 3, 4, 5, 5]);
    assert_eq!(
        got.iter().map(|d| u64::from(d.comparisons)).sum::<u64>(),
        built.stats.binary
    );
    let pairs: Pairs = got.iter().map(|d| (d.load, d.store)).collect();
    assert_eq!(pairs, at_truth(&db, &at));
}

/// Two suffixes of one buffer compared byte by byte, as bzip2's `mainGtU` does: store 0 fills
/// 32 bytes (instances 1–32); then each comparison reads byte `i` (load 1), byte `j` (load 3),
/// byte `i + 1` (load 2) and byte `j + 1` (load 4), all in function 0, at new `i` and `j`
/// each time. Loads 2 and 4 each read one place per comparison, so their pairs' previous
/// instances predict nothing; but the function's loads read store 0 at `i, j, i + 1`: load 2
/// reads the instance after the one the stream read before its latest (`OTHER_NEXT`), from its
/// first check on, and so does load 4. Recovery gives the AT's instances, from the eCF and from the grammar.
#[test]
fn stream_predictions_by_hand() {
    let db = MemoryDb {
        version: 1,
        instructions: std::iter::once(instruction(0, AccessKind::Store))
            .chain((1..=4).map(|b| instruction(b, AccessKind::Load)))
            .collect(),
        ..Default::default()
    };
    let mut ev = vec![Event::Enter(FunctionId(0))];
    let mut at = Vec::new();
    let mut access = |id: u32, addr: u64| {
        ev.push(Event::Block(BlockId(id)));
        at.push(Access { id, addr, size: 1 });
    };
    (0..32).for_each(|k| access(0, k));
    for (i, j) in [(3, 20), (9, 14), (25, 1), (17, 6)] {
        [(1, i), (3, j), (2, i + 1), (4, j + 1)]
            .into_iter()
            .for_each(|(id, addr)| access(id, addr));
    }
    ev.push(Event::Leave);
    let (_, built) = any_instance_ecf(&db, &ev, &at);
    let after = |load: u32| -> Vec<u32> {
        built
            .events
            .windows(3)
            .filter(|w| w[0] == Event::Block(ecf::site(load)))
            .map(|w| match w[2] {
                Event::Block(b) => b.0,
                e => panic!("{e:?} after the source"),
            })
            .collect()
    };
    for load in [2, 4] {
        assert_eq!(after(load), [ecf::OTHER_NEXT; 4], "load {load}");
    }
    let mut got = Vec::new();
    let mut predicted = 0;
    ecf::recover(&db, &built.events, |d| {
        predicted += u64::from(d.found == ecf::Found::Predicted);
        got.push((d.load, d.store))
    })
    .unwrap();
    assert_eq!(got.iter().copied().collect::<Pairs>(), at_truth(&db, &at));
    // The count `wpp deps stats` prints is the predicted checks recovery reads back.
    assert_eq!(built.stats.predicted, predicted);
    assert!(predicted >= 8);
    for algorithm in Algorithm::ALL {
        let (from_rules, err, _) = rule_recovery(&db, &built.events, &[2], algorithm);
        assert_eq!(err, None);
        let want: Vec<_> = got.iter().filter(|(u, _)| u.id == 2).copied().collect();
        let got: Vec<_> = from_rules.iter().map(|d| (d.load, d.store)).collect();
        assert_eq!(got, want, "{algorithm:?}");
    }
}

/// The eCF of store 0 writing bytes `0..stored` in order (instances 1, 2, …), then load 1
/// reading the bytes `reads`, the pair classified any-instance; with its AT.
fn one_pair_ecf(stored: u64, reads: &[u64]) -> (MemoryDb, Vec<Access>, ecf::Ecf) {
    one_pair_ecf_in(1, stored, reads)
}

/// [`one_pair_ecf`] with the load in block `load_block` (the store is in block 0).
fn one_pair_ecf_in(
    load_block: u32,
    stored: u64,
    reads: &[u64],
) -> (MemoryDb, Vec<Access>, ecf::Ecf) {
    let mut db = store_then_load();
    db.instructions[1].block = load_block;
    let mut ev = vec![Event::Enter(FunctionId(0))];
    let mut at = Vec::new();
    let accesses = (0..stored)
        .map(|k| (0, k))
        .chain(reads.iter().map(|&k| (1, k)));
    for (id, addr) in accesses {
        ev.push(Event::Block(BlockId([0, load_block][id as usize])));
        at.push(Access { id, addr, size: 1 });
    }
    ev.push(Event::Leave);
    let (pairs, built) = any_instance_ecf(&db, &ev, &at);
    assert_eq!(pairs, 1);
    (db, at, built)
}

/// The eCF of block trace `ev` and AT `at`, with every exercised pair classified
/// any-instance (so every dependence is predicted or searched); and how many pairs there are.
fn any_instance_ecf(db: &MemoryDb, ev: &[Event], at: &[Access]) -> (usize, ecf::Ecf) {
    let at = || [Ok::<_, std::convert::Infallible>(at.to_vec())];
    let mut report = classify(db, at()).unwrap();
    report
        .pairs
        .iter_mut()
        .for_each(|p| p.class = wpp_deps::filter::Class::AnyInstance);
    let built = ecf::build(db, ev, at(), &report).unwrap();
    (report.pairs.len(), built)
}

/// When the predictions miss, the check gives the distance from the previous instance `p`:
/// its direction, then its binary digits after the leading 1. Store 0 wrote 16 bytes; the load
/// reads instance 1 (a search: the pair's first), 13 (above `p + 1 = 2` by 11 = 0b1011) and 4
/// (below 13 by 9 = 0b1001). Recovery gives the AT's instances.
#[test]
fn distances_by_hand() {
    let (db, at, built) = one_pair_ecf(16, &[0, 12, 3]);
    let checks: Vec<Vec<u32>> = built
        .events
        .split(|e| *e == Event::Block(ecf::source(0)))
        .skip(1)
        .map(|after| {
            let body = after.iter().take_while(|e| **e != Event::Leave);
            body.map(|e| match e {
                Event::Block(b) => b.0,
                e => panic!("{e:?} in a check"),
            })
            .collect()
        })
        .collect();
    let (lo, hi, end) = (ecf::LOWER, ecf::HIGHER, ecf::END);
    // The search for 1 in 1..=16: 8, 4, 2 are above it, 1 is the hit.
    let want = [
        vec![lo, lo, lo, end],
        vec![hi, lo, hi, hi, end],
        vec![lo, lo, lo, hi, end],
    ];
    assert_eq!(checks, want);
    // The search's 4; for each distance, the 8 predictions, its direction, digits and end.
    assert_eq!(built.stats.binary, 4 + (10 + 3) + (10 + 3));
    let mut got = Vec::new();
    ecf::recover(&db, &built.events, |d| got.push(d)).unwrap();
    let stores: Vec<u64> = got.iter().map(|d| d.store.n).collect();
    assert_eq!(stores, [1, 13, 4]);
    let comparisons: u64 = got.iter().map(|d| u64::from(d.comparisons)).sum();
    assert_eq!(
        comparisons, built.stats.binary,
        "recovery counts as the collector did"
    );
    let pairs: Pairs = got.iter().map(|d| (d.load, d.store)).collect();
    assert_eq!(pairs, at_truth(&db, &at));
}

/// A damaged distance is an error naming its event: one that leaves the store's instances
/// (above the last, below the first), and one too long for an instance.
#[test]
fn damaged_distances_are_errors() {
    let (db, _, built) = one_pair_ecf(16, &[0, 12, 3]);
    // The second check (instance 13, distance 11 above 2) as a distance of 15 above it, of
    // 15 below it, and of 70 digits.
    let source = Event::Block(ecf::source(0));
    let second = built
        .events
        .iter()
        .enumerate()
        .filter(|(_, e)| **e == source)
        .nth(1);
    let at = second.unwrap().0 + 1;
    let (lo, hi, end) = (ecf::LOWER, ecf::HIGHER, ecf::END);
    let long = [lo].into_iter().chain([hi; 70]).chain([end]).collect();
    for (body, message) in [
        (
            vec![hi, hi, hi, hi, end],
            "the distance leaves the store's instances",
        ),
        (
            vec![lo, hi, hi, hi, end],
            "the distance leaves the store's instances",
        ),
        (long, "not a block of a distance"),
    ] {
        let mut events = built.events[..at].to_vec();
        events.extend(body.into_iter().map(|b| Event::Block(BlockId(b))));
        let rest = built.events[at..]
            .iter()
            .skip_while(|e| **e != Event::Leave);
        events.extend(rest);
        let e = ecf::recover(&db, &events, |_| {}).unwrap_err().to_string();
        assert!(e.starts_with("eCF event ") && e.ends_with(message), "{e}");
    }
}

/// Block ids too sparse for a table by block (a hostile memory table: the load's block is
/// 3·10^9) are counted through a map instead, with the same checks and dependences as dense
/// ids.
#[test]
fn sparse_block_ids_give_the_same_checks() {
    let reads = [0, 12, 3, 3, 4, 15];
    let (_, _, dense) = one_pair_ecf(16, &reads);
    let (db, at, sparse) = one_pair_ecf_in(3_000_000_000, 16, &reads);
    // The same eCF but for the load's block id.
    let renamed = sparse.events.iter().map(|&e| match e {
        Event::Block(BlockId(3_000_000_000)) => Event::Block(BlockId(1)),
        e => e,
    });
    assert_eq!(renamed.collect::<Vec<_>>(), dense.events);
    assert_eq!(sparse.stats, dense.stats);
    let mut got = Vec::new();
    ecf::recover(&db, &sparse.events, |d| got.push(d)).unwrap();
    let pairs: Pairs = got.iter().map(|d| (d.load, d.store)).collect();
    assert_eq!(pairs, at_truth(&db, &at));
}
