//! The version 2 `RULE` section: rule bodies as four separately compressed streams, with rules
//! defined inline at their first use (see the parent module's documentation for the layout).

use std::borrow::Cow;

use wpp_trace::wire::{write_varint, Reader, WireError};
use wpp_trace::Terminal;

use super::digits;
use super::model::{self, CallStack, Context, Effect, Model, OTHER};
use super::{DecodedRules, WppError, RULE};
use crate::grammar::{Grammar, RuleId};
use crate::symbol::{Symbol, SymbolKind};

/// A stream stored as is.
const STORED: u8 = 0;
/// A stream stored as one zstd frame.
const ZSTD: u8 = 1;
/// `REFS` only: the rule ids coded by [`model`]'s context-mixing coder, with the other three
/// streams as context.
const MODEL: u8 = 2;
/// `KINDS` only: the kinds packed four to a byte (two bits each, the first in the low bits),
/// then one zstd frame. A quarter of the bytes for zstd to search: at level 19, 3.5–5× faster
/// than the byte per kind, and 7–12 % smaller (BENCHMARKS.md).
const PACKED: u8 = 3;
/// `REFS` only: its byte planes, each a stream of its own (codec [`STORED`], [`ZSTD`] or
/// [`DIGITS`]), so that the low bytes of wide distances, nearly uniform, are not searched at
/// the writer's level for nothing (a third of `REFS`, and of its time at level 19, on
/// high-entropy traces).
const PLANES: u8 = 4;
/// A plane of [`PLANES`] only: its bytes, all below a base of at most 16, packed as digits
/// ([`digits`]), then one zstd frame. The top plane holds few values (the top byte of wide
/// distances); packed, level 19 searches a third to an eighth of the bytes.
const DIGITS: u8 = 5;
/// The level at which the writer also tries [`MODEL`]: zstd's highest, asked for explicitly
/// (`wpp compress --smallest`), because a [`MODEL`] stream is some hundred times slower to
/// read than zstd (seconds per MB of rules) and every query of the file reads it.
pub const SMALLEST_LEVEL: i32 = 22;
/// A zstd stream may declare at most this many raw bytes per stored byte; the writer stores a
/// stream as is when zstd would compress it further (which no real grammar does).
pub(super) const MAX_RATIO: usize = 1024;

/// `KINDS` values.
const NEW: u8 = 0;
const TERMINAL: u8 = 1;
const REFERENCE: u8 = 2;

/// Stream names, in file order, as errors show them.
const NAMES: [&str; 4] = ["LENS", "KINDS", "TERMS", "REFS"];

/// The four streams before compression.
#[derive(Default)]
struct Streams {
    lens: Vec<u8>,
    kinds: Vec<u8>,
    terms: Vec<u8>,
    /// Byte planes of the distances: plane `k` holds byte `k` of every distance wider than `k`.
    refs: [Vec<u8>; 4],
}

/// How many bytes a distance takes when `defined` rules precede it: enough for `defined - 1`.
#[inline]
fn width(defined: u32) -> usize {
    match defined.saturating_sub(1) {
        0..=0xff => 1,
        0x100..=0xffff => 2,
        0x1_0000..=0xff_ffff => 3,
        _ => 4,
    }
}

/// Encodes the rules with the start rules as roots if the grammar is numbered in their
/// depth-first post-order (as SEQUITUR numbers it), else with every rule as its own root.
/// The four streams are compressed on up to `threads` threads (the same bytes either way).
/// `classes` are the terminals' [`model::classes`] (empty in a segmented file, whose alphabet
/// follows the segments).
pub(super) fn encode(g: &Grammar, level: i32, threads: usize, classes: &[u64]) -> Vec<u8> {
    let streams = encode_streams(g, g.starts().iter().map(|s| s.rule))
        .or_else(|| encode_streams(g, g.rules()))
        .expect("a bottom-up grammar encodes with every rule as a root");
    let mut out = Vec::new();
    write_varint(&mut out, g.num_rules() as u64);
    write_varint(&mut out, g.num_symbols() as u64);
    let refs = streams.refs.concat();
    let raws = [streams.lens, streams.kinds, streams.terms, refs];
    let streams = put_streams(&raws, &streams.refs, g.num_rules(), classes, level, threads);
    for stream in streams {
        out.extend_from_slice(&stream);
    }
    out
}

/// The four streams as the writer stores them, `REFS` (whose byte planes are `planes`) by
/// plane. The independent parts — each stream, each plane, and at [`SMALLEST_LEVEL`] the
/// [`MODEL`] codings — are compressed on up to `threads` threads, each taking the next part
/// when done: zstd at level 19 takes seconds per million symbols, the serial tail of a
/// parallel `wpp compress`, and `KINDS` and `REFS`' upper planes take most of it.
fn put_streams(
    raws: &[Vec<u8>; 4],
    planes: &[Vec<u8>; 4],
    rules: usize,
    classes: &[u64],
    level: i32,
    threads: usize,
) -> Vec<Vec<u8>> {
    let smallest = level >= SMALLEST_LEVEL;
    let by_plane = raws[3].len() > 32;
    // The slowest parts first: the models, then `KINDS` and the upper planes.
    let mut parts = Vec::new();
    if smallest {
        parts.extend([Part::KindsModel, Part::RefsModel]);
    }
    parts.push(Part::Kinds);
    match by_plane {
        true => parts.extend([
            Part::Plane(1),
            Part::Plane(2),
            Part::Plane(3),
            Part::Plane(0),
        ]),
        false => parts.push(Part::Stream(3)),
    }
    parts.extend([Part::Stream(0), Part::Stream(2)]);
    let mut coded = on_threads(parts.len(), threads, |i| {
        let mut out = Vec::new();
        match parts[i] {
            Part::Stream(s) => put_stream(&mut out, &raws[s], level, threads),
            Part::Kinds => put_kinds(&mut out, &raws[1], level, threads),
            Part::Plane(k) => put_plane(&mut out, &planes[k], level, threads),
            Part::KindsModel => return model::encode_kinds(&raws[1]),
            Part::RefsModel => return model_refs(raws, rules, classes),
        }
        Some(out)
    });
    // Each part is taken once, in the order the file needs them; only a model may be missing.
    let mut part = |p: Part| {
        let i = parts
            .iter()
            .position(|&q| q == p)
            .expect("every part is coded");
        coded[i].take()
    };
    let mut whole = |p: Part| part(p).expect("a stream is always coded");
    let lens = whole(Part::Stream(0));
    let mut kinds = whole(Part::Kinds);
    let terms = whole(Part::Stream(2));
    let mut refs = match by_plane {
        // `REFS` as [`PLANES`]: its raw length, then each plane.
        true => {
            let mut out = vec![PLANES];
            write_varint(&mut out, raws[3].len() as u64);
            (0..4).for_each(|k| out.extend_from_slice(&whole(Part::Plane(k))));
            out
        }
        false => whole(Part::Stream(3)),
    };
    if smallest {
        kinds = smallest_of(kinds, raws[1].len(), part(Part::KindsModel));
        refs = smallest_of(refs, raws[3].len(), part(Part::RefsModel));
    }
    vec![lens, kinds, terms, refs]
}

