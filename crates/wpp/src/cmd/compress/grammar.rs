//! `wpp compress`: a trace into a `.wpp` grammar, streaming the trace through
//! [`TraceCompressor`] (which routes events by thread and interns them). The input may also be a
//! `.wpp`, whose expansion is compressed again (another algorithm, or a smaller grammar than the
//! online recording's).
//!
//! A truncated trace (a recording cut short) is compressed up to its last whole chunk, with a
//! warning naming the byte offset where valid data ends.
//!
//! `--algorithm all` runs every compressor one after another, each streaming the trace
//! from the file again (a mapped file is cheap to re-read; nothing is materialized), prints
//! them side by side, and writes **the smallest `.wpp`** (ties go to the earlier of sequitur,
//! sequitur1, frequency, phrase) to the output; the file records which algorithm built it (`wpp stats`
//! shows it), and the table marks it. Time covers reading the trace, compressing and encoding
//! the `.wpp`, not writing it to disk; it is given as wall-clock seconds and as CPU seconds of
//! the compressing thread, or of the whole process when `--threads` runs several (the stable
//! figure on a shared machine; events/s uses wall-clock).
//!
//! `--threads N` (default: the available cores) cuts the trace into chunks of `--chunk-events`
//! events, compresses them on `N` threads and joins their grammars into one
//! ([`wpp_grammar::parallel`]); `--threads 1` runs the single-threaded compressor, and a trace
//! that fits in one chunk gets its grammar bit for bit.
//! `--segment-events N` (default [`DEFAULT_SEGMENT_EVENTS`]) bounds memory whatever the trace's
//! length: every `N` events the grammar is closed, written to the output and freed
//! ([`wpp_grammar::segment`]); every query reads the segments as one run. A trace of at most
//! `N` events (or `N` = 0) gives one segment, the file it always gave. Each compressor writes
//! its file as it goes (under a temporary name next to the output; the smallest is renamed
//! into place), so time covers writing too.
//! Peak memory is the peak of live heap bytes during the run above those live before it,
//! counted by the binary's global allocator (`heap.rs`); memory-mapped trace pages are not heap
//! and are not counted.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Context;
use indicatif::ProgressBar;
use serde::Serialize;
use wpp_grammar::expand::Expander;
use wpp_grammar::file::SegmentWriter;
use wpp_grammar::file::WppFile;
use wpp_grammar::join::Seams;
use wpp_grammar::parallel::Parallelism;
use wpp_grammar::segment::{SegmentedCompressor, DEFAULT_SEGMENT_EVENTS};
use wpp_grammar::{Algorithm, TraceCompressor};
use wpp_query::matching::partition::index_section;
use wpp_trace::file::{TraceReader, Truncation};
use wpp_trace::output;
use wpp_trace::ProgramDb;

use crate::heap;
use crate::input::{self, Kind};
use crate::util::{event_counter, threads};

/// Which compressor to run, as named on the command line.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Choice {
    /// SEQUITUR (Larus §3.1), online.
    Sequitur,
    /// SEQUITUR(1), one symbol of look-ahead (Larus §3.2), online.
    Sequitur1,
    /// Most frequent digram first (Tallam–Gupta §4.2), offline unless `--window` is given.
    Frequency,
    /// Content-defined phrases, deduplicated, then SEQUITUR over phrase ids: online and
    /// several times faster than SEQUITUR (the runtime's default).
    Phrase,
    /// All four side by side; the smallest `.wpp` is written.
    All,
}

