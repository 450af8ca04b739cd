//! Path traces decoded to blocks through the CFGs of their program database (Larus §2: a path
//! id names a sequence of blocks given the function's numbering).
//!
//! A recording's program database ([`wpp_trace::ProgramDb`]) stores each function's CFG with
//! every cut point the instrumenter used ([`wpp_trace::FunctionCfg`]). [`Cfg::from_record`]
//! turns one back into a [`Cfg`]; building its [`Dag`] and numbering it with [`BallLarus`]
//! reproduces the run-time numbering exactly, since the stored cut points already keep the
//! path count below the limit (`number_with_limit` would add none).
//!
//! [`PathDecoder`] expands a `Path(p)` event of function `f` into `Block` events: one per DAG
//! edge of the decoded path whose target is a block. The *tail* half of a cut node is not a
//! block of its own: it continues the block whose call ended the previous path, which that
//! path already emitted. So on a deterministic run, decoding the `trace-paths` recording gives
//! exactly the block sequence of the `trace-blocks` recording (the instrumenter's end-to-end
//! tests and `bench/check.sh` check this). [`BlockStream`] does this for a whole interleaved
//! trace, keeping a shadow stack per thread to know which function a `Path` belongs to.
//!
//! Decoding a path costs `O(length × out-degree)` the first time and one hash lookup after:
//! real traces repeat a few thousand hot paths millions of times.

use crate::ball_larus::BallLarus;
use crate::cfg::{Cfg, Edge};
use crate::dag::{Dag, DagNodeKind};
use crate::ids::{EdgeId, NodeId};
use rustc_hash::FxHashMap;
use wpp_trace::file::{Restore, TraceError, TraceReader};
use wpp_trace::{BlockId, Event, FunctionCfg, FunctionId, PathId, ProgramDb, ThreadId};

/// Why a path could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The program database has no CFGs at all.
    #[error(
        "the program database has no CFGs, so path ids cannot be decoded to blocks (record \
         with `wpp cc --mode trace-paths` and keep a binary trace or `.wpp`: text traces and \
         files written before trace format 2 / `.wpp` 3 do not carry CFGs)"
    )]
    NoCfgs,
    /// A `Path` of a function without a CFG (or an id outside the database).
    #[error("event {event}: path {path} of function {function}, which has no CFG")]
    NoCfg {
        /// Index of the event in the trace.
        event: u64,
        /// The function's name (or `#id`).
        function: String,
        /// The path id.
        path: u64,
    },
    /// A `Path` with no open function on its thread.
    #[error("event {event}: path {path} of thread {thread} outside any function")]
    OutsideFrame {
        /// Index of the event in the trace.
        event: u64,
        /// The thread.
        thread: u32,
        /// The path id.
        path: u64,
    },
    /// The CFG is not numberable, or the id is not one of its paths.
    #[error("event {event}: {message}")]
    BadPath {
        /// Index of the event in the trace.
        event: u64,
        /// What went wrong (the numbering's message).
        message: String,
    },
}

impl Cfg {
    /// The CFG a program database stores for function `name`: node `i` is block `i` (named
    /// `b{i}`), edges are the successor lists back to back.
    pub fn from_record(name: &str, r: &FunctionCfg) -> Cfg {
        let edges = r
            .successors
            .iter()
            .enumerate()
            .flat_map(|(b, succ)| {
                succ.iter().map(move |&s| Edge {
                    src: NodeId(b as u32),
                    dst: NodeId(s),
                })
            })
            .collect();
        Cfg {
            name: name.to_owned(),
            nodes: (0..r.successors.len()).map(|i| format!("b{i}")).collect(),
            entry: NodeId(r.entry),
            exits: r.exits.iter().map(|&x| NodeId(x)).collect(),
            edges,
            cut_nodes: r.cut_nodes.iter().map(|&x| NodeId(x)).collect(),
            cut_edges: r.cut_edges.iter().map(|&x| EdgeId(x)).collect(),
            profile: None,
        }
    }