/// A part of the `RULE` section that [`put_streams`] compresses on its own.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Part {
    /// Stream `i` of the four, whole.
    Stream(usize),
    Kinds,
    /// Plane `k` of `REFS`.
    Plane(usize),
    KindsModel,
    RefsModel,
}

/// `job(i)` for every `i < jobs`, in that order, on up to `threads` scoped threads, each
/// taking the next job when done (the same results on any number). A job whose thread
/// panicked runs again on the calling thread.
pub(super) fn on_threads<T: Send>(
    jobs: usize,
    threads: usize,
    job: impl Fn(usize) -> T + Sync,
) -> Vec<T> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;
    let next = AtomicUsize::new(0);
    let done: Vec<Mutex<Option<T>>> = (0..jobs).map(|_| Mutex::new(None)).collect();
    let work = || loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        if i >= jobs {
            break;
        }
        let out = job(i);
        *done[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(out);
    };
    std::thread::scope(|scope| {
        let helpers: Vec<_> = (1..threads.clamp(1, jobs.max(1)))
            .map(|_| scope.spawn(work))
            .collect();
        work();
        helpers.into_iter().for_each(|h| drop(h.join()));
    });
    done.into_iter()
        .enumerate()
        .map(
            |(i, d)| match d.into_inner().unwrap_or_else(|e| e.into_inner()) {
                Some(out) => out,
                None => job(i),
            },
        )
        .collect()
}

/// The four raw streams (`LENS`, `KINDS`, `TERMS`, `REFS`) of `g`'s `RULE` section, before
/// compression; for measuring coders.
pub fn raw_streams(g: &Grammar) -> [Vec<u8>; 4] {
    let s = encode_streams(g, g.starts().iter().map(|s| s.rule))
        .or_else(|| encode_streams(g, g.rules()))
        .expect("a bottom-up grammar encodes with every rule as a root");
    let refs = s.refs.concat();
    [s.lens, s.kinds, s.terms, refs]
}

/// `REFS` of `g` coded by the [`MODEL`] coder (`None` without references); for measuring.
pub fn modeled_refs(g: &Grammar, alphabet: &wpp_trace::Alphabet) -> Option<Vec<u8>> {
    model_refs(&raw_streams(g), g.num_rules(), &model::classes(alphabet))
}

/// Streams longer than two of these are compressed in jobs of this many bytes, each on a
/// thread of its own (zstd's multithreading): the serial tail of a parallel `wpp compress`, a
/// level-19 stream of megabytes, splits across the cores. The bytes do not depend on the
/// number of threads. Each job also matches into the [`OVERLAP_LOG`] part of the window
/// before it.
const JOB_BYTES: usize = 1 << 20;

/// zstd's `overlapLog`: a job indexes 1/2^(9 − 6) of the window before it (1 MiB of level 19's
/// 8 MiB). Level 19's own choice, the whole window, made every 1 MiB job index 8 MiB first,
/// and two threads no faster than one; with this, `wpp compress --threads 2` is 1.06–1.32×
/// faster on high-entropy traces and the files within ±0.25 % (BENCHMARKS.md).
const OVERLAP_LOG: u32 = 6;

/// `raw` zstd-compressed at `level`, in [`JOB_BYTES`] jobs on up to `workers` threads when it
/// is long.
fn zstd_compress(raw: &[u8], level: i32, workers: usize) -> std::io::Result<Vec<u8>> {
    use zstd::zstd_safe::CParameter;
    if raw.len() <= 2 * JOB_BYTES {
        return zstd::bulk::compress(raw, level);
    }
    let mut c = zstd::bulk::Compressor::new(level)?;
    c.set_parameter(CParameter::NbWorkers(workers.max(1) as u32))?;
    c.set_parameter(CParameter::JobSize(JOB_BYTES as u32))?;
    c.set_parameter(CParameter::OverlapSizeLog(OVERLAP_LOG))?;
    c.compress(raw)
}

/// Appends `raw` as a stream, zstd-compressed at `level` (on up to `workers` threads) unless
/// that does not make it smaller.
pub(super) fn put_stream(out: &mut Vec<u8>, raw: &[u8], level: i32, workers: usize) {
    let z = (raw.len() > 32).then(|| zstd_compress(raw, level, workers));
    put_zstd_or_stored(out, raw, z);
}