/// Arguments of `wpp compress`.
#[derive(clap::Args)]
pub struct Args {
    /// Input trace (binary or text; detected).
    input: PathBuf,
    /// Output `.wpp` file.
    #[arg(short, long)]
    output: PathBuf,
    /// The compressor. Default: sequitur; with `--smallest`, frequency, whose files are 5–16 %
    /// smaller on one thread (high-entropy, zlib and bzip2 path traces; BENCHMARKS.md,
    /// "Beside the peers").
    #[arg(long, value_enum)]
    algorithm: Option<Choice>,
    /// Frequency only: compress in windows of this many events per thread (bounded memory)
    /// instead of the whole trace at once.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    window: Option<u64>,
    /// Also store the path-matching index over start-rule partitions (Zhang–Gupta scheme 4),
    /// so `wpp match --scheme 4` (and `auto`) can skip partitions without the function.
    #[arg(long)]
    index: bool,
    /// Compression threads: the trace is cut into chunks compressed in parallel and joined
    /// into one grammar (1: the single-threaded compressor; `--window` runs on one thread).
    /// Default: the available cores; with `--smallest`, 1 (chunks cost 4–14 % in size).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=1024))]
    threads: Option<u64>,
    /// Events per chunk when compressing on several threads (a trace that fits in one chunk
    /// gets the single-threaded grammar).
    #[arg(long, default_value_t = wpp_grammar::parallel::DEFAULT_CHUNK_EVENTS as u64,
          value_parser = clap::value_parser!(u64).range(1..))]
    chunk_events: u64,
    /// With several threads: compress the joined start rules again with SEQUITUR, so that
    /// stretches repeated across chunks become rules (serial; on real traces it measured
    /// 0.1 % smaller or less for 15 % more CPU).
    #[arg(long)]
    compress_seams: bool,
    /// zstd level of the `.wpp`'s compressed streams (19: smallest; 3: many times faster to
    /// write, a few percent larger; the recording runtime uses 3). Default: 19 for a grammar
    /// of at most one symbol per 32 events, where it costs little time, else 3 (level 19 took
    /// a fifth of the time on high-entropy traces for 1–2 % of the bytes; BENCHMARKS.md).
    #[arg(long, value_parser = clap::value_parser!(i32).range(1..=22))]
    zstd_level: Option<i32>,
    /// The smallest file, for archives: zstd level 22 and a context-mixing coder of the rule
    /// streams wherever it is smaller (0.66–0.80 × `xz -9` of the trace on high-entropy
    /// traces), but every query then spends seconds per MB of rules reading it. Unless given,
    /// the algorithm is frequency and the threads 1: the smallest grammar too.
    #[arg(long, conflicts_with = "zstd_level")]
    smallest: bool,
    /// Trace events per segment: the grammar is closed, written and freed every this many
    /// events, so memory stays bounded however long the trace (0: one segment, unbounded).
    /// `--index` needs one segment.
    #[arg(long, default_value_t = DEFAULT_SEGMENT_EVENTS)]
    segment_events: u64,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

/// One compressor's result, a row of the report.
#[derive(Serialize)]
struct Row {
    algorithm: &'static str,
    window: Option<u64>,
    /// Compression threads (1 when the single-threaded compressor ran).
    threads_used: usize,
    events: u64,
    threads: usize,
    terminals: usize,
    rules: usize,
    symbols: usize,
    wpp_bytes: u64,
    /// Segments in the file (1: unsegmented).
    segments: u64,
    seconds: f64,
    /// CPU seconds of the compressing thread (of the process, worker threads included, when
    /// several compress), where the OS says (Linux): on a loaded machine the stable figure.
    cpu_seconds: Option<f64>,
    peak_heap_bytes: usize,
    events_per_sec: f64,
    written: bool,
}

/// What `wpp compress` prints.
#[derive(Serialize)]
struct Report {
    input: String,
    output: String,
    /// Where the input was found cut short, if it was.
    truncated_at: Option<u64>,
    runs: Vec<Row>,
}

/// One compressor's run: its report row and where its `.wpp` was written.
struct Run {
    row: Row,
    written: PathBuf,
    truncation: Option<Truncation>,
}

/// How to compress: the options of `wpp compress` that every algorithm shares.
struct Settings {
    window: Option<u64>,
    parallelism: Parallelism,
    index: bool,
    /// `None`: each grammar's [`wpp_grammar::file::balanced_level`].
    zstd_level: Option<i32>,
    segment_events: u64,
}

