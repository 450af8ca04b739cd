//! Writes seed corpora for every fuzz target into `corpus/<target>/` (or the directory given as
//! the first argument): small valid files made with the crates' own writers, plus a few
//! truncated and hand-made variants. Run by `seed.sh`.

use std::path::{Path, PathBuf};
use wpp_grammar::file::WppFile;
use wpp_grammar::{compress, Algorithm};
use wpp_paths::random::{structured_cfg, Rng};
use wpp_paths::{BlProfile, CfgFile, PathId, PppProfile};
use wpp_trace::file::{to_binary, to_text, TraceWriter};
use wpp_trace::synth::{SynthProgram, TraceKind};
use wpp_trace::{Alphabet, Event, ProgramDb, ThreadId};

struct Out {
    dir: PathBuf,
    n: usize,
}

impl Out {
    fn new(root: &Path, target: &str) -> Out {
        let dir = root.join(target);
        std::fs::create_dir_all(&dir).unwrap();
        Out { dir, n: 0 }
    }

    fn put(&mut self, bytes: &[u8]) {
        std::fs::write(self.dir.join(format!("seed-{:03}", self.n)), bytes).unwrap();
        self.n += 1;
    }

    /// A seed for a target whose first byte is the mode byte.
    fn put_mode(&mut self, mode: u8, bytes: &[u8]) {
        let mut v = vec![mode];
        v.extend_from_slice(bytes);
        self.put(&v);
    }
}

/// `events` without entries into functions at or above `functions`, which a database cut to
/// that many functions does not declare (readers refuse them).
fn declared(mut events: Vec<Event>, functions: usize) -> Vec<Event> {
    events.retain(|e| !matches!(e, Event::Enter(f) if f.index() >= functions));
    events
}

fn traces() -> Vec<(ProgramDb, Vec<Event>)> {
    let mut out = Vec::new();
    for (seed, kind, n) in [
        (1, TraceKind::Blocks, 60),
        (2, TraceKind::Paths, 60),
        (3, TraceKind::Blocks, 300),
    ] {
        let p = SynthProgram::generate(seed);
        // Keep the database small: the seeds should be dominated by events.
        let mut db = p.program().clone();
        db.functions.truncate(4);
        out.push((db, declared(p.events(kind, n), 4)));
    }
    let mut threads = Vec::new();
    let p = SynthProgram::generate(4);
    p.run_threads(TraceKind::Paths, 80, 3, |e| {
        threads.push(e);
        Ok::<_, ()>(())
    })
    .unwrap();
    let mut db = p.program().clone();
    db.functions.truncate(3);
    out.push((db, declared(threads, 3)));
    // Large and escaped ids, and a CFG (the first paths decode; the escaped ones are errors).
    let mut db = ProgramDb::default();
    db.intern("main");
    db.functions[0].cfg = Some(Box::new(wpp_trace::FunctionCfg {
        successors: vec![vec![1, 2], vec![1, 2], vec![]],
        entry: 0,
        exits: vec![2],
        cut_nodes: vec![1],
        cut_edges: vec![],
    }));
    out.push((
        db,
        vec![
            Event::Enter(wpp_trace::FunctionId(0)),
            Event::Path(wpp_trace::PathId(u64::MAX)),
            Event::Path(wpp_trace::PathId(1 << 61)),
            Event::Block(wpp_trace::BlockId(u32::MAX)),
            Event::Thread(ThreadId(7)),
            Event::Leave,
        ],
    ));
    out
}

/// `events` compressed by `algorithm` into a `.wpp` (with an extra section), if it can be.
fn wpp_file(db: &ProgramDb, events: &[Event], algorithm: Algorithm) -> Option<WppFile> {
    let mut alphabet = Alphabet::new();
    let per_thread = wpp_trace::split_threads(events);
    let streams: Vec<Vec<wpp_trace::Terminal>> = per_thread
        .values()
        .map(|s| s.iter().map(|&e| alphabet.intern(e).unwrap()).collect())
        .collect();
    let refs: Vec<&[wpp_trace::Terminal]> = streams.iter().map(Vec::as_slice).collect();
    Some(WppFile {
        program: db.clone(),
        alphabet,
        grammar: compress(algorithm, &refs).ok()?,
        algorithm,
        events: events.len() as u64,
        extra: vec![wpp_grammar::file::Section {
            tag: *b"XTRA",
            data: vec![1, 2, 3],
        }],
    })
}