    /// The same CFG with its edges stably sorted by source block and its cut edges renumbered
    /// to match: the order [`Cfg::to_record`] needs. Edge ids change, so path numbering does
    /// too; the per-edge profile is permuted with the edges.
    pub fn grouped_by_source(mut self) -> Cfg {
        let mut order: Vec<usize> = (0..self.edges.len()).collect();
        order.sort_by_key(|&i| self.edges[i].src);
        let mut new_id = vec![0; order.len()];
        for (new, &old) in order.iter().enumerate() {
            new_id[old] = new as u32;
        }
        self.edges = order.iter().map(|&i| self.edges[i]).collect();
        for e in &mut self.cut_edges {
            *e = EdgeId(new_id[e.index()]);
        }
        if let Some(profile) = &mut self.profile {
            *profile = order.iter().map(|&i| profile[i]).collect();
        }
        self
    }

    /// The record a program database stores: `None` unless the edges are grouped by source
    /// in node order (as an instrumenter lists terminator successors block by block), the
    /// form whose edge ids the successor lists reproduce. Node names and the profile are not
    /// kept.
    pub fn to_record(&self) -> Option<FunctionCfg> {
        if self.edges.windows(2).any(|w| w[0].src > w[1].src) {
            return None;
        }
        let mut successors = vec![Vec::new(); self.nodes.len()];
        for e in &self.edges {
            successors.get_mut(e.src.index())?.push(e.dst.0);
        }
        Some(FunctionCfg {
            successors,
            entry: self.entry.0,
            exits: self.exits.iter().map(|x| x.0).collect(),
            cut_nodes: self.cut_nodes.iter().map(|x| x.0).collect(),
            cut_edges: self.cut_edges.iter().map(|x| x.0).collect(),
        })
    }
}

/// Block ids the path cache holds at most (64 MiB); past it the cache starts over, so memory
/// stays bounded whatever a (hostile) trace's paths are.
const CACHE_BLOCKS: usize = 1 << 24;

/// A function's numbering, built on first use.
struct Numbered {
    dag: Dag,
    bl: BallLarus,
}

/// [`PathDecoder`]'s cache: a path that starts at no cut node's tail.
const NO_TAIL: u32 = u32::MAX;

/// Decodes `(function, path id)` pairs to blocks, numbering each function once and caching
/// every decoded path.
pub struct PathDecoder {
    /// Per function: its name (for messages) and stored CFG.
    records: Vec<(String, Option<FunctionCfg>)>,
    functions: Vec<Option<Result<Numbered, String>>>,
    /// `(function, path)` → range of `blocks`, and the cut node whose tail the path starts
    /// at ([`NO_TAIL`] if none).
    cache: FxHashMap<(u32, u64), (u32, u32, u32)>,
    blocks: Vec<BlockId>,
}

impl PathDecoder {
    /// A decoder for the CFGs of `db` (copied); [`DecodeError::NoCfgs`] if it has none.
    pub fn new(db: &ProgramDb) -> Result<Self, DecodeError> {
        if !db.has_cfgs() {
            return Err(DecodeError::NoCfgs);
        }
        let records = (0..db.functions.len())
            .map(|i| {
                let f = FunctionId(i as u32);
                (db.name(f), db.functions[i].cfg.as_deref().cloned())
            })
            .collect();
        Ok(PathDecoder {
            records,
            functions: Vec::new(),
            cache: FxHashMap::default(),
            blocks: Vec::new(),
        })
    }

    /// The blocks of path `p` of function `f`; `event` (the event's index) only labels errors.
    pub fn blocks(
        &mut self,
        f: FunctionId,
        p: PathId,
        event: u64,
    ) -> Result<&[BlockId], DecodeError> {
        let (start, len, _) = self.decoded(f, p, event)?;
        Ok(&self.blocks[start as usize..(start + len) as usize])
    }

    /// The block whose first call path `p` of function `f` starts after (it starts at that
    /// cut node's tail: the call returned), if it does.
    pub fn resumes(&mut self, f: FunctionId, p: PathId) -> Result<Option<BlockId>, DecodeError> {
        let (_, _, tail) = self.decoded(f, p, 0)?;
        Ok((tail != NO_TAIL).then_some(BlockId(tail)))
    }