/// Appends `raw` as the zstd stream `z` if it is smaller than `raw` and within
/// [`MAX_RATIO`], else stored.
fn put_zstd_or_stored(out: &mut Vec<u8>, raw: &[u8], z: Option<std::io::Result<Vec<u8>>>) {
    match z {
        Some(Ok(z)) if z.len() < raw.len() && raw.len() <= MAX_RATIO * z.len() => {
            put_coded(out, Some(ZSTD), raw.len(), &z)
        }
        _ => {
            out.push(STORED);
            write_varint(out, raw.len() as u64);
            out.extend_from_slice(raw);
        }
    }
}

/// Appends a stream of `codec` (`None`: its header is already written) that declares `raw`
/// raw bytes (or kinds) and stores `coded`.
fn put_coded(out: &mut Vec<u8>, codec: Option<u8>, raw: usize, coded: &[u8]) {
    out.extend(codec);
    write_varint(out, raw as u64);
    write_varint(out, coded.len() as u64);
    out.extend_from_slice(coded);
}

/// Appends `KINDS` as [`PACKED`], or stored when it is short or zstd does not make it smaller.
fn put_kinds(out: &mut Vec<u8>, raw: &[u8], level: i32, workers: usize) {
    if raw.len() > 32 {
        let packed = digits::pack(raw, 4);
        if let Ok(z) = zstd_compress(&packed, level, workers) {
            if z.len() < raw.len() && packed.len() <= MAX_RATIO * z.len() {
                return put_coded(out, Some(PACKED), raw.len(), &z);
            }
        }
    }
    put_stream(out, raw, level, workers);
}

/// Appends a plane of `REFS`: as [`DIGITS`] when its values are few, else compressed at
/// `level`, unless zstd's fastest level cannot shrink it by 3 % (then it keeps that level's
/// frame, or is stored).
fn put_plane(out: &mut Vec<u8>, plane: &[u8], level: i32, workers: usize) {
    if let Some(base) = digits::base_of(plane).filter(|_| plane.len() > 32) {
        let packed = digits::pack(plane, base);
        let per = digits::per_byte(base);
        if let Ok(z) = zstd_compress(&packed, level, workers) {
            if z.len() < plane.len() && plane.len() <= per * MAX_RATIO * z.len() {
                out.extend_from_slice(&[DIGITS, base]);
                return put_coded(out, None, plane.len(), &z);
            }
        }
    }
    let quick = (plane.len() > 32).then(|| zstd_compress(plane, 1, workers));
    let incompressible = matches!(&quick, Some(Ok(z)) if z.len() * 100 > plane.len() * 97);
    match incompressible && level >= 1 {
        true => put_zstd_or_stored(out, plane, quick),
        false => put_stream(out, plane, level, workers),
    }
}

/// `plain`, a stream as the other codecs write it, or `coded`, the [`MODEL`] coding of its
/// `raw` bytes, whichever is smaller (and `coded` only within [`MAX_RATIO`]).
fn smallest_of(plain: Vec<u8>, raw: usize, coded: Option<Vec<u8>>) -> Vec<u8> {
    if let Some(coded) = coded {
        let mut modeled = Vec::new();
        put_coded(&mut modeled, Some(MODEL), raw, &coded);
        if modeled.len() < plain.len() && raw <= MAX_RATIO * coded.len() {
            return modeled;
        }
    }
    plain
}

/// `REFS` coded by the model; `None` when there are no references.
pub(super) fn model_refs(raws: &[Vec<u8>; 4], rules: usize, classes: &[u64]) -> Option<Vec<u8>> {
    let stream = |i: usize| Stream {
        name: NAMES[i],
        data: Cow::Borrowed(&raws[i][..]),
        offset: 0,
        compressed: false,
        pending: None,
    };
    let (kinds, terms) = (stream(1), stream(2));
    let sh = shape(&stream(0), &kinds, rules).ok()?;
    let refs = sh.planes[1];
    if refs == 0 || sh.planes[4] != raws[3].len() {
        return None;
    }
    let planes = &raws[3];
    let bits = usize::BITS - rules.saturating_sub(1).leading_zeros();
    model::settle(bits, refs, |coded| {
        let mut at: [usize; 4] = sh.planes[..4].try_into().expect("4 planes");
        let mut model = Model::new(rules, refs, coded);
        let mut e = model::Encoder::new();
        walk_refs(&sh, &kinds, &terms, rules, classes, |ctx, next| {
            let mut dist = 0u32;
            for (k, a) in at[..width(next)].iter_mut().enumerate() {
                dist |= u32::from(planes[*a]) << (8 * k);
                *a += 1;
            }
            let q = next - 1 - dist;
            model.code(&mut e, ctx, q);
            Ok(q)
        })
        .ok()?;
        Some(e.finish())
    })
}

/// Decodes a [`MODEL`]-coded `KINDS` of `raw` bytes (bounded by the caller).
fn unmodel_kinds(kinds: &Stream<'_>, raw: u64) -> Result<Vec<u8>, WppError> {
    let mut m = model::KindsModel::new(raw as usize, kinds.data.len());
    let mut d = model::Decoder::new(&kinds.data);
    let mut out = Vec::with_capacity(raw as usize);
    for _ in 0..raw {
        out.push(m.code(&mut d, 0));
        if d.overran() {
            return Err(kinds.error("the coded kinds end too soon".into()));
        }
    }
    used_up(kinds, &d, "kinds")?;
    Ok(out)
}

/// A [`MODEL`]-coded stream ends where its decoder does: bytes left over are an error.
fn used_up(s: &Stream<'_>, d: &model::Decoder<'_>, what: &str) -> Result<(), WppError> {
    match d.read() == s.data.len() {
        true => Ok(()),
        false => Err(s.error(format!(
            "the coded {what} use {} of its {} bytes",
            d.read(),
            s.data.len()
        ))),
    }
}

