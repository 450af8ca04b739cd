//! `wpp match`: first occurrence or number of occurrences of an intraprocedural path
//! (Zhang–Gupta §4) in a `.wpp` grammar (schemes 1, 2, 4), a chunked trace (scheme 3) or a
//! raw trace (scheme 1).
//!
//! Path recordings (`trace-paths`) are matched on the blocks their paths stand for: each
//! `Path` is decoded through the CFGs of the file's program database (`wpp_paths::trace`) and
//! the automaton of scheme 1 runs on the decoded block stream, so positions are event indices
//! in the thread's *decoded* stream — the positions the `trace-blocks` recording of the same
//! run has. Schemes 2 and 4 work on the grammar's terminals, and a `Path` terminal does not
//! determine its blocks (its function depends on the call stack), so they report an error
//! for path grammars; scheme 3's chunked traces carry no CFGs (chunk `wpp trace blocks`'s
//! output instead).

use std::fs::File;
use std::io::{BufReader, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Context;
use serde::Serialize;
use wpp_grammar::file::WppFile;
use wpp_query::matching::chunked::{self, ChunkedTrace};
use wpp_query::matching::partition;
use wpp_query::matching::{
    compressed, scheme1, Automaton, Kind, Mode, PathQuery, Scheme, StreamMatch,
};
use wpp_query::pattern::Pattern;
use wpp_trace::{BlockId, Event, FunctionId, ProgramDb, ThreadDemux, ThreadId};

use crate::input::{self, Kind as FileKind};
use crate::util::{function_position, NotInFile};

/// Arguments of `wpp match`.
#[derive(clap::Args)]
pub struct Args {
    /// A `.wpp` file, a chunked trace from `wpp trace chunk`, or a raw trace. Paths of a
    /// path recording are decoded to blocks through the file's CFGs (positions are then in
    /// the decoded block stream).
    pub file: PathBuf,
    /// The function: a name, or `#id`.
    #[arg(long)]
    pub function: String,
    /// The path's block ids, e.g. `3,4,7`. Repeat to match several paths of the function at
    /// once (schemes 1 and 3 then decompress once for all of them). Where the file has the
    /// function's CFG and a sequence is not a path of it, a note on stderr names the first
    /// pair that is not an edge: only a `longjmp` or an exception can take it, so a count of 0
    /// is likely a mistyped path rather than one that did not run. It is matched all the same.
    #[arg(long = "path", required = true, value_parser = parse_path)]
    pub paths: Vec<BlockPath>,
    /// The matching scheme: 1 expand, 2 compressed, 3 chunked trace, 4 partitioned (needs the
    /// index from `wpp compress --index`), auto (4 if indexed, 3 for chunked traces, else 2).
    #[arg(long, default_value = "auto")]
    pub scheme: String,
    /// Count all occurrences instead of stopping at the first.
    #[arg(long)]
    pub count: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// A path given on the command line.
#[derive(Clone, Debug)]
pub struct BlockPath(Vec<u32>);

fn parse_path(s: &str) -> Result<BlockPath, String> {
    s.split(',')
        .map(|b| {
            b.trim()
                .parse::<u32>()
                .map_err(|_| format!("bad block id `{b}` in `{s}`"))
        })
        .collect::<Result<Vec<_>, _>>()
        .map(BlockPath)
}

#[derive(Serialize)]
struct Output {
    scheme: Scheme,
    function: String,
    path: Vec<u32>,
    seconds: f64,
    streams: Vec<StreamMatch>,
}

/// The function `name` (or `#id`, which a text trace may use without naming it) among `names`
/// (by id); an unknown name is an error with the nearest names.
fn resolve(file: &Path, name: &str, names: &[String]) -> anyhow::Result<FunctionId> {
    if let Some(id) = name.strip_prefix('#') {
        return Ok(FunctionId(id.parse().map_err(|_| {
            NotInFile(format!("bad function id `{name}` (expected #NUMBER)"))
        })?));
    }
    let at = function_position(file, name, names.iter().map(String::as_str))?;
    Ok(FunctionId(at as u32))
}

/// The function `name` of `db`, checking that the queried blocks are the function's where the
/// file knows how many it has (its CFG, or its blocks' source lines), and, where it has the
/// function's CFG, noting each path that does not follow its edges: most likely a mistake in
/// the query, though a `longjmp` or an exception can take such a sequence.
fn resolve_in(file: &Path, db: &ProgramDb, args: &Args) -> anyhow::Result<FunctionId> {
    let names: Vec<String> = db.functions.iter().map(|f| f.name.clone()).collect();
    let id = resolve(file, &args.function, &names)?;
    let Some(f) = db.function(id) else {
        return Ok(id);
    };
    let blocks = match &f.cfg {
        Some(cfg) => cfg.successors.len(),
        None => f.block_lines.len(),
    };
    if blocks == 0 {
        return Ok(id);
    }
    for p in &args.paths {
        if let Some(b) = p.0.iter().find(|&&b| b as usize >= blocks) {
            return Err(NotInFile(format!(
                "{}: function `{}` has blocks 0 to {}; block {b} is not one of them",
                file.display(),
                f.name,
                blocks - 1
            ))
            .into());
        }
    }
    let Some(cfg) = &f.cfg else {
        return Ok(id);
    };
    for p in &args.paths {
        let Some((a, b)) =
            p.0.windows(2)
                .map(|w| (w[0], w[1]))
                .find(|&(a, b)| !cfg.successors[a as usize].contains(&b))
        else {
            continue;
        };
        let successors = match &cfg.successors[a as usize][..] {
            [] => format!("block {a} has no successors"),
            s => format!(
                "the successors of block {a} are {}",
                s.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
            ),
        };
        let shown: Vec<String> = p.0.iter().map(u32::to_string).collect();
        eprintln!(
            "wpp match: note: {}: --path {} is not a path of `{}`'s CFG: {a} -> {b} is not one \
             of its edges ({successors}); only a longjmp or an exception can take it",
            file.display(),
            shown.join(","),
            f.name,
        );
    }
    Ok(id)
}

/// Runs `wpp match`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let mode = if args.count { Mode::Count } else { Mode::First };
    let t0 = Instant::now();
    let kinds = [
        FileKind::Chunked,
        FileKind::Wpp,
        FileKind::Trace,
        FileKind::TextTrace,
    ];
    let (scheme, answers) = match input::expect(&args.file, &kinds, "match")? {
        FileKind::Chunked => match_chunked(&args, mode)?,
        FileKind::Wpp => match_wpp(&args, mode)?,
        _ => match_trace(&args, mode)?,
    };
    let seconds = t0.elapsed().as_secs_f64();
    let outs: Vec<Output> = args
        .paths
        .iter()
        .zip(answers)
        .map(|(p, streams)| Output {
            scheme,
            function: args.function.clone(),
            path: p.0.clone(),
            seconds,
            streams,
        })
        .collect();
    if args.json {
        return match &outs[..] {
            [one] => crate::util::print_json(one),
            all => crate::util::print_json(&all),
        };
    }
    for out in &outs {
        print_text(out, mode)?;
    }
    Ok(())
}

fn queries(args: &Args, function: FunctionId) -> Vec<PathQuery> {
    args.paths
        .iter()
        .map(|p| PathQuery {
            function,
            path: p.0.iter().map(|&b| BlockId(b)).collect(),
        })
        .collect()
}

/// Scheme 3 on a chunked trace.
fn match_chunked(args: &Args, mode: Mode) -> anyhow::Result<(Scheme, Vec<Vec<StreamMatch>>)> {
    if !matches!(args.scheme.as_str(), "3" | "auto") {
        anyhow::bail!(
            "{} is a chunked trace: only scheme 3 applies",
            args.file.display()
        );
    }
    let f = File::open(&args.file)?;
    let mut trace = ChunkedTrace::open(BufReader::new(f))
        .with_context(|| format!("cannot read {}", args.file.display()))?;
    let function = resolve(&args.file, &args.function, trace.function_names())?;
    let qs = queries(args, function);
    let (answers, _) = chunked::run_many(&mut trace, &qs, mode)
        .with_context(|| format!("cannot read {}", args.file.display()))?;
    Ok((Scheme::Chunked, answers))
}

/// Schemes 1, 2 and 4 on a `.wpp` file.
fn match_wpp(args: &Args, mode: Mode) -> anyhow::Result<(Scheme, Vec<Vec<StreamMatch>>)> {
    let wpp = input::read_wpp(&args.file, "match")?;
    let function = resolve_in(&args.file, &wpp.program, args)?;
    let qs = queries(args, function);
    let index = partition::find_index(&wpp.extra, &wpp.grammar)
        .with_context(|| format!("cannot read the scheme 4 index of {}", args.file.display()))?;
    let (g, alphabet) = (&wpp.grammar, &wpp.alphabet);
    if alphabet
        .events()
        .iter()
        .any(|e| matches!(e, Event::Path(_)))
    {
        return match args.scheme.as_str() {
            "1" | "auto" => Ok((Scheme::Expand, match_decoded_wpp(&wpp, &qs, mode)?)),
            s => anyhow::bail!(
                "{} records acyclic paths: scheme {s} needs a block grammar; use scheme 1 \
                 (decodes each path through the file's CFGs), or compress the output of \
                 `wpp trace blocks` on the raw recording",
                args.file.display()
            ),
        };
    }
    match (args.scheme.as_str(), index) {
        ("1", _) => Ok((Scheme::Expand, scheme1::run_many(g, alphabet, &qs, mode)?)),
        ("2", _) | ("auto", None) => {
            let answers = qs
                .iter()
                .map(|q| compressed::run(g, alphabet, q, mode))
                .collect::<Result<_, _>>()?;
            Ok((Scheme::Compressed, answers))
        }
        ("4" | "auto", Some(index)) => {
            let answers = qs
                .iter()
                .map(|q| partition::run(g, alphabet, &index, q, mode).map(|r| r.0))
                .collect::<Result<_, _>>()?;
            Ok((Scheme::Partitioned, answers))
        }
        ("4", None) => anyhow::bail!(
            "{} has no scheme 4 index; rebuild it with `wpp compress --index`",
            args.file.display()
        ),
        ("3", _) => anyhow::bail!("scheme 3 needs a chunked trace (`wpp trace chunk`)"),
        (s, _) => anyhow::bail!("unknown scheme `{s}` (expected 1, 2, 3, 4 or auto)"),
    }
}

/// Scheme 1 on a raw trace (block or path; paths decoded to blocks), streamed batch by batch.
fn match_trace(args: &Args, mode: Mode) -> anyhow::Result<(Scheme, Vec<Vec<StreamMatch>>)> {
    if !matches!(args.scheme.as_str(), "1" | "auto") {
        anyhow::bail!(
            "{} is a raw trace: only scheme 1 applies (compress it for schemes 2 and 4, chunk \
             it for scheme 3)",
            args.file.display()
        );
    }
    let path = &args.file;
    let mut reader = input::open_trace(path, "match")?;
    let db = reader.program().clone();
    let function = resolve_in(path, &db, args)?;
    let qs = queries(args, function);
    let patterns = compile(&qs)?;
    let mut m = Matcher::new(&qs, &patterns);
    // Block traces need no CFGs; a `Path` in a file without them is an error.
    let mut decoder = match db.has_cfgs() {
        true => Some(wpp_paths::BlockStream::new(&db)?),
        false => None,
    };
    while let Some(batch) = reader
        .next_batch()
        .with_context(|| format!("cannot read {}", path.display()))?
    {
        for &e in batch {
            match (&mut decoder, e) {
                (Some(d), _) => d
                    .push(e, |b| m.feed(b))
                    .with_context(|| format!("cannot decode {}", path.display()))?,
                (None, Event::Path(_)) => {
                    return Err(wpp_paths::DecodeError::NoCfgs)
                        .with_context(|| format!("cannot decode {}", path.display()))
                }
                (None, _) => m.feed(e),
            }
        }
    }
    input::warn_truncated(path, reader.truncation());
    Ok((Scheme::Expand, m.answers(mode)))
}

/// Scheme 1 on a path grammar: each thread's expansion decoded to blocks.
fn match_decoded_wpp(
    wpp: &WppFile,
    qs: &[PathQuery],
    mode: Mode,
) -> anyhow::Result<Vec<Vec<StreamMatch>>> {
    let patterns = compile(qs)?;
    let mut m = Matcher::new(qs, &patterns);
    for start in wpp.grammar.starts() {
        let mut stream = wpp_paths::BlockStream::new(&wpp.program)?;
        let mut failed = None;
        m.feed(Event::Thread(start.thread));
        wpp_query::expand::for_each_terminal(&wpp.grammar, start.rule, |t| {
            let e = wpp.alphabet.event(t).expect("the reader checks terminals");
            if let Err(err) = stream.push(e, |b| m.feed(b)) {
                failed = Some(err);
            }
            failed.is_none() && !(mode == Mode::First && m.all_found(start.thread))
        });
        if let Some(e) = failed {
            return Err(e).with_context(|| format!("thread {}", start.thread));
        }
    }
    Ok(m.answers(mode))
}

fn compile(qs: &[PathQuery]) -> anyhow::Result<Vec<Pattern>> {
    Ok(qs
        .iter()
        .map(|q| Pattern::new(&q.path))
        .collect::<Result<_, _>>()?)
}

/// The automata of scheme 1, one per query and thread, fed an interleaved event stream.
struct Matcher<'p> {
    queries: &'p [PathQuery],
    patterns: &'p [Pattern],
    threads: std::collections::BTreeMap<ThreadId, Vec<Automaton<'p>>>,
    demux: ThreadDemux,
}