impl Settings {
    fn new(args: &Args) -> Settings {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let default = if args.smallest { 1 } else { cores };
        let threads = args.threads.map_or(default, |t| t as usize);
        Settings {
            window: args.window,
            parallelism: Parallelism {
                threads: if args.window.is_some() { 1 } else { threads },
                chunk_events: usize::try_from(args.chunk_events).unwrap_or(usize::MAX),
                seams: if args.compress_seams {
                    Seams::Compressed
                } else {
                    Seams::Kept
                },
            },
            index: args.index,
            zstd_level: match args.smallest {
                true => Some(wpp_grammar::file::SMALLEST_LEVEL),
                false => args.zstd_level,
            },
            segment_events: args.segment_events,
        }
    }
}

/// Streams the trace at `input` through `algorithm` into the file `output`.
fn compress_once(
    input: &Path,
    output: &Path,
    algorithm: Algorithm,
    settings: &Settings,
) -> anyhow::Result<Run> {
    let Settings {
        window,
        parallelism,
        index,
        zstd_level,
        segment_events,
    } = *settings;
    let workers = parallelism.threads;
    let base = heap::start();
    let cpu0 = cpu_seconds(workers);
    let t0 = Instant::now();
    let mut source = Source::open(input)?;
    let win = window.map(|w| usize::try_from(w).unwrap_or(usize::MAX));
    let fail = || format!("cannot compress {} with {algorithm}", input.display());
    let program = source.program().clone();
    let c =
        TraceCompressor::with_threads(algorithm, win, program, parallelism).with_context(fail)?;
    let file = std::fs::File::create(output)
        .with_context(|| format!("cannot create {}", output.display()))?;
    let out = std::io::BufWriter::new(file);
    let writer = SegmentWriter::with_level(out, output, zstd_level, workers);
    let mut c = SegmentedCompressor::new(c, segment_events, writer);
    let bar = event_counter(format!("compressing with {algorithm}"));
    let truncation = source.feed(input, &mut c, &bar).with_context(fail)?;
    let (events, threads) = (c.compressor().events(), c.compressor().num_threads());
    drop(source);
    let mut finished = c.finish().with_context(fail)?;
    if index {
        if finished.segments_before() > 0 {
            anyhow::bail!(
                "--index needs the whole grammar in one segment: the trace has more than \
                 {segment_events} events (--segment-events 0 makes one segment)"
            );
        }
        let wpp = &finished.file;
        let section = index_section(&wpp.grammar, &wpp.alphabet).with_context(fail)?;
        finished.file.extra.push(section);
    }
    let terminals = finished.file.alphabet.len();
    let (_, written) = finished.write().with_context(fail)?;
    let seconds = t0.elapsed().as_secs_f64();
    let cpu_seconds = cpu_seconds(workers).zip(cpu0).map(|(b, a)| b - a);
    bar.finish_and_clear();
    let row = Row {
        algorithm: algorithm.as_str(),
        window: window.filter(|_| algorithm == Algorithm::Frequency),
        threads_used: workers,
        events,
        threads,
        terminals,
        rules: written.rules as usize,
        symbols: written.symbols as usize,
        wpp_bytes: written.bytes,
        segments: written.segments,
        seconds,
        cpu_seconds,
        peak_heap_bytes: heap::peak_since(base),
        events_per_sec: events as f64 / seconds.max(1e-9),
        written: false,
    };
    Ok(Run {
        row,
        written: output.to_owned(),
        truncation,
    })
}

/// What `wpp compress` reads: a trace, or a `.wpp` whose expansion it compresses again (say, an
/// online recording, which the runtime builds with the fast `phrase` compressor, into the
/// smaller `frequency` grammar).
enum Source {
    Trace(Box<TraceReader>),
    Grammar(Box<WppFile>),
}

/// Events handed to the compressor at a time when expanding a `.wpp`.
const EXPAND_BATCH: usize = 1 << 16;