/// Decodes a [`MODEL`]-coded `REFS` of `raw` bytes into its byte planes.
fn unmodel_refs(
    sh: &Shape,
    kinds: &Stream<'_>,
    terms: &Stream<'_>,
    refs: &Stream<'_>,
    rules: usize,
    raw: u64,
    classes: &[u64],
) -> Result<Vec<u8>, WppError> {
    if raw != sh.planes[4] as u64 {
        return Err(refs.error(format!(
            "declares {raw} raw bytes, but the references need {}",
            sh.planes[4]
        )));
    }
    // `raw` is bounded by the stored bytes (read_stream checked the ratio).
    let mut planes = vec![0u8; sh.planes[4]];
    let mut at: [usize; 4] = sh.planes[..4].try_into().expect("4 planes");
    let mut model = Model::new(rules, sh.planes[1], refs.data.len());
    let mut d = model::Decoder::new(&refs.data);
    walk_refs(sh, kinds, terms, rules, classes, |ctx, next| {
        let q = model.code(&mut d, ctx, 0);
        if d.overran() {
            return Err(refs.error("the coded references end too soon".into()));
        }
        if q >= next {
            return Err(refs.error(format!(
                "a reference to rule {q}, but only {next} rules precede it"
            )));
        }
        let dist = (next - 1 - q).to_le_bytes();
        for (k, a) in at[..width(next)].iter_mut().enumerate() {
            planes[*a] = dist[k];
            *a += 1;
        }
        Ok(q)
    })?;
    used_up(refs, &d, "references")?;
    Ok(planes)
}

/// Walks the definitions in file order, as [`decode_bodies`] does, calling `code` for every
/// reference with its [`Context`] and the number of rules defined before it; `code` returns
/// the rule referred to, below that number.
fn walk_refs(
    sh: &Shape,
    kinds: &Stream<'_>,
    terms: &Stream<'_>,
    rules: usize,
    classes: &[u64],
    mut code: impl FnMut(&Context, u32) -> Result<u32, WppError>,
) -> Result<(), WppError> {
    struct Open {
        def: usize,
        read: u32,
        ctx: Context,
        effect: Effect,
    }
    // Per rule, the last terminal of its expansion (before its first use, if it is empty:
    // the reader rejects references to it), and its effect on the call stack.
    let mut last = vec![u64::MAX; rules];
    let mut effect = vec![Effect::NONE; rules];
    let mut calls = CallStack::default();
    let mut tr = terms.reader();
    let kind_bytes: &[u8] = &kinds.data;
    let mut k = 0usize;
    let mut next_def = 0usize;
    // Rules defined so far.
    let mut next = 0u32;
    let mut stack: Vec<Open> = Vec::new();
    while next_def < rules {
        stack.push(Open {
            def: next_def,
            read: 0,
            ctx: Context::NONE,
            effect: Effect::NONE,
        });
        next_def += 1;
        calls.clear();
        while let Some(top) = stack.last_mut() {
            if top.read == sh.body_len[top.def] {
                let id = sh.id[top.def] as usize;
                last[id] = top.ctx.t1;
                effect[id] = top.effect;
                next += 1;
                stack.pop();
                if let Some(parent) = stack.last_mut() {
                    parent.ctx = parent.ctx.then(id as u64, last[id], calls.top());
                    parent.effect = parent.effect.then(effect[id]);
                }
                continue;
            }
            top.read += 1;
            // The shape walk checked the kinds' count and values.
            let kind = kind_bytes[k];
            k += 1;
            match kind {
                TERMINAL => {
                    let t = tr.varint("terminal").map_err(|e| terms.fix(e))?;
                    let class = usize::try_from(t).ok().and_then(|t| classes.get(t));
                    let e = Effect::of(class.copied().unwrap_or(OTHER));
                    calls.apply(e);
                    top.effect = top.effect.then(e);
                    top.ctx = top.ctx.then(t | 1 << 40, t, calls.top());
                }
                REFERENCE => {
                    let q = code(&top.ctx, next)?;
                    let e = effect[q as usize];
                    calls.apply(e);
                    top.effect = top.effect.then(e);
                    top.ctx = top.ctx.then(u64::from(q), last[q as usize], calls.top());
                }
                _ => {
                    let ctx = top.ctx;
                    stack.push(Open {
                        def: next_def,
                        read: 0,
                        ctx,
                        effect: Effect::NONE,
                    });
                    next_def += 1;
                }
            }
        }
    }
    Ok(())
}

/// Walks each root depth-first, defining a rule inline at its first use; `None` if the rules
/// this defines, in post-order, are not exactly rules 0, 1, 2, … (each once).
fn encode_streams(g: &Grammar, roots: impl Iterator<Item = RuleId>) -> Option<Streams> {
    let mut s = Streams::default();
    let mut done = vec![false; g.num_rules()];
    let mut next = 0u32;
    let mut stack: Vec<(RuleId, usize)> = Vec::new();
    for root in roots {
        if done[root.index()] {
            return None;
        }
        write_varint(&mut s.lens, g.body(root).len() as u64);
        stack.push((root, 0));
        while let Some((rule, i)) = stack.last_mut() {
            let body = g.body(*rule);
            let Some(&sym) = body.get(*i) else {
                if rule.0 != next {
                    return None;
                }
                done[rule.index()] = true;
                next += 1;
                stack.pop();
                continue;
            };
            *i += 1;
            match sym.kind() {
                SymbolKind::Terminal(t) => {
                    s.kinds.push(TERMINAL);
                    write_varint(&mut s.terms, u64::from(t.0));
                }
                SymbolKind::Rule(q) if done[q.index()] => {
                    s.kinds.push(REFERENCE);
                    let dist = (next - 1 - q.0).to_le_bytes();
                    for (plane, &b) in s.refs.iter_mut().zip(&dist[..width(next)]) {
                        plane.push(b);
                    }
                }
                SymbolKind::Rule(q) => {
                    s.kinds.push(NEW);
                    write_varint(&mut s.lens, g.body(q).len() as u64);
                    stack.push((q, 0));
                }
            }
        }
    }
    (next as usize == g.num_rules()).then_some(s)
}