    fn decoded(
        &mut self,
        f: FunctionId,
        p: PathId,
        event: u64,
    ) -> Result<(u32, u32, u32), DecodeError> {
        if let Some(&r) = self.cache.get(&(f.0, p.0)) {
            return Ok(r);
        }
        let r = self.decode(f, p, event)?;
        self.cache.insert((f.0, p.0), r);
        Ok(r)
    }

    fn decode(
        &mut self,
        f: FunctionId,
        p: PathId,
        event: u64,
    ) -> Result<(u32, u32, u32), DecodeError> {
        let (name, record) = match self.records.get(f.index()) {
            Some((name, Some(record))) => (name, record),
            named => {
                return Err(DecodeError::NoCfg {
                    event,
                    function: named.map_or_else(|| format!("#{}", f.0), |(n, _)| n.clone()),
                    path: p.0,
                })
            }
        };
        if self.functions.len() <= f.index() {
            self.functions.resize_with(f.index() + 1, || None);
        }
        let numbered = self.functions[f.index()]
            .get_or_insert_with(|| number(name, record))
            .as_ref()
            .map_err(|message| DecodeError::BadPath {
                event,
                message: message.clone(),
            })?;
        let path = numbered
            .bl
            .decode(&numbered.dag, crate::PathId(p.0))
            .map_err(|e| DecodeError::BadPath {
                event,
                message: e.to_string(),
            })?;
        if self.blocks.len() + path.edges.len() > CACHE_BLOCKS {
            self.blocks.clear();
            self.cache.clear();
        }
        let start = self.blocks.len();
        let mut tail = NO_TAIL;
        for e in path.edges {
            match numbered.dag.node(numbered.dag.edge(e).dst) {
                DagNodeKind::Block(n) => self.blocks.push(BlockId(n.0)),
                DagNodeKind::CutTail(n) => tail = n.0,
                DagNodeKind::Entry | DagNodeKind::Exit => {}
            }
        }
        Ok((start as u32, (self.blocks.len() - start) as u32, tail))
    }
}

/// Builds and numbers a stored CFG as the run-time numbering did (module docs).
fn number(name: &str, record: &FunctionCfg) -> Result<Numbered, String> {
    let cfg = Cfg::from_record(name, record);
    let dag = Dag::build(&cfg).map_err(|e| format!("CFG of `{name}`: {e}"))?;
    let bl = BallLarus::number(&dag).map_err(|e| format!("CFG of `{name}`: {e}"))?;
    Ok(Numbered { dag, bl })
}

/// Turns an interleaved path trace into the equivalent block trace, one event at a time:
/// `Path(p)` becomes the blocks of `p` in the function on top of its thread's shadow stack;
/// every other event passes through unchanged.
pub struct BlockStream {
    decoder: PathDecoder,
    stacks: FxHashMap<ThreadId, Vec<FunctionId>>,
    thread: ThreadId,
    event: u64,
}

impl BlockStream {
    /// A stream decoding through the CFGs of `db` ([`DecodeError::NoCfgs`] if it has none).
    pub fn new(db: &ProgramDb) -> Result<Self, DecodeError> {
        Ok(BlockStream {
            decoder: PathDecoder::new(db)?,
            stacks: FxHashMap::default(),
            thread: ThreadId(0),
            event: 0,
        })
    }

    /// Feeds one event of the trace; the events it stands for go to `out`.
    pub fn push(&mut self, e: Event, mut out: impl FnMut(Event)) -> Result<(), DecodeError> {
        let at = self.event;
        self.event += 1;
        match e {
            Event::Thread(t) => self.thread = t,
            Event::Enter(f) => self.stacks.entry(self.thread).or_default().push(f),
            Event::Leave => {
                self.stacks.entry(self.thread).or_default().pop();
            }
            Event::Block(_) => {}
            Event::Path(p) => {
                let top = self.stacks.get(&self.thread).and_then(|s| s.last());
                let Some(&f) = top else {
                    return Err(DecodeError::OutsideFrame {
                        event: at,
                        thread: self.thread.0,
                        path: p.0,
                    });
                };
                for &b in self.decoder.blocks(f, p, at)? {
                    out(Event::Block(b));
                }
                return Ok(());
            }
        }
        out(e);
        Ok(())
    }
}