impl Source {
    fn open(path: &Path) -> anyhow::Result<Source> {
        let kinds = [Kind::Trace, Kind::TextTrace, Kind::Wpp];
        Ok(match input::expect(path, &kinds, "compress")? {
            Kind::Wpp => Source::Grammar(Box::new(input::read_wpp(path, "compress")?)),
            _ => Source::Trace(Box::new(input::open_trace(path, "compress")?)),
        })
    }

    fn program(&self) -> &ProgramDb {
        match self {
            Source::Trace(r) => r.program(),
            Source::Grammar(w) => &w.program,
        }
    }

    /// Pushes every event into `c`, counting them on `bar`; returns where a trace was found
    /// cut short. A `.wpp` is expanded thread by thread, never materialized.
    fn feed(
        &mut self,
        path: &Path,
        c: &mut SegmentedCompressor<impl Write>,
        bar: &ProgressBar,
    ) -> anyhow::Result<Option<Truncation>> {
        match self {
            Source::Trace(reader) => {
                while let Some(run) = reader
                    .next_batch()
                    .with_context(|| format!("cannot read {}", path.display()))?
                {
                    c.push_batch(run)?;
                    bar.set_position(c.compressor().events());
                }
                Ok(reader.truncation())
            }
            Source::Grammar(wpp) => {
                let events = wpp.alphabet.events();
                let mut batch = Vec::with_capacity(EXPAND_BATCH);
                for s in input::starts_by_thread(wpp) {
                    for t in Expander::new(&wpp.grammar, s.rule) {
                        batch.push(events[t.index()]);
                        if batch.len() == EXPAND_BATCH {
                            c.push_thread(s.thread, &batch)?;
                            batch.clear();
                            bar.set_position(c.compressor().events());
                        }
                    }
                    c.push_thread(s.thread, &batch)?;
                    batch.clear();
                }
                Ok(None)
            }
        }
    }
}

/// CPU time of the calling thread (`/proc/thread-self/schedstat`, nanoseconds on the CPU), or
/// `None` where that file does not exist.
fn thread_cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: u64 = stat.split_whitespace().next()?.parse().ok()?;
    Some(ns as f64 * 1e-9)
}

/// CPU time of the whole process, its ended threads included (`/proc/self/stat`'s `utime` and
/// `stime`, in the kernel's 100 Hz user ticks), or `None` where that file does not exist.
fn process_cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the parenthesized command name: state is field 3, utime 14, stime 15.
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some((utime + stime) as f64 / 100.0)
}

/// CPU seconds so far of what compresses: the calling thread when it compresses alone, the
/// whole process when worker threads do.
fn cpu_seconds(workers: usize) -> Option<f64> {
    if workers > 1 {
        process_cpu_seconds()
    } else {
        thread_cpu_seconds()
    }
}

/// The algorithms `choice` runs.
fn algorithms(choice: Choice) -> Vec<Algorithm> {
    match choice {
        Choice::Sequitur => vec![Algorithm::Sequitur],
        Choice::Sequitur1 => vec![Algorithm::Sequitur1],
        Choice::Frequency => vec![Algorithm::Frequency],
        Choice::Phrase => vec![Algorithm::Phrase],
        Choice::All => Algorithm::ALL.to_vec(),
    }
}

/// Refuses an output that would replace the input (a killed run's spool may be the only copy
/// of its events) or that has no directory to go to, before any work.
fn check_output(input: &Path, output: &Path) -> anyhow::Result<()> {
    let shown = output.display();
    if let (Ok(i), Ok(o)) = (std::fs::canonicalize(input), std::fs::canonicalize(output)) {
        if i == o {
            anyhow::bail!("cannot write {shown}: it is the input, which the .wpp would replace");
        }
    }
    if output.is_dir() {
        anyhow::bail!("cannot write {shown}: it is a directory");
    }
    match output.parent().filter(|d| !d.as_os_str().is_empty()) {
        Some(dir) if !dir.is_dir() => {
            anyhow::bail!(
                "cannot write {shown}: there is no directory {}",
                dir.display()
            )
        }
        _ => Ok(()),
    }
}