/// One stream: its bytes (decompressed if need be) and where it is in the file.
pub(super) struct Stream<'a> {
    name: &'static str,
    pub(super) data: Cow<'a, [u8]>,
    /// File offset of the stream's stored bytes.
    pub(super) offset: u64,
    pub(super) compressed: bool,
    /// A [`MODEL`]-coded stream not decoded yet: its raw length (`data` is the stored bytes).
    pending: Option<u64>,
}

impl<'a> Stream<'a> {
    fn new(name: &'static str, data: Cow<'a, [u8]>, offset: u64, compressed: bool) -> Self {
        Stream {
            name,
            data,
            offset,
            compressed,
            pending: None,
        }
    }

    /// A reader whose offsets are exact for a stored stream; for a compressed one, see
    /// [`Stream::fix`].
    fn reader(&self) -> Reader<'_> {
        Reader::new(&self.data, self.offset)
    }

    /// Offsets inside a compressed stream are not file offsets: errors name the stream's.
    fn fix(&self, mut e: WireError) -> WireError {
        if self.compressed {
            e.offset = self.offset;
        }
        e
    }

    fn at(&self, r: &Reader<'_>) -> u64 {
        if self.compressed {
            self.offset
        } else {
            r.offset()
        }
    }

    fn error(&self, message: String) -> WppError {
        WppError::Stream {
            stream: self.name,
            offset: self.offset,
            message,
        }
    }
}

/// Reads one stream header and its bytes, decompressing with `limit` raw bytes at most.
pub(super) fn read_stream<'a>(
    r: &mut Reader<'a>,
    name: &'static str,
    limit: u64,
) -> Result<Stream<'a>, WppError> {
    read_stream_of(r, name, limit, Role::Plain)
}

/// Which stream a stream is, and so which codecs besides [`STORED`] and [`ZSTD`] it may have.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    Plain,
    /// `KINDS`: [`PACKED`], or [`MODEL`] ([`model::KindsModel`], decoded at once).
    Kinds,
    /// `REFS`: [`PLANES`], or [`MODEL`] ([`model::Model`], decoded once the other streams are:
    /// [`Stream::pending`]).
    Refs,
    /// A plane of [`PLANES`]: [`DIGITS`].
    Plane,
}

/// [`read_stream`], also accepting the codecs of `role`.
fn read_stream_of<'a>(
    r: &mut Reader<'a>,
    name: &'static str,
    limit: u64,
    role: Role,
) -> Result<Stream<'a>, WppError> {
    let codec_offset = r.offset();
    let codec = r.u8("stream codec")?;
    match codec {
        STORED => {
            let len = r.count(1, "stream length")?;
            let offset = r.offset();
            let data = r.bytes(len, "stream bytes")?;
            if len as u64 > limit {
                return Err(WppError::Stream {
                    stream: name,
                    offset,
                    message: format!("{len} bytes, more than the counts allow ({limit})"),
                });
            }
            Ok(Stream::new(name, Cow::Borrowed(data), offset, false))
        }
        ZSTD => {
            let (raw, data, offset) = coded(r, name, limit, MAX_RATIO)?;
            // `raw` is at most MAX_RATIO times bytes in the file: the capacity is bounded.
            let out = unzstd(name, data, offset, raw as usize)?;
            Ok(Stream::new(name, Cow::Owned(out), offset, true))
        }
        PLANES if role == Role::Refs => read_planes(r, name, limit),
        PACKED if role == Role::Kinds => read_digits(r, name, limit, 4),
        DIGITS if role == Role::Plane => {
            let base_offset = r.offset();
            match r.u8("digit base")? {
                base @ 2..=digits::MAX_BASE => read_digits(r, name, limit, base),
                base => Err(WppError::Stream {
                    stream: name,
                    offset: base_offset,
                    message: format!("digit base {base}, not in 2..={}", digits::MAX_BASE),
                }),
            }
        }
        MODEL if role == Role::Kinds || role == Role::Refs => {
            let (raw, data, offset) = coded(r, name, limit, MAX_RATIO)?;
            let mut stream = Stream::new(name, Cow::Borrowed(data), offset, true);
            stream.pending = Some(raw);
            if role == Role::Kinds {
                stream.data = Cow::Owned(unmodel_kinds(&stream, raw)?);
                stream.pending = None;
            }
            Ok(stream)
        }
        _ => Err(WppError::Stream {
            stream: name,
            offset: codec_offset,
            message: format!("unknown codec {codec}"),
        }),
    }
}

/// A coded stream's raw length, its stored bytes and their offset, after checking that the
/// raw length is at most `limit` and `ratio` times the stored bytes.
fn coded<'a>(
    r: &mut Reader<'a>,
    name: &'static str,
    limit: u64,
    ratio: usize,
) -> Result<(u64, &'a [u8], u64), WppError> {
    let raw_offset = r.offset();
    let raw = r.varint("stream raw length")?;
    let len = r.count(1, "stream length")?;
    let offset = r.offset();
    let data = r.bytes(len, "stream bytes")?;
    let cap = limit.min((ratio * len) as u64);
    if raw > cap {
        return Err(WppError::Stream {
            stream: name,
            offset: raw_offset,
            message: format!(
                "declares {raw} raw bytes, more than {cap} ({ratio} × the {len} stored bytes, \
                 and what the counts allow)"
            ),
        });
    }
    Ok((raw, data, offset))
}