/// Opens a trace file as [`wpp_trace::file::open`] does, reading a trace of blocks recorded
/// as paths ([`ProgramDb::paths_are_blocks`]) as the blocks its paths decode to.
pub fn open(path: impl AsRef<std::path::Path>) -> Result<TraceReader, TraceError> {
    decoding(wpp_trace::file::open(path)?)
}

/// Reads a whole trace file into memory as [`open`] reads it (for tests and small files).
pub fn read_events(
    path: impl AsRef<std::path::Path>,
) -> Result<(ProgramDb, Vec<Event>), TraceError> {
    let reader = open(path)?;
    let db = reader.program().clone();
    Ok((db, reader.read_all()?))
}

/// `reader`, decoding its paths to blocks if it is a trace of blocks recorded as paths.
pub fn decoding(reader: TraceReader) -> Result<TraceReader, TraceError> {
    if !reader.paths_are_blocks() {
        return Ok(reader);
    }
    let restorer =
        PathRestorer::new(reader.program()).map_err(|e| TraceError::Unrestorable(e.to_string()))?;
    Ok(reader.decoding_paths(Box::new(restorer)))
}

/// A [`BlockStream`] as a trace reader's [`Restore`]: each recorded `Path` is handed out as
/// its blocks, in bounded batches (the blocks of a path past the end of one wait for the
/// next).
struct PathRestorer {
    stream: BlockStream,
    recorded: Vec<Event>,
    next: usize,
    /// Blocks of a path that did not fit the last batch, handed out from `blocks[at]` on.
    blocks: Vec<Event>,
    at: usize,
    added: i64,
}

impl PathRestorer {
    fn new(db: &ProgramDb) -> Result<Self, DecodeError> {
        Ok(PathRestorer {
            stream: BlockStream::new(db)?,
            recorded: Vec::new(),
            next: 0,
            blocks: Vec::new(),
            at: 0,
            added: 0,
        })
    }
}

impl Restore for PathRestorer {
    fn recorded(&mut self) -> &mut Vec<Event> {
        self.recorded.clear();
        self.next = 0;
        &mut self.recorded
    }

    fn pending(&self) -> bool {
        self.at < self.blocks.len() || self.next < self.recorded.len()
    }

    fn stop(&mut self) {
        self.at = self.blocks.len();
        self.next = self.recorded.len();
    }

    fn added(&self) -> i64 {
        self.added
    }

    fn restore(&mut self, out: &mut Vec<Event>, cap: usize) -> Result<(), TraceError> {
        while out.len() < cap {
            if self.at < self.blocks.len() {
                let n = (cap - out.len()).min(self.blocks.len() - self.at);
                out.extend_from_slice(&self.blocks[self.at..self.at + n]);
                self.at += n;
                continue;
            }
            let Some(&e) = self.recorded.get(self.next) else {
                break;
            };
            self.next += 1;
            let before = out.len();
            if let Err(d) = self.stream.push(e, |x| out.push(x)) {
                self.stop();
                return Err(TraceError::Unrestorable(d.to_string()));
            }
            self.added += (out.len() - before) as i64 - 1;
            if out.len() > cap {
                self.blocks.clear();
                self.blocks.extend(out.drain(cap..));
                self.at = 0;
            }
        }
        Ok(())
    }
}