fn main() {
    let root = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("corpus"));
    let traces = traces();

    // trace_binary: mode 0 (as is), 1 (fix checksums), 3 (fix + allow truncation).
    let mut bin = Out::new(&root, "trace_binary");
    for (db, events) in &traces {
        let b = to_binary(db, events).unwrap();
        bin.put_mode(0, &b);
        bin.put_mode(1, &b);
        // Many small chunks.
        let mut w = TraceWriter::with_chunk_bytes(Vec::new(), db, 16).unwrap();
        events.iter().for_each(|&e| w.push(e).unwrap());
        let small = w.finish().unwrap();
        bin.put_mode(1, &small);
        bin.put_mode(3, &small[..small.len() - 20]);
        // zstd-compressed chunks.
        let mut w = TraceWriter::with_chunk_bytes(Vec::new(), db, 4096)
            .unwrap()
            .with_zstd_level(1)
            .unwrap();
        events.iter().for_each(|&e| w.push(e).unwrap());
        let packed = w.finish().unwrap();
        bin.put_mode(1, &packed);
        bin.put_mode(3, &packed[..packed.len() / 2]);
    }
    bin.put_mode(0, b"WPPT");
    // A recording that elided blocks 1 and 2 of `main` (implied by 0 and 1): read restored.
    let mut elided = ProgramDb::default();
    elided.intern("main");
    elided.functions[0].implied_next = vec![Some(1), Some(2), None];
    let (main, b0) = (
        Event::Enter(wpp_trace::FunctionId(0)),
        Event::Block(wpp_trace::BlockId(0)),
    );
    let events = [
        main,
        b0,
        b0,
        Event::Thread(ThreadId(1)),
        main,
        b0,
        Event::Leave,
    ];
    let mut w = TraceWriter::with_chunk_bytes(Vec::new(), &elided, 2).unwrap();
    events.iter().for_each(|&e| w.push(e).unwrap());
    let small = w.finish().unwrap();
    bin.put_mode(1, &small);
    bin.put_mode(3, &small[..small.len() - 30]);
    // Blocks recorded as paths (the CFG of the escaped-ids trace): read decoded, the last path
    // outside the function's.
    let (mut as_paths, _) = traces.last().unwrap().clone();
    as_paths.paths_are_blocks = true;
    let path = |p| Event::Path(wpp_trace::PathId(p));
    let events = [
        main,
        path(0),
        path(1),
        path(2),
        Event::Thread(ThreadId(1)),
        main,
        path(3),
    ];
    let mut w = TraceWriter::with_chunk_bytes(Vec::new(), &as_paths, 2).unwrap();
    events.iter().for_each(|&e| w.push(e).unwrap());
    let small = w.finish().unwrap();
    bin.put_mode(1, &small);
    bin.put_mode(3, &small[..small.len() - 10]);

    // trace_text.
    let mut text = Out::new(&root, "trace_text");
    for (db, events) in &traces {
        text.put(&to_text(db, events).unwrap());
    }
    text.put(b"# two functions\nD main\nF main\nB 0\nF helper\nP 7\nE\nF #12\n");
    text.put(b"D\nD a\nD a\nF a\nF #1\nT 4294967295\nP 18446744073709551615\nE\n");

    // wpp_file: each algorithm over a couple of traces, mode 0 and 1.
    let mut wpp = Out::new(&root, "wpp_file");
    for (db, events) in traces.iter().take(4) {
        for algorithm in [
            Algorithm::Sequitur,
            Algorithm::Sequitur1,
            Algorithm::Frequency,
        ] {
            let Some(file) = wpp_file(db, events, algorithm) else {
                continue;
            };
            let b = file.to_bytes().unwrap();
            wpp.put_mode(0, &b);
            wpp.put_mode(1, &b);
        }
    }
    // More than 256 rules: `REFS` in two planes, the top one packed as digits (codec 5).
    let p = SynthProgram::generate(5);
    let mut db = p.program().clone();
    db.functions.truncate(4);
    let events = declared(p.events(TraceKind::Blocks, 30_000), 4);
    let file = wpp_file(&db, &events, Algorithm::Sequitur).unwrap();
    assert!(
        file.grammar.num_rules() > 256,
        "{}",
        file.grammar.num_rules()
    );
    wpp.put_mode(1, &file.to_bytes().unwrap());

    // Deep grammars: R0 → t0 t1, R(i+1) → Ri Ri (2^13 terminals); and the same shape over an
    // empty R0, which the reader must reject (it made expansion hang).
    for leaf in [vec![0u32, 1], vec![]] {
        use wpp_grammar::{Grammar, RuleId, StartRule, Symbol};
        let r = |i| Symbol::rule(RuleId(i));
        let mut bodies = vec![leaf
            .iter()
            .map(|&t| Symbol::terminal(wpp_trace::Terminal(t)))
            .collect()];
        for i in 0..12 {
            bodies.push(vec![r(i), r(i)]);
        }
        bodies.push(vec![Symbol::terminal(wpp_trace::Terminal(0)), r(12), r(12)]);
        let starts = vec![StartRule {
            thread: ThreadId(0),
            rule: RuleId(13),
        }];
        let alphabet = Alphabet::from_events(vec![
            Event::Block(wpp_trace::BlockId(0)),
            Event::Block(wpp_trace::BlockId(1)),
        ])
        .unwrap();
        let file = WppFile {
            program: ProgramDb::default(),
            alphabet,
            grammar: Grammar::new(2, bodies, starts).unwrap(),
            algorithm: Algorithm::Sequitur,
            events: 0,
            extra: Vec::new(),
        };
        wpp.put_mode(1, &file.to_bytes().unwrap());
    }

    // cfg_json: the examples and a few random structured CFGs.
    let mut cfg = Out::new(&root, "cfg_json");
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../crates/wpp-paths/examples");
    for name in ["fig3.json", "lemma3.json", "loops.json"] {
        cfg.put(&std::fs::read(examples.join(name)).unwrap());
    }
    let mut rng = Rng::new(7);
    for blocks in [4, 9, 20] {
        let mut c = structured_cfg(&mut rng, &format!("s{blocks}"), blocks);
        if blocks == 9 {
            c.profile = Some(vec![3; c.edges.len()]);
        }
        let doc = CfgFile::from_cfgs(&[c]);
        cfg.put(serde_json::to_string(&doc).unwrap().as_bytes());
    }

    // profiles: mode 0 compact BL, 1 compact PPP, 2 JSON BL, 3 JSON PPP.
    let mut prof = Out::new(&root, "profiles");
    let mut bl = BlProfile::default();
    bl.record("f", PathId(5), 3);
    bl.record("main", PathId(0), 1);
    bl.record("main", PathId(u64::MAX), u64::MAX);
    prof.put_mode(0, &bl.to_bytes().unwrap());
    prof.put_mode(2, serde_json::to_string(&bl).unwrap().as_bytes());
    let mut ppp = PppProfile::default();
    ppp.functions.insert(
        "f".into(),
        wpp_paths::profile::PppFunctionProfile {
            interesting: vec![0, 3, 9],
            counts: vec![4, 0, 2],
            uninteresting: [(5, 1), (7, 2)].into_iter().collect(),
        },
    );
    prof.put_mode(1, &ppp.to_bytes().unwrap());
    prof.put_mode(3, serde_json::to_string(&ppp).unwrap().as_bytes());

    for o in [&bin, &text, &wpp, &cfg, &prof] {
        println!("{}: {} seeds", o.dir.display(), o.n);
    }

    // trace_index: binary traces with checksums fixed (mode 1), text traces as they are.
    let mut index = Out::new(&root, "trace_index");
    for (db, events) in &traces {
        index.put_mode(1, &to_binary(db, events).unwrap());
        index.put_mode(0, &to_text(db, events).unwrap());
    }
    index.put_mode(0, b"F #4294967295\nE\n");

    // profile_file: run-time profiles of both modes, and a version 1 file.
    let mut runtime = Out::new(&root, "profile_file");
    for (db, _) in &traces {
        let mut bl = BlProfile::default();
        for (i, f) in db.functions.iter().enumerate() {
            bl.record(&f.name, PathId(i as u64), 3 + i as u64);
        }
        let file = wpp_abi::profile::ProfileFile {
            program: wpp_abi::EmbeddedProgram {
                version: wpp_abi::EMBEDDED_VERSION,
                mode: wpp_abi::Mode::Bl,
                program: db.clone(),
                cfgs: Vec::new(),
                ewpp: None,
            },
            bl,
            ppp: None,
            run: Some(wpp_abi::profile::RunInfo {
                command_line: vec!["./seed".into(), "-x".into()],
                exit_status: Some(0),
                id: Some(0x5eed),
            }),
        };
        let bytes = file.to_bytes();
        runtime.put(&bytes);
        runtime.put(&[&bytes[..], &bytes[..]].concat());
        let body = &bytes[wpp_abi::profile::HEADER_LEN..];
        runtime.put(&[&wpp_abi::profile::MAGIC[..], &[1], body].concat());
    }

    // program_db: databases with CFGs (mode 0) and one without (mode 1).
    let mut dbs = Out::new(&root, "program_db");
    for (db, _) in &traces {
        dbs.put_mode(0, &db.to_bytes().unwrap());
    }
    let mut names = ProgramDb::default();
    names.intern("main");
    dbs.put_mode(1, &postcard::to_allocvec(&names).unwrap());
    // A recording that elided blocks: an implied-block table (a chain 0 -> 1 -> 2).
    let mut elided = names.clone();
    elided.functions[0].implied_next = vec![Some(1), Some(2), None];
    dbs.put_mode(0, &elided.to_bytes().unwrap());
    deps_files(&root);
}