/// Runs `wpp compress`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let choice = args.algorithm.unwrap_or(match args.smallest {
        true => Choice::Frequency,
        false => Choice::Sequitur,
    });
    if args.window.is_some()
        && matches!(
            choice,
            Choice::Sequitur | Choice::Sequitur1 | Choice::Phrase
        )
    {
        anyhow::bail!("--window applies to --algorithm frequency (or all); the others are online");
    }
    check_output(&args.input, &args.output)?;
    let settings = Settings::new(&args);
    let mut rows: Vec<Row> = Vec::new();
    let mut best: Option<(usize, PathBuf)> = None;
    let mut truncation = None;
    for algorithm in algorithms(choice) {
        let tmp = output::staging_path(&args.output, &format!(".{algorithm}.tmp"));
        let run = compress_once(&args.input, &tmp, algorithm, &settings);
        let run = run.inspect_err(|_| {
            remove(&tmp);
            best.iter().for_each(|(_, b)| remove(b));
        })?;
        truncation = run.truncation;
        let smaller = match &best {
            Some((i, _)) => run.row.wpp_bytes < rows[*i].wpp_bytes,
            None => true,
        };
        if !smaller {
            remove(&run.written);
        } else if let Some((_, replaced)) = best.replace((rows.len(), run.written)) {
            remove(&replaced);
        }
        rows.push(run.row);
    }
    input::warn_truncated(&args.input, truncation);
    let (i, written) = best.expect("at least one algorithm ran");
    output::replace(&written, &args.output)
        .inspect_err(|_| remove(&written))
        .with_context(|| format!("cannot write {}", args.output.display()))?;
    rows[i].written = true;
    let report = Report {
        input: args.input.display().to_string(),
        output: args.output.display().to_string(),
        truncated_at: truncation.map(|t| t.offset),
        runs: rows,
    };
    if args.json {
        crate::util::print_json(&report)
    } else {
        Ok(print_table(&report)?)
    }
}

/// Removes a temporary output (larger than another, or left by a failed run); one already
/// gone is no error.
fn remove(tmp: &Path) {
    let _ = std::fs::remove_file(tmp);
}

/// Prints the report as an aligned table, one row per compressor.
fn print_table(report: &Report) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    if let Some(r) = report.runs.first() {
        writeln!(
            out,
            "{}: {} events, {} distinct, {}",
            report.input,
            r.events,
            r.terminals,
            threads(r.threads)
        )?;
    }
    writeln!(
        out,
        "{:<10} {:>8} {:>7} {:>12} {:>10} {:>12} {:>9} {:>9} {:>12} {:>13}",
        "algorithm",
        "window",
        "threads",
        "symbols",
        "rules",
        ".wpp bytes",
        "time s",
        "cpu s",
        "peak heap",
        "events/s"
    )?;
    for r in &report.runs {
        let window = r.window.map_or("-".to_owned(), |w| w.to_string());
        let written = if r.written && r.segments > 1 {
            format!("  → {} ({} segments)", report.output, r.segments)
        } else if r.written {
            format!("  → {}", report.output)
        } else {
            String::new()
        };
        writeln!(
            out,
            "{:<10} {:>8} {:>7} {:>12} {:>10} {:>12} {:>9.3} {:>9} {:>12} {:>13.0}{written}",
            r.algorithm,
            window,
            r.threads_used,
            r.symbols,
            r.rules,
            r.wpp_bytes,
            r.seconds,
            r.cpu_seconds.map_or("-".to_owned(), |c| format!("{c:.3}")),
            human_bytes(r.peak_heap_bytes),
            r.events_per_sec,
        )?;
    }
    out.flush()
}

/// `n` bytes in B, KiB, MiB or GiB, with one decimal.
pub(crate) fn human_bytes(n: usize) -> String {
    const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}