/// Decodes a whole trace (convenience for tests and small inputs).
pub fn decode_trace(db: &ProgramDb, events: &[Event]) -> Result<Vec<Event>, DecodeError> {
    let mut s = BlockStream::new(db)?;
    let mut out = Vec::with_capacity(events.len());
    for &e in events {
        s.push(e, |b| out.push(b))?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::random::{arbitrary_cfg, Rng};
    use proptest::prelude::*;

    /// A random CFG with its edges stably grouped by source (cut edges follow their edge).
    fn grouped_cfg(seed: u64) -> Cfg {
        let mut rng = Rng::new(seed);
        let n = 1 + rng.below(30);
        let edges = n + rng.below(2 * n);
        let mut cfg = arbitrary_cfg(&mut rng, n, edges).grouped_by_source();
        cfg.profile = None;
        cfg
    }

    fn db_of(cfgs: &[Cfg]) -> ProgramDb {
        let mut db = ProgramDb::default();
        for c in cfgs {
            let f = db.intern(&c.name);
            db.functions[f.index()].cfg = c.to_record().map(Box::new);
        }
        db
    }

    proptest! {
        /// Grouping keeps every edge, its cut flag and its profile count, and yields the
        /// order a record needs.
        #[test]
        fn grouping_by_source_permutes_edges_with_their_data(seed in any::<u64>()) {
            let mut rng = Rng::new(seed);
            let n = 1 + rng.below(20);
            let edges = n + rng.below(2 * n);
            let mut cfg = arbitrary_cfg(&mut rng, n, edges);
            cfg.profile = Some((0..cfg.edges.len() as u64).map(|i| i * 7 + 1).collect());
            let tagged = |c: &Cfg| {
                let mut v: Vec<_> = c.edges.iter().enumerate().map(|(i, e)| {
                    let cut = c.cut_edges.contains(&EdgeId(i as u32));
                    (e.src, e.dst, cut, c.profile.as_ref().unwrap()[i])
                }).collect();
                v.sort();
                v
            };
            let grouped = cfg.clone().grouped_by_source();
            prop_assert_eq!(tagged(&grouped), tagged(&cfg));
            prop_assert!(grouped.to_record().is_some());
        }

        /// Oracle: for random CFGs with cut points, every path id decodes through the stored
        /// record to the blocks of the original CFG's decoded path (cut tails left out), and
        /// the record survives the program database's byte encoding.
        #[test]
        fn records_decode_like_the_original(seed in 0u64..400) {
            let mut cfg = grouped_cfg(seed);
            let (dag, bl) = crate::number_with_cuts(&mut cfg).unwrap();
            let db = db_of(std::slice::from_ref(&cfg));
            prop_assert_eq!(Cfg::from_record(&cfg.name, db.functions[0].cfg.as_ref().unwrap()).edges, cfg.edges.clone());
            let bytes = db.to_bytes().unwrap();
            let back = ProgramDb::from_bytes(&bytes, 0, wpp_trace::DbLayout::WithCfgs).unwrap();
            prop_assert_eq!(&back, &db);
            let mut dec = PathDecoder::new(&back).unwrap();
            for id in 0..bl.path_count().min(200) {
                let path = bl.decode(&dag, crate::PathId(id)).unwrap();
                let want: Vec<BlockId> = path
                    .edges
                    .iter()
                    .filter_map(|&e| match dag.node(dag.edge(e).dst) {
                        DagNodeKind::Block(n) => Some(BlockId(n.0)),
                        _ => None,
                    })
                    .collect();
                prop_assert_eq!(dec.blocks(FunctionId(0), PathId(id), 0).unwrap(), &want[..]);
            }
            let over = dec.blocks(FunctionId(0), PathId(bl.path_count()), 7).unwrap_err();
            let is_bad_path = matches!(over, DecodeError::BadPath { event: 7, .. });
            prop_assert!(is_bad_path, "{:?}", over);
        }
    }

    /// A random trace on up to three threads of functions with `counts[f]` paths each: frames
    /// entered and left, and in the open frame a path id below its function's count.
    fn random_path_trace(rng: &mut Rng, counts: &[u64], len: usize) -> Vec<Event> {
        let mut stacks = [Vec::new(), Vec::new(), Vec::new()];
        let mut thread = 0;
        let mut trace = Vec::new();
        for _ in 0..len {
            let stack: &mut Vec<usize> = &mut stacks[thread];
            match rng.below(6) {
                0 => {
                    thread = rng.below(3);
                    trace.push(Event::Thread(ThreadId(thread as u32)));
                }
                1 | 2 => {
                    let f = rng.below(counts.len());
                    stack.push(f);
                    trace.push(Event::Enter(FunctionId(f as u32)));
                }
                3 if !stack.is_empty() => {
                    stack.pop();
                    trace.push(Event::Leave);
                }
                _ => {
                    if let Some(&f) = stack.last() {
                        let p = rng.below(counts[f].clamp(1, 1 << 20) as usize) as u64;
                        trace.push(Event::Path(PathId(p)));
                    }
                }
            }
        }
        trace
    }

    /// A program database of random CFGs whose paths stand for blocks, and their path counts.
    fn paths_as_blocks_db(seed: u64) -> (ProgramDb, Vec<u64>) {
        let mut cfgs: Vec<Cfg> = (0..3).map(|i| grouped_cfg(seed * 3 + i)).collect();
        let mut counts = Vec::new();
        for (i, cfg) in cfgs.iter_mut().enumerate() {
            cfg.name = format!("f{i}");
            counts.push(crate::number_with_cuts(cfg).unwrap().1.path_count());
        }
        let mut db = db_of(&cfgs);
        db.paths_are_blocks = true;
        (db, counts)
    }

    fn restore_all(db: &ProgramDb, recorded: &[Event], cap: usize) -> Vec<Event> {
        let mut r = PathRestorer::new(db).unwrap();
        r.recorded().extend_from_slice(recorded);
        let mut all = Vec::new();
        while r.pending() {
            let mut out = Vec::new();
            r.restore(&mut out, cap).unwrap();
            assert!(out.len() <= cap);
            all.extend(out);
        }
        assert_eq!(r.added(), all.len() as i64 - recorded.len() as i64);
        all
    }

    proptest! {
        /// Oracle: a trace of blocks recorded as paths reads back, through the file format and
        /// in batches of any size, as `decode_trace` decodes it (itself checked against the
        /// numbering above); the reader's database no longer says paths stand for blocks.
        #[test]
        fn traces_of_paths_as_blocks_read_as_their_blocks(seed in 0u64..200, cap in 1usize..9) {
            let (db, counts) = paths_as_blocks_db(seed);
            let trace = random_path_trace(&mut Rng::new(seed), &counts, 300);
            let want = decode_trace(&db, &trace).unwrap();
            prop_assert_eq!(&restore_all(&db, &trace, cap), &want);
            let mut w = wpp_trace::TraceWriter::new(Vec::new(), &db).unwrap();
            for &e in &trace {
                w.push(e).unwrap();
            }
            let bytes = w.finish().unwrap();
            let raw = TraceReader::from_bytes(bytes.clone()).unwrap();
            prop_assert!(raw.paths_are_blocks());
            let undecoded = raw.read_all().unwrap_err();
            prop_assert!(matches!(undecoded, TraceError::PathsNotDecoded), "{:?}", undecoded);
            let r = decoding(TraceReader::from_bytes(bytes).unwrap()).unwrap();
            prop_assert!(!r.paths_are_blocks() && !r.program().paths_are_blocks);
            prop_assert_eq!(r.read_all().unwrap(), want);
        }
    }

    /// A path id its function does not have ends the trace with an error naming the event,
    /// after the blocks decoded before it.
    #[test]
    fn a_path_outside_its_function_is_an_error_after_the_blocks_before_it() {
        let (db, counts) = paths_as_blocks_db(5);
        let trace = [
            Event::Enter(FunctionId(0)),
            Event::Path(PathId(0)),
            Event::Path(PathId(counts[0])),
            Event::Leave,
        ];
        let mut w = wpp_trace::TraceWriter::new(Vec::new(), &db).unwrap();
        for e in trace {
            w.push(e).unwrap();
        }
        let r = decoding(TraceReader::from_bytes(w.finish().unwrap()).unwrap()).unwrap();
        let read: Vec<_> = r.collect();
        let want = decode_trace(&db, &trace[..2]).unwrap();
        assert_eq!(read.len(), want.len() + 1);
        for (got, want) in read.iter().zip(&want) {
            assert_eq!(got.as_ref().unwrap(), want);
        }
        let err = read.last().unwrap().as_ref().unwrap_err().to_string();
        assert!(err.starts_with("event 2: "), "{err}");
    }

    #[test]
    fn records_need_edges_grouped_by_source() {
        let mut cfg = Cfg {
            name: "f".into(),
            nodes: vec!["a".into(), "b".into()],
            edges: vec![
                Edge {
                    src: NodeId(1),
                    dst: NodeId(0),
                },
                Edge {
                    src: NodeId(0),
                    dst: NodeId(1),
                },
            ],
            ..Cfg::default()
        };
        assert_eq!(cfg.to_record(), None);
        cfg.edges.swap(0, 1);
        let r = cfg.to_record().unwrap();
        assert_eq!(r.successors, [vec![1], vec![0]]);
        let back = Cfg::from_record("f", &r);
        assert_eq!(back.edges, cfg.edges);
    }

    /// A loop `0 → 1 → 1 … → 2` with a call in block 1: paths end at the call (cut node); the
    /// stream decodes per thread, and cut tails add no block.
    #[test]
    fn streams_decode_per_thread_with_cut_tails_silent() {
        let mut db = ProgramDb::default();
        let f = db.intern("f");
        db.functions[0].cfg = Some(Box::new(FunctionCfg {
            successors: vec![vec![1], vec![1, 2], vec![]],
            entry: 0,
            exits: vec![2],
            cut_nodes: vec![1],
            cut_edges: vec![],
        }));
        let g = db.intern("g");
        let cfg = Cfg::from_record("f", db.functions[0].cfg.as_ref().unwrap());
        let dag = Dag::build(&cfg).unwrap();
        let bl = BallLarus::number(&dag).unwrap();
        let id = |nodes: &[u32], from_tail: bool| {
            let want: Vec<NodeId> = nodes.iter().map(|&n| NodeId(n)).collect();
            (0..bl.path_count())
                .find(|&p| {
                    let dp = bl.decode(&dag, crate::PathId(p)).unwrap();
                    let starts_at_tail =
                        matches!(dag.node(dag.edge(dp.edges[0]).dst), DagNodeKind::CutTail(_));
                    dp.nodes(&dag) == want && starts_at_tail == from_tail
                })
                .map(PathId)
                .unwrap()
        };
        // 0 1 | call | 1(tail) → 1 | call | 1(tail) → 2: the self loop is no backedge once 1 is
        // split, so the loop's paths run from the tail through the edge to the next call.
        let trace = [
            Event::Enter(f),
            Event::Path(id(&[0, 1], false)),
            Event::Thread(ThreadId(1)),
            Event::Enter(g),
            Event::Thread(ThreadId(0)),
            Event::Path(id(&[1, 1], true)),
            Event::Path(id(&[1, 2], true)),
            Event::Leave,
        ];
        let b = |i| Event::Block(BlockId(i));
        assert_eq!(
            decode_trace(&db, &trace).unwrap(),
            [
                Event::Enter(f),
                b(0),
                b(1),
                Event::Thread(ThreadId(1)),
                Event::Enter(g),
                Event::Thread(ThreadId(0)),
                b(1),
                b(2),
                Event::Leave
            ]
        );
        // The paths after the call resume block 1's tail; the first resumes nothing.
        let mut decoder = PathDecoder::new(&db).unwrap();
        for (nodes, tail, resumes) in [(&[0, 1], false, None), (&[1, 2], true, Some(BlockId(1)))] {
            assert_eq!(decoder.resumes(f, id(nodes, tail)).unwrap(), resumes);
        }
        // A path of thread 1 runs in `g`, which has no CFG.
        let e = decode_trace(
            &db,
            &[
                Event::Thread(ThreadId(1)),
                Event::Enter(g),
                Event::Path(PathId(0)),
            ],
        );
        assert!(
            matches!(e, Err(DecodeError::NoCfg { event: 2, .. })),
            "{e:?}"
        );
        let e = decode_trace(&db, &[Event::Path(PathId(0))]);
        assert!(
            matches!(e, Err(DecodeError::OutsideFrame { event: 0, .. })),
            "{e:?}"
        );
        assert_eq!(
            decode_trace(&ProgramDb::default(), &[]).unwrap_err(),
            DecodeError::NoCfgs
        );
    }
}