impl<'p> Matcher<'p> {
    fn new(queries: &'p [PathQuery], patterns: &'p [Pattern]) -> Self {
        Matcher {
            queries,
            patterns,
            threads: Default::default(),
            demux: ThreadDemux::new(),
        }
    }

    fn feed(&mut self, e: Event) {
        let Some(t) = self.demux.route(e) else {
            return;
        };
        let autos = self
            .threads
            .entry(t)
            .or_insert_with(|| self.patterns.iter().map(Automaton::new).collect());
        for ((a, q), p) in autos.iter_mut().zip(self.queries).zip(self.patterns) {
            a.feed(Kind::of(e, q.function, p));
        }
    }

    fn all_found(&self, t: ThreadId) -> bool {
        self.threads
            .get(&t)
            .is_some_and(|autos| autos.iter().all(|a| a.first().is_some()))
    }

    fn answers(&self, mode: Mode) -> Vec<Vec<StreamMatch>> {
        (0..self.queries.len())
            .map(|i| {
                self.threads
                    .iter()
                    .map(|(t, autos)| StreamMatch {
                        thread: t.0,
                        first: autos[i].first(),
                        count: (mode == Mode::Count).then_some(autos[i].count()),
                    })
                    .collect()
            })
            .collect()
    }
}

fn print_text(out: &Output, mode: Mode) -> std::io::Result<()> {
    let mut w = std::io::stdout().lock();
    let found: Vec<&StreamMatch> = out.streams.iter().filter(|s| s.first.is_some()).collect();
    if found.is_empty() {
        writeln!(
            w,
            "no occurrence of {:?} in {} ({:?})",
            out.path, out.function, out.scheme
        )?;
        return Ok(());
    }
    for s in found {
        match mode {
            Mode::First => writeln!(
                w,
                "thread {}: first occurrence ends at event {}",
                s.thread,
                s.first.unwrap_or(0)
            )?,
            Mode::Count => writeln!(
                w,
                "thread {}: {} occurrences, the first ending at event {}",
                s.thread,
                s.count.unwrap_or(0),
                s.first.unwrap_or(0)
            )?,
        }
    }
    eprintln!("{:?} in {:.3} s", out.scheme, out.seconds);
    Ok(())
}