/// deps_files: reports (mode 0 as is, 1 with the CRC fixed) and address traces (mode 2), one
/// of them hostile (a clobber of all memory, then a store of 2 GiB).
fn deps_files(root: &Path) {
    use wpp_deps::at::{Access, AtWriter};
    use wpp_deps::filter::{Class, FilterReport, Pair, ReportModule};
    use wpp_deps::{AccessKind, MemInstr, MemoryDb};
    let mut deps = Out::new(root, "deps_files");
    let module = |crc, first, instructions| ReportModule {
        crc,
        first,
        instructions,
    };
    let pair = |store, load, class| Pair {
        store,
        load,
        class,
        occurrences: 2,
    };
    let report = FilterReport {
        program_crc: 7,
        modules: vec![module(1, 0, 3), module(2, 3, 2)],
        pairs: vec![
            pair(0, 3, Class::AnyInstance),
            pair(4, 1, Class::LastInstance),
        ],
    };
    let b = report.to_bytes();
    deps.put_mode(0, &b);
    deps.put_mode(1, &b);
    deps.put_mode(1, &b[..b.len() - 3]);
    let instr = |kind| MemInstr {
        function: 0,
        block: 0,
        line: 1,
        column: 1,
        file: wpp_deps::memdb::NO_FILE,
        kind,
        what: String::new(),
    };
    let mut program = ProgramDb::default();
    program.intern("main");
    let db = MemoryDb {
        version: wpp_deps::memdb::MEMORY_DB_VERSION,
        program,
        instructions: vec![
            instr(AccessKind::Store),
            instr(AccessKind::Load),
            instr(AccessKind::Clobber),
        ],
        files: Vec::new(),
    };
    let at = |accesses: &[(u32, u64, u64)]| {
        let mut w = AtWriter::new(Vec::new(), &postcard::to_allocvec(&db).unwrap()).unwrap();
        let each = accesses
            .iter()
            .map(|&(id, addr, size)| Access { id, addr, size });
        w.chunk(each).unwrap();
        w.finish().unwrap()
    };
    let good = at(&[(0, 64, 8), (1, 60, 8), (2, 64, 4), (1, 64, 8)]);
    deps.put_mode(2, &good);
    deps.put_mode(2, &good[..good.len() / 2]);
    deps.put_mode(2, &at(&[(0, 8, 4), (2, 0, u64::MAX), (0, 4096, 1 << 31)]));
}