/// The zstd frame `data` of stream `name`, which must decompress to exactly `raw` bytes.
fn unzstd(name: &'static str, data: &[u8], offset: u64, raw: usize) -> Result<Vec<u8>, WppError> {
    let error = |message| WppError::Stream {
        stream: name,
        offset,
        message,
    };
    let out = zstd::bulk::decompress(data, raw).map_err(|e| error(format!("zstd: {e}")))?;
    match out.len() == raw {
        true => Ok(out),
        false => Err(error(format!(
            "decompresses to {} bytes, not {raw}",
            out.len()
        ))),
    }
}

/// A stream of values packed as base-`base` [`digits`] and zstd-compressed ([`PACKED`],
/// [`DIGITS`]), after its codec (and base).
fn read_digits<'a>(
    r: &mut Reader<'a>,
    name: &'static str,
    limit: u64,
    base: u8,
) -> Result<Stream<'a>, WppError> {
    let per = digits::per_byte(base);
    let (raw, data, offset) = coded(r, name, limit, per * MAX_RATIO)?;
    // `raw` is at most `per` × MAX_RATIO times the bytes in the file: the capacity is bounded.
    let packed = unzstd(name, data, offset, raw.div_ceil(per as u64) as usize)?;
    let values =
        digits::unpack(&packed, raw as usize, base).map_err(|message| WppError::Stream {
            stream: name,
            offset,
            message,
        })?;
    Ok(Stream::new(name, Cow::Owned(values), offset, true))
}

/// A [`PLANES`] stream (after its codec byte): the raw length, then four streams.
fn read_planes<'a>(
    r: &mut Reader<'a>,
    name: &'static str,
    limit: u64,
) -> Result<Stream<'a>, WppError> {
    let raw_offset = r.offset();
    let raw = r.varint("stream raw length")?;
    let error = |offset, message| WppError::Stream {
        stream: name,
        offset,
        message,
    };
    if raw > limit {
        let message = format!("declares {raw} raw bytes, more than the counts allow ({limit})");
        return Err(error(raw_offset, message));
    }
    // Each plane's allocation is bounded by its own stored bytes (`read_stream`).
    let mut data = Vec::new();
    let offset = r.offset();
    for _ in 0..4 {
        let plane = read_stream_of(r, name, raw - data.len() as u64, Role::Plane)?;
        data.extend_from_slice(&plane.data);
    }
    if data.len() as u64 != raw {
        let message = format!("its planes hold {} bytes, not {raw}", data.len());
        return Err(error(offset, message));
    }
    Ok(Stream::new(name, Cow::Owned(data), offset, true))
}

/// Decodes and validates the section; see the module documentation for what is checked.
/// `classes` as for [`encode`].
pub(super) fn decode(
    r: &mut Reader<'_>,
    alphabet: usize,
    classes: &[u64],
) -> Result<DecodedRules, WppError> {
    // Every rule has a body length in `LENS` and every symbol a byte in `KINDS`, so the
    // streams bound the counts; the counts in turn bound the streams. Varints of 32-bit
    // values take at most 5 bytes.
    let rules = r.varint_max((1 << 31) - 1, "rule count")?;
    let symbols = r.varint_max(u64::from(u32::MAX), "symbol count")?;
    let lens = read_stream(r, NAMES[0], 5 * rules)?;
    let kinds = read_stream_of(r, NAMES[1], symbols, Role::Kinds)?;
    let terms = read_stream(r, NAMES[2], 5 * symbols)?;
    let mut refs = read_stream_of(r, NAMES[3], 4 * symbols, Role::Refs)?;
    super::finished(r, RULE)?;
    if (lens.data.len() as u64) < rules {
        return Err(lens.error(format!("too short for {rules} rules")));
    }
    if kinds.data.len() as u64 != symbols {
        return Err(kinds.error(format!(
            "has {} bytes for {symbols} symbols",
            kinds.data.len()
        )));
    }
    // Both counts are now bounded by bytes held in memory.
    let (rules, symbols) = (rules as usize, symbols as usize);
    let shape = shape(&lens, &kinds, rules)?;
    if let Some(raw) = refs.pending {
        let planes = unmodel_refs(&shape, &kinds, &terms, &refs, rules, raw, classes)?;
        refs.data = Cow::Owned(planes);
        refs.pending = None;
    }
    decode_bodies(&shape, &kinds, &terms, &refs, rules, symbols, alphabet)
}

/// The tree structure `LENS` and `KINDS` describe: per definition (in file order) its body
/// length and rule id.
struct Shape {
    body_len: Vec<u32>,
    id: Vec<u32>,
    /// Where each rule's body starts in the symbol array, by id; one more entry at the end.
    starts: Vec<usize>,
    /// Where each byte plane of `REFS` starts; one more entry at the end.
    planes: [usize; 5],
}

/// Walks `LENS` and `KINDS` once to number the definitions in post-order.
fn shape(lens: &Stream<'_>, kinds: &Stream<'_>, rules: usize) -> Result<Shape, WppError> {
    let mut sh = Shape {
        body_len: Vec::with_capacity(rules),
        id: Vec::with_capacity(rules),
        starts: Vec::new(),
        planes: [0; 5],
    };
    // References by width.
    let mut by_width = [0usize; 5];
    let mut lr = lens.reader();
    let kind_bytes: &[u8] = &kinds.data;
    let mut k = 0usize;
    let mut next = 0u32;
    // Per open definition: its index and the symbols left in its body.
    let mut stack: Vec<(usize, u64)> = Vec::new();
    while (next as usize) < rules {
        define(&mut sh, lens, &mut lr, &mut stack, rules)?;
        while let Some(top) = stack.last_mut() {
            if top.1 == 0 {
                sh.id[top.0] = next;
                next += 1;
                stack.pop();
                continue;
            }
            top.1 -= 1;
            let Some(&kind) = kind_bytes.get(k) else {
                return Err(kinds.error("ends inside a rule body".into()));
            };
            k += 1;
            match kind {
                NEW => define(&mut sh, lens, &mut lr, &mut stack, rules)?,
                TERMINAL => {}
                REFERENCE => by_width[width(next)] += 1,
                _ => {
                    let at = if kinds.compressed {
                        kinds.offset
                    } else {
                        kinds.offset + k as u64 - 1
                    };
                    return Err(WppError::Stream {
                        stream: kinds.name,
                        offset: at,
                        message: format!("unknown symbol kind {kind}"),
                    });
                }
            }
        }
    }
    if !lr.is_empty() || k != kind_bytes.len() {
        let s = if lr.is_empty() { kinds } else { lens };
        return Err(s.error("has unread bytes".into()));
    }
    // Plane k holds a byte of every reference wider than k.
    for k in 0..4 {
        sh.planes[k + 1] = sh.planes[k] + by_width[k + 1..].iter().sum::<usize>();
    }
    sh.starts = vec![0; rules + 1];
    for (d, &id) in sh.id.iter().enumerate() {
        sh.starts[id as usize + 1] = sh.body_len[d] as usize;
    }
    for i in 0..rules {
        sh.starts[i + 1] += sh.starts[i];
    }
    Ok(sh)
}

