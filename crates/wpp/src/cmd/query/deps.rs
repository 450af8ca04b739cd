//! `wpp deps list|stats|chain`: the dynamic memory dependences of a recording, recovered
//! either from the address trace of a `wpp cc --mode trace-addr` run (`PROGRAM.PID.at`,
//! `wpp_deps::at`) with the byte-granular last-writer table, or from the eWPP of a
//! `--mode ewpp` run (its trace or `.wpp`: the eCF, `wpp_deps::ecf`) by replaying its checks'
//! control flow (Tallam–Gupta §5). Both give the same dependences on the program's stores; only
//! the address trace knows the external reads and the bytes of each dependence.

use anyhow::Context as _;
use serde::Serialize;
use std::io::Write;
use std::path::{Path, PathBuf};
use wpp_deps::chain::ChainIndex;
use wpp_deps::ecf::{self, EcfDependence};
use wpp_deps::{AccessKind, AtReader, Dependence, Instance, MemoryDb, Writer};
use wpp_grammar::expand::{Expander, Flattened};
use wpp_trace::file::Ahead;
use wpp_trace::Event;

/// Subcommands of `wpp deps`.
#[derive(clap::Subcommand)]
pub enum Command {
    /// List every dynamic dependence (store instance → load instance), in execution order of
    /// the loads. Instances count from 1 per instruction; `external` means the bytes were last
    /// written outside the program (the loader, a library, a fresh heap block; address traces
    /// only). An address trace of several threads names each load's thread, and the store's
    /// where it is another (a cross-thread dependence).
    List {
        /// The address trace (`PROGRAM.PID.at`), or an eWPP (the trace or `.wpp` of a
        /// `--mode ewpp` run).
        file: PathBuf,
        /// Only this load: a memory-instruction id (`1620` or `#1620`, as listings print it),
        /// `FILE:LINE` (`:LINE` for any file), or a function (its every load).
        #[arg(long)]
        load: Option<String>,
        /// Print JSON Lines (one object per dependence).
        #[arg(long)]
        json: bool,
    },
    /// Counts: loads, stores, dependences, external reads, static pairs exercised (an eWPP:
    /// events, dependences, pairs not exercised, the checks' comparisons).
    Stats {
        /// The address trace, or an eWPP.
        file: PathBuf,
        /// Replay only the first N accesses (every chunk is still read and checked to the end
        /// record): a quick check of a large recording.
        #[arg(long)]
        prefix: Option<u64>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// The filtering phase (Tallam–Gupta §3.1): classify every exercised (store, load) pair
    /// as fully free, partially free, last-instance (fixed-cost) or any-instance
    /// (variable-cost), print Table VIII's distribution per function and in total, and
    /// optionally save the report (versioned, checksummed) for a collection build. Given the
    /// report of a `--mode ewpp-filter` run, prints its distribution (in total only).
    Filter {
        /// The address trace, or a report.
        file: PathBuf,
        /// Write the report here.
        #[arg(short, long)]
        output: Option<PathBuf>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// The extended control-flow trace (eCF, Tallam–Gupta §2–3) the collection run
    /// (`--mode ewpp`) would record, from a `trace-addr` recording: the block trace with the
    /// dependence checks' control flow as block events of a synthetic function `__wpp_check`
    /// (`wpp_deps::ecf`), and the memory table, so `wpp deps` reads it like an eWPP. Recovers
    /// the dependences from it (§5) and fails unless they equal the address trace's; prints
    /// the checks (Table IX).
    Ecf {
        /// The address trace (`PROGRAM.PID.at`).
        file: PathBuf,
        /// Its block trace: the run's `PROGRAM.PID.wpp` (one thread), or its raw trace
        /// (`WPP_RAW=1`: `PROGRAM.PID.trace`).
        trace: PathBuf,
        /// Write the eCF here (a binary block trace).
        #[arg(short, long)]
        output: PathBuf,
        /// The filtering run's report (`wpp deps filter -o`); default: this recording's own.
        #[arg(long)]
        exercised: Option<PathBuf>,
    },
    /// Dependence chains from a load (Figure 21's RecoverChain/ChainFreq): load → the store
    /// it read → a load of that store's statement → … , each chain with the number of the
    /// load's instances that start it. Every chain of at most `--depth` dependences is listed,
    /// each prefix of a longer one too (a chain in its own right), and a statement that uses
    /// several loads branches: so one instance starts several chains, and the counts of a
    /// load's chains add up to more than its instances. Through a block copy (`memcpy`,
    /// `memmove`) a chain from an address trace goes on only to the writers of the bytes the
    /// load took from the copy (exact for loads of up to 64 bytes; wider, from their first
    /// such byte to the last); from an eWPP, which has no addresses, to the writers of every
    /// byte copied. Holds only the dependences of the
    /// loads the chains reach: from an address trace, read once per level of the chains;
    /// from a `.wpp` eWPP, recovered on its rules; from a raw eWPP trace, once per level.
    Chain {
        /// The address trace, or an eWPP.
        file: PathBuf,
        /// The load: a memory-instruction id (`1620` or `#1620`), `FILE:LINE`, or a function
        /// (its every load).
        #[arg(long)]
        load: String,
        /// Longest chain, in dependences (at least 1).
        #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
        depth: u32,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

/// Runs `wpp deps`.
pub fn run(cmd: Command) -> anyhow::Result<()> {
    match cmd {
        Command::List { file, load, json } => list(&file, load.as_deref(), json),
        Command::Stats { file, prefix, json } => stats(&file, prefix, json),
        Command::Filter { file, output, json } => filter(&file, output.as_deref(), json),
        Command::Ecf {
            file,
            trace,
            output,
            exercised,
        } => ecf(&file, &trace, &output, exercised.as_deref()),
        Command::Chain {
            file,
            load,
            depth,
            json,
        } => chain(&file, &load, depth as usize, json),
    }
}

fn open(file: &Path) -> anyhow::Result<AtReader<std::io::BufReader<std::fs::File>>> {
    // Missing, empty and directory inputs get the input layer's one-line errors.
    let kind = crate::input::sniff(file)?;
    if kind != crate::input::Kind::AddressTrace {
        anyhow::bail!(
            "{} is {}, not an address trace: `wpp deps` reads the PROGRAM.PID.at file a \
             `wpp cc --mode trace-addr` program writes beside its trace; {}",
            file.display(),
            kind.with_article(),
            kind.readers()
        );
    }
    let r = AtReader::open(file)?.allow_truncated();
    if let Some(e) = r.truncation() {
        // Once: `wpp deps ecf` reads its address trace three times.
        static WARNED: std::sync::Once = std::sync::Once::new();
        WARNED.call_once(|| eprintln!("wpp: warning: {e}; using the accesses before it"));
    }
    Ok(r)
}

/// What `wpp deps list|stats|chain` read.
enum Input {
    /// An address trace.
    At(Box<AtReader<std::io::BufReader<std::fs::File>>>),
    /// An eWPP: its memory database and its eCF.
    Ecf(MemoryDb, Box<Ecf>),
}

/// Where an eWPP's events come from: streamed, never materialized (an eCF holds some ten
/// events per executed load).
// One per command, and always boxed whole (`Input::Ecf`): the variants' sizes do not matter.
#[allow(clippy::large_enum_variant)]
enum Ecf {
    Trace(wpp_trace::TraceReader),
    Wpp(wpp_grammar::file::WppFile),
}

impl Input {
    fn db(&self) -> &MemoryDb {
        match self {
            Input::At(r) => r.db(),
            Input::Ecf(db, _) => db,
        }
    }
}

/// Opens an address trace, or an eWPP (a trace or `.wpp` recorded with `--mode ewpp`).
fn input(file: &Path) -> anyhow::Result<Input> {
    use crate::input::Kind;
    if wpp_deps::at::is_at_file(file) || !file.exists() {
        return Ok(Input::At(Box::new(open(file)?)));
    }
    let shown = file.display();
    let (program, source) = match crate::input::sniff(file)? {
        Kind::Wpp => {
            let wpp = crate::input::read_wpp(file, "deps")?;
            (wpp.program.clone(), Ecf::Wpp(wpp))
        }
        Kind::Trace | Kind::TextTrace => {
            let r = wpp_paths::trace::open(file).with_context(|| format!("cannot read {shown}"))?;
            (r.program().clone(), Ecf::Trace(r))
        }
        k => anyhow::bail!(
            "{shown} is {}, neither an address trace nor an eWPP: `wpp deps` reads the \
             PROGRAM.PID.at of a `--mode trace-addr` run or the trace or .wpp of a \
             `--mode ewpp` run; {}",
            k.with_article(),
            k.readers()
        ),
    };
    // The mode first: a block trace of several threads is no eWPP with a thread too many.
    let Some(db) = ecf::memory_db(&program).map_err(|e| anyhow::anyhow!("{shown}: {e}"))? else {
        anyhow::bail!(
            "{shown} records no memory dependences: record with `--mode ewpp` (an eWPP) or \
             `--mode trace-addr` (then give `wpp deps` its PROGRAM.PID.at)"
        )
    };
    if let Ecf::Wpp(wpp) = &source {
        if wpp.grammar.starts().len() > 1 {
            anyhow::bail!("{shown} has several threads; an eWPP has one");
        }
    }
    Ok(Input::Ecf(db, Box::new(source)))
}

/// The events of a trace, one by one, each shown to `inspect` first; a read error ends them
/// and is kept for the caller.
struct TraceEvents<F> {
    reader: wpp_trace::file::ReadAhead,
    error: Option<wpp_trace::TraceError>,
    inspect: F,
}

impl<F: FnMut(Event)> Iterator for TraceEvents<F> {
    type Item = Event;
    // Always: the recovery's loop pulls every event through here, and a call per event was
    // a fifth of its thread's time.
    #[inline(always)]
    fn next(&mut self) -> Option<Event> {
        match self.reader.next()? {
            Ok(e) => {
                (self.inspect)(e);
                Some(e)
            }
            Err(e) => {
                self.error = Some(e);
                None
            }
        }
    }
}

/// Events an expanding thread sends at once.
const EXPANDED_BATCH: usize = 1 << 14;

/// The events of a grammar's first start rule, expanded on a thread of their own in batches.
fn expand_ahead(wpp: wpp_grammar::file::WppFile) -> Ahead<Vec<Event>> {
    Ahead::spawn(move |send| {
        let alphabet = wpp.alphabet.events();
        let Some(start) = wpp.grammar.starts().first() else {
            return;
        };
        let flat = Flattened::new(&wpp.grammar);
        let mut expander = Expander::flattened(&flat, start.rule);
        loop {
            let mut batch = Vec::with_capacity(EXPANDED_BATCH);
            expander.fill(&mut batch, EXPANDED_BATCH, |t| alphabet[t.index()]);
            if batch.is_empty() || send.send(batch).is_err() {
                return;
            }
        }
    })
}

/// The events of [`expand_ahead`]'s batches, one by one, each shown to `inspect` first.
struct Expanded<F> {
    batches: Ahead<Vec<Event>>,
    current: Vec<Event>,
    pos: usize,
    inspect: F,
}

impl<F: FnMut(Event)> Iterator for Expanded<F> {
    type Item = Event;
    // Always, as `TraceEvents::next`.
    #[inline(always)]
    fn next(&mut self) -> Option<Event> {
        let &e = match self.current.get(self.pos) {
            Some(e) => e,
            None => self.refill()?,
        };
        self.pos += 1;
        (self.inspect)(e);
        Some(e)
    }
}

impl<F> Expanded<F> {
    /// The first event of the next non-empty batch, if any.
    #[cold]
    #[inline(never)]
    fn refill(&mut self) -> Option<&Event> {
        self.current = self.batches.find(|b| !b.is_empty())?;
        self.pos = 0;
        self.current.first()
    }
}

/// Recovers an eWPP's dependences on program stores (§5), streaming its events through
/// `inspect` first; returns each memory instruction's block executions.
fn ecf_recover(
    file: &Path,
    db: &MemoryDb,
    source: Box<Ecf>,
    mut inspect: impl FnMut(Event),
    on_dep: impl FnMut(EcfDependence),
) -> anyhow::Result<Vec<u64>> {
    let shown = file.display();
    match *source {
        Ecf::Trace(reader) => {
            let mut events = TraceEvents {
                // Decoding on the other core: it is half of the recovery's work.
                reader: reader.allow_truncated(true).read_ahead(),
                error: None,
                inspect: &mut inspect,
            };
            let recovered = ecf::recover_events(db, events.by_ref(), on_dep);
            if let Some(e) = events.error {
                return Err(anyhow::Error::from(e).context(format!("cannot read {shown}")));
            }
            let truncation = events.reader.truncation();
            crate::input::warn_truncated(file, truncation);
            let r = recovered.with_context(|| format!("{shown}"))?;
            match r.ends_in_check {
                // A recording cut short (SIGKILL) may end inside a check: every dependence
                // before it was recovered.
                Some(event) if truncation.is_none() => Err(anyhow::anyhow!(
                    "{shown}: {}",
                    ecf::EcfError::EndsInCheck { event }
                )),
                _ => Ok(r.instances),
            }
        }
        Ecf::Wpp(wpp) => {
            let mut events = Expanded {
                // Expanding on the other core: it was half of the recovery's time.
                batches: expand_ahead(wpp),
                current: Vec::new(),
                pos: 0,
                inspect: &mut inspect,
            };
            let r = ecf::recover_events(db, events.by_ref(), on_dep)
                .with_context(|| format!("{shown}"))?;
            match r.ends_in_check {
                Some(event) => Err(anyhow::anyhow!(
                    "{shown}: {}",
                    ecf::EcfError::EndsInCheck { event }
                )),
                None => Ok(r.instances),
            }
        }
    }
}

/// The load ids `spec` names: an id (`#` before it, as listings print it, or not), or
/// `FILE:LINE`.
fn loads(db: &MemoryDb, spec: &str) -> anyhow::Result<Vec<u32>> {
    if let Ok(id) = spec.strip_prefix('#').unwrap_or(spec).parse::<u32>() {
        match db.get(id) {
            Some(i) if i.kind == AccessKind::Load => return Ok(vec![id]),
            Some(_) => anyhow::bail!(
                "memory instruction {id} ({}) is not a load",
                db.location(id)
            ),
            None => anyhow::bail!(
                "no memory instruction {id} (the program has {})",
                db.instructions.len()
            ),
        }
    }
    let Some((file, line)) = spec
        .rsplit_once(':')
        .and_then(|(f, l)| Some((f, l.parse::<u32>().ok()?)))
    else {
        return function_loads(db, spec);
    };
    let ids = db.at_line(file, line, AccessKind::Load);
    if ids.is_empty() {
        anyhow::bail!("--load {spec}: {}", no_load(db, file, line));
    }
    Ok(ids)
}

/// The loads of the function named `name` (trial 34 G13: narrowing a listing to a function).
fn function_loads(db: &MemoryDb, name: &str) -> anyhow::Result<Vec<u32>> {
    let functions = &db.program.functions;
    let Some(f) = functions.iter().position(|f| f.name == name) else {
        let near = crate::util::nearest(name, functions.iter().map(|f| f.name.as_str()));
        let hint = match &near[..] {
            [] => String::new(),
            near => format!("; did you mean `{}`?", near.join("`, `")),
        };
        anyhow::bail!("--load {name}: expected an id, FILE:LINE or a function's name{hint}");
    };
    let ids: Vec<u32> = (0..db.instructions.len() as u32)
        .filter(|&id| {
            let i = &db.instructions[id as usize];
            i.kind == AccessKind::Load && i.function as usize == f
        })
        .collect();
    anyhow::ensure!(!ids.is_empty(), "--load {name}: the function has no load");
    Ok(ids)
}

/// Why no load is at `file`'s `line`: no source file of the program ends with `file` (the
/// nearest names suggested), or the line has only stores, or no memory instruction (the
/// nearest lines with loads named), or the program has no lines at all.
fn no_load(db: &MemoryDb, file: &str, line: u32) -> String {
    let stores = db.at_line(file, line, AccessKind::Store);
    if !stores.is_empty() {
        let shown: Vec<String> = stores
            .iter()
            .map(|&id| format!("#{id} {}", db.location(id)))
            .collect();
        return format!("line {line} has stores only: {}", shown.join(", "));
    }
    let lines = db.lines(file, AccessKind::Load);
    if !lines.is_empty() {
        let before = lines.iter().rev().find(|&&l| l < line);
        let after = lines.iter().find(|&&l| l > line);
        let near: Vec<String> = before
            .into_iter()
            .chain(after)
            .map(u32::to_string)
            .collect();
        return format!(
            "no load at line {line}; the nearest lines with loads are {}",
            near.join(" and ")
        );
    }
    let functions = db
        .program
        .functions
        .iter()
        .filter_map(|f| f.file.as_deref());
    let files: std::collections::BTreeSet<&str> = functions
        .chain(db.files.iter().map(String::as_str))
        .collect();
    if file.is_empty() || files.iter().any(|f| f.ends_with(file)) {
        return "no load of the file has a source line (was the program compiled with -g0?)".into();
    }
    let names = files.iter().map(|f| f.rsplit('/').next().unwrap_or(f));
    let hint = match &crate::util::nearest(file, names)[..] {
        [] => format!(
            "none of its {} source files has a name like it",
            files.len()
        ),
        near => format!("did you mean `{}`?", near.join("`, `")),
    };
    format!("no source file of the program ends with `{file}`; {hint}")
}

/// One end of a dependence, for output.
#[derive(Serialize)]
struct End {
    id: u32,
    instance: u64,
    function: String,
    /// The source file of the line: the function's, or the one its code was inlined from.
    #[serde(skip_serializing_if = "Option::is_none")]
    file: Option<String>,
    line: u32,
    column: u32,
    what: String,
    /// The file of the line when it is not the function's.
    #[serde(skip)]
    inlined_from: Option<String>,
}

fn end(db: &MemoryDb, i: Instance) -> End {
    let m = db.get(i.id);
    End {
        id: i.id,
        instance: i.n,
        function: m
            .and_then(|m| db.program.functions.get(m.function as usize))
            .map_or_else(String::new, |f| f.name.clone()),
        file: db.file(i.id).map(str::to_owned),
        line: m.map_or(0, |m| m.line),
        column: m.map_or(0, |m| m.column),
        what: m.map_or_else(String::new, |m| m.what.clone()),
        inlined_from: db.inlined_from(i.id).map(str::to_owned),
    }
}

#[derive(Serialize)]
struct DepOut {
    load: End,
    /// `None`: external.
    store: Option<End>,
    /// The first byte the store wrote, from the load's address (address traces only).
    #[serde(skip_serializing_if = "Option::is_none")]
    offset: Option<u64>,
    /// How many of the load's bytes it wrote (address traces only).
    #[serde(skip_serializing_if = "Option::is_none")]
    bytes: Option<u64>,
    /// One past its last byte (address traces only): more than `offset + bytes` where other
    /// writers' bytes lie between its own.
    #[serde(skip_serializing_if = "Option::is_none")]
    end: Option<u64>,
    /// Its bytes as `[offset, len]` runs, where they are not one run and the load's first 64
    /// bytes hold them (address traces only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pieces: Option<Vec<(u64, u64)>>,
    /// The filtering run did not exercise the pair (eWPPs only).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    unexpected: bool,
    /// The load's thread and, for a store, the store's (address traces of several threads).
    #[serde(skip_serializing_if = "Option::is_none")]
    thread: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    store_thread: Option<u32>,
}

/// Byte runs as `+0, +2 to +3`.
fn show_pieces(pieces: &[(u64, u64)]) -> String {
    let shown: Vec<String> = pieces
        .iter()
        .map(|&(at, len)| match len {
            1 => format!("+{at}"),
            _ => format!("+{at} to +{}", at + len - 1),
        })
        .collect();
    shown.join(", ")
}

fn show(e: &End) -> String {
    use wpp_deps::memdb::position;
    let at = position(&e.function, e.inlined_from.as_deref(), e.line, e.column);
    format!("#{}({}) {at} {}", e.id, e.instance, e.what)
}

fn list(file: &Path, load: Option<&str>, json: bool) -> anyhow::Result<()> {
    let input = input(file)?;
    let db = input.db().clone();
    let only = load.map(|s| loads(&db, s)).transpose()?;
    let is_ecf = matches!(input, Input::Ecf(..));
    // A function's loads may be many: a lookup per dependence, not a search.
    let wanted: Option<Vec<bool>> = only.as_ref().map(|ids| {
        let mut w = vec![false; db.instructions.len()];
        ids.iter().for_each(|&id| w[id as usize] = true);
        w
    });
    let out = std::io::stdout();
    let mut out = std::io::BufWriter::new(out.lock());
    let mut err = Ok(());
    let mut shown = 0u64;
    let mut print = |o: DepOut| {
        let unwanted = wanted.as_ref().is_some_and(|w| !w[o.load.id as usize]);
        if err.is_err() || unwanted {
            return;
        }
        shown += 1;
        err = if json {
            serde_json::to_writer(&mut out, &o)
                .map_err(anyhow::Error::from)
                .and_then(|_| Ok(writeln!(out)?))
        } else {
            let from = o.store.as_ref().map_or("external".to_string(), show);
            let bytes = match (o.bytes, o.offset, o.end, &o.pieces) {
                (Some(n), Some(at), Some(end), _) if end - at == n => {
                    format!(" [{n} bytes at +{at}]")
                }
                (Some(n), _, _, Some(pieces)) => format!(" [{n} bytes: {}]", show_pieces(pieces)),
                (Some(n), Some(at), Some(end), None) => {
                    format!(
                        " [{n} bytes between +{at} and +{}, with others' between]",
                        end - 1
                    )
                }
                _ => String::new(),
            };
            let unexpected = match o.unexpected {
                true => " (not exercised by the filtering run)",
                false => "",
            };
            let threads = match (o.thread, o.store_thread) {
                (Some(l), Some(s)) if l != s => format!(" (thread {l}, written by thread {s})"),
                (Some(l), _) => format!(" (thread {l})"),
                (None, _) => String::new(),
            };
            writeln!(
                out,
                "{} <- {from}{bytes}{threads}{unexpected}",
                show(&o.load)
            )
            .map_err(anyhow::Error::from)
        };
        // A reader that went away (`| head`) wants no more: end here rather than recover the
        // rest of the run for nobody (the recovery walks have no early exit).
        if err.as_ref().is_err_and(crate::is_broken_pipe) {
            std::process::exit(0);
        }
    };
    match input {
        Input::At(r) => {
            // Threads are named where there are several.
            let threads = r.threads() > 1;
            wpp_deps::recover(&db, Ahead::new(*r), |d: &Dependence| {
                print(DepOut {
                    load: end(&db, d.load),
                    store: match d.store {
                        Writer::Store(s) => Some(end(&db, s)),
                        Writer::External => None,
                    },
                    offset: Some(d.offset),
                    bytes: Some(d.bytes),
                    end: Some(d.end),
                    pieces: d.pieces().filter(|p| p.len() > 1),
                    unexpected: false,
                    thread: threads.then_some(d.thread),
                    store_thread: d.store_thread.filter(|_| threads),
                })
            })?;
        }
        Input::Ecf(_, source) => {
            let dep = |d: EcfDependence| DepOut {
                load: end(&db, d.load),
                store: Some(end(&db, d.store)),
                offset: None,
                bytes: None,
                end: None,
                pieces: None,
                unexpected: d.unexpected,
                thread: None,
                store_thread: None,
            };
            match (*source, &only) {
                // A few loads of a `.wpp`: only the rules that hold their checks are expanded.
                (Ecf::Wpp(wpp), Some(ids)) => {
                    // An eWPP without events has no start rule, and no dependences.
                    if let Some(start) = wpp.grammar.starts().first() {
                        let (g, alphabet) = (&wpp.grammar, wpp.alphabet.events());
                        ecf::rules::recover_loads(&db, g, alphabet, start.rule, ids, |d| {
                            print(dep(d))
                        })
                        .with_context(|| format!("{}", file.display()))?;
                    }
                }
                (source, _) => {
                    ecf_recover(file, &db, Box::new(source), drop, |d| print(dep(d)))?;
                }
            }
        }
    }
    err?;
    out.flush()?;
    if let (Some(load), 0) = (load, shown) {
        // An empty answer is an answer, but say why it may be (trial 35 H12).
        let why = match is_ecf {
            true => {
                "an eWPP holds the dependences on the program's own stores: the load did not \
                 run, or read only bytes written outside the instrumented code (libc, a library \
                 loaded after the start; an address trace of the run lists those as external)"
            }
            false => "the load did not run",
        };
        eprintln!("wpp: no dependence of {load} was recorded: {why}");
    }
    Ok(())
}

/// `wpp deps stats` of an eWPP.
#[derive(Serialize)]
struct EcfStats {
    memory_instructions: usize,
    events: usize,
    check_events: usize,
    dependences: usize,
    unexpected: usize,
    fixed_cost: usize,
    predicted: usize,
    comparisons: u64,
    linear: u64,
}

fn ecf_stats(file: &Path, db: &MemoryDb, source: Box<Ecf>, json: bool) -> anyhow::Result<()> {
    let check = ecf::check_function(db);
    let (mut events, mut check_events, mut inside) = (0usize, 0usize, false);
    let count = |e: Event| {
        events += 1;
        let was = inside;
        match e {
            Event::Enter(f) if f == check => inside = true,
            Event::Leave if inside => inside = false,
            _ => {}
        }
        check_events += usize::from(inside || was);
    };
    let (mut dependences, mut unexpected, mut fixed_cost, mut predicted) = (0, 0, 0, 0);
    let (mut comparisons, mut linear) = (0, 0);
    ecf_recover(file, db, source, count, |d| {
        dependences += 1;
        unexpected += usize::from(d.unexpected);
        fixed_cost += usize::from(d.found == ecf::Found::Last);
        predicted += usize::from(d.found == ecf::Found::Predicted);
        comparisons += u64::from(d.comparisons);
        linear += d.linear;
    })?;
    let s = EcfStats {
        memory_instructions: db.instructions.len(),
        events,
        check_events,
        dependences,
        unexpected,
        fixed_cost,
        predicted,
        comparisons,
        linear,
    };
    if json {
        return crate::util::print_json(&s);
    }
    let mut out = std::io::stdout().lock();
    writeln!(out, "memory instructions  {}", s.memory_instructions)?;
    writeln!(
        out,
        "eCF events           {} ({} in checks)",
        s.events, s.check_events
    )?;
    writeln!(out, "dependences          {}", s.dependences)?;
    writeln!(out, "fixed-cost           {}", s.fixed_cost)?;
    writeln!(
        out,
        "predicted            {} (near an instance the pair or its function's loads read last)",
        s.predicted
    )?;
    writeln!(out, "not exercised        {}", s.unexpected)?;
    let per = |n: u64| n as f64 / s.dependences.max(1) as f64;
    writeln!(
        out,
        "comparisons          {} ({:.2} per dependence; a linear scan: {:.1}; Table IX)",
        s.comparisons,
        per(s.comparisons),
        per(s.linear)
    )?;
    Ok(())
}

fn stats(file: &Path, prefix: Option<u64>, json: bool) -> anyhow::Result<()> {
    let r = match input(file)? {
        Input::At(r) => r,
        Input::Ecf(..) if prefix.is_some() => {
            anyhow::bail!("--prefix applies to address traces, not to eWPPs")
        }
        Input::Ecf(db, source) => return ecf_stats(file, &db, source, json),
    };
    let db = r.db().clone();
    let mut left = prefix.unwrap_or(u64::MAX);
    // Decoding (inflate, varints) on the other core: half of the recovery's work.
    let runs = Ahead::new(*r).map(|run| {
        run.map(|mut run| {
            let keep = left.min(run.accesses.len() as u64);
            run.accesses.truncate(keep as usize);
            left -= keep;
            run
        })
    });
    let s = wpp_deps::recover(&db, runs, |_| {})?;
    if json {
        return crate::util::print_json(&s);
    }
    let mut out = std::io::stdout().lock();
    writeln!(out, "memory instructions  {}", db.instructions.len())?;
    writeln!(out, "load instances       {}", s.loads)?;
    writeln!(out, "store instances      {}", s.stores)?;
    writeln!(out, "library writes       {}", s.clobbers)?;
    writeln!(out, "dependences          {}", s.dependences)?;
    writeln!(out, "external reads       {}", s.external)?;
    writeln!(out, "multi-writer loads   {}", s.multi_writer_loads)?;
    writeln!(out, "static pairs         {}", s.pairs)?;
    if s.threads > 1 {
        writeln!(out, "threads              {}", s.threads)?;
        writeln!(out, "cross-thread deps    {}", s.cross_thread)?;
    }
    Ok(())
}

#[derive(Serialize)]
struct ChainOut {
    load: u32,
    /// Alternating store and load ids, ending with a store.
    chain: Vec<u32>,
    locations: Vec<String>,
    frequency: u64,
}

fn chain(file: &Path, load: &str, depth: usize, json: bool) -> anyhow::Result<()> {
    let input = input(file)?;
    let db = input.db().clone();
    let ids = loads(&db, load)?;
    let index = match input {
        Input::At(r) => {
            // One replay per level of the chains, each holding only what they reach.
            let mut first = Some(*r);
            let open = || match first.take() {
                Some(r) => Ok(Ahead::new(r)),
                None => Ok(Ahead::new(AtReader::open(file)?.allow_truncated())),
            };
            ChainIndex::build_for(&db, &ids, depth, open)?
        }
        Input::Ecf(_, source) => match *source {
            // A `.wpp`: only the dependences of the loads the chains reach, from its rules.
            Ecf::Wpp(wpp) => match wpp.grammar.starts().first() {
                Some(start) => {
                    let (g, alphabet) = (&wpp.grammar, wpp.alphabet.events());
                    ecf::rules::chain_index(&db, g, alphabet, start.rule, &ids, depth)
                        .with_context(|| format!("{}", file.display()))?
                }
                None => ChainIndex::from_dependences(&db, [], vec![0; db.instructions.len()]),
            },
            // A raw eCF: recovered once per level of the chains, keeping that level's.
            source => {
                let mut first = Some(source);
                ChainIndex::build_for_ecf(&db, &ids, depth, |push| {
                    let source = match first.take() {
                        Some(s) => s,
                        None => match self::input(file)? {
                            Input::Ecf(_, s) => *s,
                            Input::At(_) => anyhow::bail!("{} changed while read", file.display()),
                        },
                    };
                    ecf_recover(file, &db, Box::new(source), drop, |d| push(d.load, d.store))
                })?
            }
        },
    };
    let mut all = Vec::new();
    for u0 in ids {
        for (chain, frequency) in index.chains(u0, depth) {
            let locations = std::iter::once(u0)
                .chain(chain.iter().copied())
                .map(|id| db.location(id))
                .collect();
            all.push(ChainOut {
                load: u0,
                chain,
                locations,
                frequency,
            });
        }
    }
    if json {
        return crate::util::print_json(&all);
    }
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for c in &all {
        // Each end with its id, as `wpp deps list` shows them: two stores may share a line.
        let ids = std::iter::once(c.load).chain(c.chain.iter().copied());
        let ends: Vec<String> = ids
            .zip(&c.locations)
            .map(|(id, at)| format!("#{id} {at}"))
            .collect();
        writeln!(out, "{:>10}  {}", c.frequency, ends.join(" <- "))?;
    }
    out.flush()?;
    Ok(())
}

#[derive(Serialize)]
struct FilterOut {
    classes: [wpp_deps::filter::Class; 4],
    functions: std::collections::BTreeMap<String, wpp_deps::filter::Distribution>,
    total: wpp_deps::filter::Distribution,
}

/// The widest `wpp deps filter` pads its function column to.
const FILTER_NAME_WIDTH: usize = 48;

fn filter(file: &Path, output: Option<&Path>, json: bool) -> anyhow::Result<()> {
    use wpp_deps::filter::{classify, Class, FilterReport};
    let is_report = crate::input::sniff(file)? == crate::input::Kind::DependenceReport;
    // A report (`--mode ewpp-filter`) names no functions: its distribution is the total.
    let (db, report) = match is_report {
        true => {
            let bytes =
                std::fs::read(file).with_context(|| format!("cannot read {}", file.display()))?;
            let report = FilterReport::from_bytes(&bytes, &file.display().to_string())?;
            (MemoryDb::default(), report)
        }
        false => {
            let r = open(file)?;
            let db = r.db().clone();
            let report = classify(&db, r)?;
            (db, report)
        }
    };
    if let Some(o) = output {
        std::fs::write(o, report.to_bytes())
            .with_context(|| format!("cannot write {}", o.display()))?;
    }
    let (mut functions, total) = report.distribution(&db);
    if is_report {
        // Its loads are ids of a program it does not hold: the total is all it can say.
        functions.clear();
    }
    if json {
        let classes = Class::ALL;
        return crate::util::print_json(&FilterOut {
            classes,
            functions,
            total,
        });
    }
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    // As wide as the longest name up to a cap: a longer name (C++ ones run to hundreds of
    // characters) overflows its own row rather than pad every row to its width.
    let w = functions
        .keys()
        .map(|f| f.chars().count())
        .max()
        .unwrap_or(0)
        .clamp(24, FILTER_NAME_WIDTH);
    writeln!(
        out,
        "{:<w$} {:>8} {:>8} {:>8} {:>8} {:>8}   (dynamic dependences; pairs per class)",
        "function", "deps", "fully", "partly", "last", "any"
    )?;
    for (f, d) in functions.iter().chain([(&"total".to_string(), &total)]) {
        let all: u64 = d.occurrences.iter().sum::<u64>().max(1);
        let pct = |i: usize| 100.0 * d.occurrences[i] as f64 / all as f64;
        writeln!(
            out,
            "{f:<w$} {:>8} {:>7.1}% {:>7.1}% {:>7.1}% {:>7.1}%   pairs {:?}",
            d.occurrences.iter().sum::<u64>(),
            pct(0),
            pct(1),
            pct(2),
            pct(3),
            d.pairs
        )?;
    }
    out.flush()?;
    Ok(())
}

/// The program and events of the block trace `wpp deps ecf` reads: a raw trace, or a `.wpp`
/// of one thread, expanded.
fn block_trace(trace: &Path) -> anyhow::Result<(wpp_trace::ProgramDb, Vec<Event>)> {
    use crate::input::Kind;
    let kinds = [Kind::Trace, Kind::TextTrace, Kind::Wpp];
    if crate::input::expect(trace, &kinds, "deps ecf")? != Kind::Wpp {
        return wpp_trace::file::read_events(trace)
            .with_context(|| format!("cannot read the block trace {}", trace.display()));
    }
    let wpp = crate::input::read_wpp(trace, "deps ecf")?;
    let [start] = wpp.grammar.starts() else {
        anyhow::bail!(
            "{} has {}; an eCF is built from the block trace of one thread",
            trace.display(),
            crate::util::threads(wpp.grammar.starts().len())
        )
    };
    let alphabet = wpp.alphabet.events();
    let flat = Flattened::new(&wpp.grammar);
    let events = Expander::flattened(&flat, start.rule)
        .map(|t| alphabet[t.index()])
        .collect();
    Ok((wpp.program.clone(), events))
}

/// How a block trace's functions differ from its address trace's (both list the build's
/// functions in its order), if they do.
fn different_functions(trace: &wpp_trace::ProgramDb, at: &wpp_trace::ProgramDb) -> Option<String> {
    let (t, a) = (&trace.functions, &at.functions);
    if let Some(i) = t.iter().zip(a).position(|(x, y)| x.name != y.name) {
        return Some(format!(
            "function {i} is `{}` in one and `{}` in the other",
            t[i].name, a[i].name
        ));
    }
    (t.len() != a.len()).then(|| format!("{} functions and {}", t.len(), a.len()))
}

fn ecf(file: &Path, trace: &Path, output: &Path, exercised: Option<&Path>) -> anyhow::Result<()> {
    use wpp_deps::ecf;
    let db = open(file)?.db().clone();
    let report = match exercised {
        Some(p) => {
            let bytes = std::fs::read(p).with_context(|| format!("cannot read {}", p.display()))?;
            let r = wpp_deps::filter::FilterReport::from_bytes(&bytes, &p.display().to_string())?;
            if r.program_crc != wpp_deps::filter::program_crc(&db) {
                anyhow::bail!("{} is the report of another program", p.display());
            }
            r
        }
        None => wpp_deps::filter::classify(&db, open(file)?)?,
    };
    let (mut program, events) = block_trace(trace)?;
    if let Some(why) = different_functions(&program, &db.program) {
        anyhow::bail!(
            "{} and {} are recordings of different programs or builds: {why}",
            trace.display(),
            file.display()
        );
    }
    let built = ecf::build(&db, &events, open(file)?, &report)
        .with_context(|| format!("{} and {}", trace.display(), file.display()))?;
    let mut want = std::collections::BTreeSet::new();
    wpp_deps::recover(&db, open(file)?, |d| {
        if let Writer::Store(s) = d.store {
            want.insert((s, d.load));
        }
    })?;
    let mut got = std::collections::BTreeSet::new();
    ecf::recover(&db, &built.events, |d| {
        got.insert((d.store, d.load));
    })?;
    if got != want {
        anyhow::bail!(
            "recovery from the eCF gives {} dependences, the address trace {}: a defect",
            got.len(),
            want.len()
        );
    }
    let check = ecf::check_function(&db).index();
    if program.functions.len() > check {
        anyhow::bail!(
            "{} names {} functions, the address trace's program {check}",
            trace.display(),
            program.functions.len()
        );
    }
    program.functions.resize_with(check, Default::default);
    ecf::attach(&mut program, &db);
    let mut w = wpp_trace::file::create(output, wpp_trace::Format::Binary, &program)?;
    for &e in &built.events {
        w.push(e)?;
    }
    w.finish()?;
    let s = &built.stats;
    let per = |n: u64| n as f64 / s.dependences.max(1) as f64;
    let mut out = std::io::stdout().lock();
    writeln!(out,
        "eCF: {} events ({} in the block trace); {} dependences checked ({} fixed-cost, {} predicted, {} unexpected), recovered equal to the address trace's",
        built.events.len(),
        events.len(),
        s.dependences,
        s.fixed,
        s.predicted,
        s.unexpected
    )?;
    writeln!(
        out,
        "checks per dependence (Table IX): binary {:.2} (max {}), linear {:.1}",
        per(s.binary),
        s.max_binary,
        per(s.linear)
    )?;
    Ok(())
}