/// Starts the next definition: reads its body length.
fn define(
    sh: &mut Shape,
    lens: &Stream<'_>,
    lr: &mut Reader<'_>,
    stack: &mut Vec<(usize, u64)>,
    rules: usize,
) -> Result<(), WppError> {
    if sh.body_len.len() == rules {
        return Err(lens.error(format!("defines more than {rules} rules")));
    }
    let len = lr
        .varint_max(u64::from(u32::MAX), "rule body length")
        .map_err(|e| lens.fix(e))?;
    stack.push((sh.body_len.len(), len));
    sh.body_len.push(len as u32);
    sh.id.push(u32::MAX);
    Ok(())
}

/// One rule being read: definition index, id, symbols read, expanded length so far.
struct Frame {
    def: usize,
    id: u32,
    read: usize,
    total: u64,
}

fn decode_bodies(
    sh: &Shape,
    kinds: &Stream<'_>,
    terms: &Stream<'_>,
    refs: &Stream<'_>,
    rules: usize,
    symbols: usize,
    alphabet: usize,
) -> Result<DecodedRules, WppError> {
    let mut d = DecodedRules {
        symbols: vec![Symbol::terminal(Terminal(0)); symbols],
        ends: sh.starts[1..].to_vec(),
        uses: vec![0; rules],
    };
    let mut lengths = vec![0u64; rules];
    let mut tr = terms.reader();
    if refs.data.len() != sh.planes[4] {
        return Err(refs.error(format!(
            "has {} bytes, but the references need {}",
            refs.data.len(),
            sh.planes[4]
        )));
    }
    let mut plane_at: [usize; 4] = sh.planes[..4].try_into().expect("4 planes");
    let kind_bytes: &[u8] = &kinds.data;
    let mut k = 0usize;
    let mut next_def = 0usize;
    let mut next = 0u32;
    let mut stack: Vec<Frame> = Vec::new();
    while next_def < rules {
        stack.push(Frame {
            def: next_def,
            id: sh.id[next_def],
            read: 0,
            total: 0,
        });
        next_def += 1;
        while let Some(top) = stack.last_mut() {
            let rule = top.id;
            if top.read == sh.body_len[top.def] as usize {
                debug_assert_eq!(rule, next);
                lengths[rule as usize] = top.total;
                next += 1;
                let len = top.total;
                stack.pop();
                if let Some(parent) = stack.last_mut() {
                    parent.total =
                        parent
                            .total
                            .checked_add(len)
                            .ok_or(WppError::LengthOverflow {
                                rule: parent.id,
                                offset: kinds.offset,
                            })?;
                }
                continue;
            }
            let slot = sh.starts[rule as usize] + top.read;
            top.read += 1;
            let kind = kind_bytes[k];
            k += 1;
            let (symbol, len) = match kind {
                TERMINAL => {
                    let offset = terms.at(&tr);
                    let t = tr.varint("terminal").map_err(|e| terms.fix(e))?;
                    if t >= alphabet as u64 {
                        return Err(WppError::TerminalOutOfRange {
                            rule,
                            terminal: t,
                            alphabet,
                            offset,
                        });
                    }
                    (Symbol::terminal(Terminal(t as u32)), 1)
                }
                REFERENCE => {
                    let offset = if refs.compressed {
                        refs.offset
                    } else {
                        refs.offset + plane_at[0] as u64
                    };
                    let mut dist = 0u64;
                    for (k, at) in plane_at[..width(next)].iter_mut().enumerate() {
                        dist |= u64::from(refs.data[*at]) << (8 * k);
                        *at += 1;
                    }
                    if dist >= u64::from(next) {
                        return Err(WppError::Stream {
                            stream: refs.name,
                            offset,
                            message: format!(
                                "rule {rule} refers {} rules back, but only {next} rules precede it",
                                u128::from(dist) + 1
                            ),
                        });
                    }
                    let q = next - 1 - dist as u32;
                    if lengths[q as usize] == 0 {
                        return Err(WppError::EmptyRuleReference {
                            rule,
                            target: u64::from(q),
                            offset,
                        });
                    }
                    d.uses[q as usize] += 1;
                    (Symbol::rule(RuleId(q)), lengths[q as usize])
                }
                _ => {
                    // NEW: the shape walk checked the kinds.
                    let def = next_def;
                    next_def += 1;
                    let child = sh.id[def];
                    if sh.body_len[def] == 0 {
                        return Err(WppError::EmptyRuleReference {
                            rule,
                            target: u64::from(child),
                            offset: kinds.offset,
                        });
                    }
                    d.uses[child as usize] += 1;
                    d.symbols[slot] = Symbol::rule(RuleId(child));
                    stack.push(Frame {
                        def,
                        id: child,
                        read: 0,
                        total: 0,
                    });
                    continue;
                }
            };
            d.symbols[slot] = symbol;
            top.total = top.total.checked_add(len).ok_or(WppError::LengthOverflow {
                rule,
                offset: kinds.offset,
            })?;
        }
    }
    if !tr.is_empty() {
        return Err(terms.error("has unread bytes".into()));
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithm::{compress, Algorithm};
    use proptest::prelude::*;

    /// A stream long enough to be compressed in jobs reads back, and its bytes do not depend
    /// on the number of threads.
    #[test]
    fn long_streams_are_the_same_bytes_on_any_number_of_threads() {
        let mut x = 1u64;
        let raw: Vec<u8> = (0..5 * JOB_BYTES)
            .map(|i| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (x >> 60) as u8 ^ (i / 4096) as u8
            })
            .collect();
        let one = zstd_compress(&raw, 3, 1).unwrap();
        assert_eq!(zstd::bulk::decompress(&one, raw.len()).unwrap(), raw);
        for workers in [2, 3] {
            assert_eq!(
                zstd_compress(&raw, 3, workers).unwrap(),
                one,
                "{workers} workers"
            );
        }
    }

    #[test]
    fn jobs_on_threads_come_back_in_order_and_a_dead_helpers_job_runs_again() {
        for threads in 0..5 {
            assert_eq!(on_threads(7, threads, |i| i * i), [0, 1, 4, 9, 16, 25, 36]);
        }
        assert!(on_threads(0, 3, |i| i).is_empty());
        use std::sync::atomic::{AtomicBool, Ordering};
        let caller = std::thread::current().id();
        let failed = AtomicBool::new(false);
        let out = on_threads(8, 2, |i| {
            // The calling thread's first job waits until the helper has taken the next one
            // and died in it, so that job is left for the calling thread to run again.
            if std::thread::current().id() != caller {
                failed.store(true, Ordering::SeqCst);
                panic!("a helper dies");
            }
            while !failed.load(Ordering::SeqCst) {
                std::thread::yield_now();
            }
            i + 1
        });
        assert_eq!(out, (1..=8).collect::<Vec<_>>());
    }

    /// The `RULE` section of a high-entropy grammar (two planes, the top one as digits) and
    /// of a small one (`REFS` whole) is the same on any number of threads, at the default
    /// level and the smallest.
    #[test]
    fn rule_sections_are_the_same_bytes_on_any_number_of_threads() {
        let mut x = 7u64;
        let trace: Vec<Terminal> = (0..30_000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                Terminal((x % 6) as u32)
            })
            .collect();
        for events in [trace.len(), 40] {
            let g = compress(Algorithm::Sequitur, &[&trace[..events]]).unwrap();
            if events > 40 {
                let refs = &raw_streams(&g)[3];
                let rules = g.num_rules();
                assert!(
                    (257..4096).contains(&rules) && refs.len() > 64,
                    "{rules}: two planes"
                );
            }
            for level in [19, SMALLEST_LEVEL] {
                let one = encode(&g, level, 1, &[]);
                for threads in [2, 3, 9] {
                    assert_eq!(
                        encode(&g, level, threads, &[]),
                        one,
                        "{events} {level} {threads}"
                    );
                }
            }
        }
    }

    /// `REFS` of `g` through the model and back.
    fn refs_round_trip(g: &Grammar, classes: &[u64]) {
        let raws = raw_streams(g);
        let Some(coded) = model_refs(&raws, g.num_rules(), classes) else {
            assert!(raws[3].is_empty());
            return;
        };
        let stream = |i: usize, data: &[u8]| Stream {
            name: NAMES[i],
            data: Cow::Owned(data.to_vec()),
            offset: 0,
            compressed: i == 3,
            pending: None,
        };
        let (kinds, terms) = (stream(1, &raws[1]), stream(2, &raws[2]));
        let sh = shape(&stream(0, &raws[0]), &kinds, g.num_rules()).unwrap();
        let refs = stream(3, &coded);
        let raw = raws[3].len() as u64;
        let back = unmodel_refs(&sh, &kinds, &terms, &refs, g.num_rules(), raw, classes);
        assert_eq!(back.unwrap(), raws[3]);
        // Cut short anywhere, or with a byte more, it is an error.
        for cut in 0..coded.len() {
            let refs = stream(3, &coded[..cut]);
            let e = unmodel_refs(&sh, &kinds, &terms, &refs, g.num_rules(), raw, classes);
            assert!(
                matches!(e, Err(WppError::Stream { stream: "REFS", .. })),
                "cut {cut}"
            );
        }
        let mut longer = coded.clone();
        longer.push(0);
        let refs = stream(3, &longer);
        let e = unmodel_refs(&sh, &kinds, &terms, &refs, g.num_rules(), raw, classes);
        assert!(matches!(e, Err(WppError::Stream { stream: "REFS", .. })));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        #[test]
        fn random_grammars_refs_round_trip(
            streams in prop::collection::vec(prop::collection::vec(0u32..6, 0..300), 1..3),
            frequency in any::<bool>(),
        ) {
            let ts: Vec<Vec<Terminal>> =
                streams.iter().map(|s| s.iter().map(|&t| Terminal(t)).collect()).collect();
            let refs: Vec<&[Terminal]> = ts.iter().map(|s| s.as_slice()).collect();
            let algorithm = if frequency { Algorithm::Frequency } else { Algorithm::Sequitur };
            let g = compress(algorithm, &refs).unwrap();
            // Terminals 0 and 1 enter functions 3 and 4, terminal 2 leaves.
            refs_round_trip(&g, &[3, 4, model::LEAVE, model::OTHER, model::OTHER]);
            refs_round_trip(&g, &[]);
        }
    }
}
