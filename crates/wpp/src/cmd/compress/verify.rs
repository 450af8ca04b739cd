//! `wpp verify`: exit 0 iff a `.wpp` grammar expands to exactly a trace.
//!
//! "Exactly" means per thread: for every thread, the start rule's expansion equals the
//! trace's events of that thread, in order (`wpp_trace::same_per_thread`). How the trace
//! interleaved its threads, and switches to a thread that then emitted nothing, are not part of
//! a trace's meaning and are not stored in a `.wpp`.
//!
//! Both sides stream: the trace is read batch by batch, and each thread's start rule is
//! expanded lazily by its own [`Expander`] (a stack as deep as the grammar), advanced as the
//! trace's events of that thread arrive. Neither is materialized, so memory is the grammar plus
//! a stack per thread. The first difference is reported with its thread, its position in the
//! thread and in the trace, and both events. A truncated trace is compared by its valid prefix,
//! as `wpp compress` reads it, with a warning.
//!
//! Each side's events are named by its own file's program database: two files of different
//! programs share function ids, not functions, and the report says so.

use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use serde::Serialize;
use wpp_grammar::expand::{Expander, Flattened};
use wpp_grammar::file::WppFile;
use wpp_trace::{Event, ProgramDb, ThreadDemux, ThreadId, TraceError, TraceReader};

use crate::input::{open_trace, read_wpp, warn_truncated};
use crate::util::{event_counter, threads};

/// Arguments of `wpp verify`.
#[derive(clap::Args)]
pub struct Args {
    /// The `.wpp` file.
    wpp: PathBuf,
    /// The trace it should expand to (binary or text; detected).
    trace: PathBuf,
    /// Print the result as JSON (the exit code is the same).
    #[arg(long)]
    json: bool,
}

/// The first place where grammar and trace differ.
#[derive(Serialize)]
struct Mismatch {
    thread: u32,
    /// 0-based position of the differing event among the thread's events.
    position: u64,
    /// 0-based index of the trace's event in the whole trace, if the trace has one there.
    trace_index: Option<u64>,
    /// The grammar's event there, in the text form; `None` if the grammar's thread has ended.
    grammar: Option<String>,
    /// The trace's event there; `None` if the trace's thread has ended.
    trace: Option<String>,
}

/// What `wpp verify` prints.
#[derive(Serialize)]
struct Report {
    wpp: String,
    trace: String,
    equal: bool,
    /// Trace events read (up to the first difference), thread switches included.
    trace_events: u64,
    threads: usize,
    /// Whether both files name the same functions (see [`same_program`]).
    same_program: bool,
    mismatch: Option<Mismatch>,
}

/// One thread's expansion, advanced as the trace's events of the thread arrive.
struct Cursor<'g> {
    thread: ThreadId,
    rest: Expander<'g, Flattened<'g>>,
    pos: u64,
}

/// The event in the text format (`F name`, `B 3`, …).
fn show(e: Event, db: &ProgramDb) -> String {
    match e {
        Event::Enter(f) => match db.functions.get(f.index()) {
            Some(func) if !func.name.is_empty() => format!("F {}", func.name),
            _ => format!("F #{f}"),
        },
        Event::Leave => "E".to_owned(),
        Event::Block(b) => format!("B {b}"),
        Event::Path(p) => format!("P {p}"),
        Event::Thread(t) => format!("T {t}"),
    }
}

/// A grammar being compared with a trace, one trace event at a time.
struct Comparison<'g> {
    wpp: &'g WppFile,
    /// The trace's program, which names its events.
    trace_program: &'g ProgramDb,
    /// One cursor per start rule, and the cursor of each thread.
    cursors: Vec<Cursor<'g>>,
    index: HashMap<ThreadId, usize>,
    demux: ThreadDemux,
    /// The current thread's cursor, `None` if the grammar has no such thread.
    current: Option<usize>,
    /// Trace events compared so far.
    read: u64,
}

impl<'g> Comparison<'g> {
    fn new(wpp: &'g WppFile, flat: &'g Flattened<'g>, trace_program: &'g ProgramDb) -> Self {
        let g = &wpp.grammar;
        let cursors: Vec<Cursor> = g
            .starts()
            .iter()
            .map(|s| Cursor {
                thread: s.thread,
                rest: Expander::flattened(flat, s.rule),
                pos: 0,
            })
            .collect();
        let index: HashMap<ThreadId, usize> = cursors
            .iter()
            .enumerate()
            .map(|(i, c)| (c.thread, i))
            .collect();
        let demux = ThreadDemux::new();
        let current = index.get(&demux.current()).copied();
        Comparison {
            wpp,
            trace_program,
            cursors,
            index,
            demux,
            current,
            read: 0,
        }
    }

    fn show(&self, e: Option<Event>) -> Option<String> {
        e.map(|e| show(e, &self.wpp.program))
    }

    /// Compares the trace's next event with the grammar's.
    #[inline]
    fn step(&mut self, e: Event) -> Option<Mismatch> {
        let at = self.read;
        self.read += 1;
        let Some(thread) = self.demux.route(e) else {
            self.current = self.index.get(&self.demux.current()).copied();
            return None;
        };
        let events = self.wpp.alphabet.events();
        let (got, position) = match self.current {
            Some(c) => {
                let cur = &mut self.cursors[c];
                cur.pos += 1;
                (cur.rest.next().map(|t| events[t.index()]), cur.pos - 1)
            }
            None => (None, 0),
        };
        (got != Some(e)).then(|| Mismatch {
            thread: thread.0,
            position,
            trace_index: Some(at),
            grammar: self.show(got),
            trace: Some(show(e, self.trace_program)),
        })
    }

    /// At the end of the trace: the first thread whose expansion goes on.
    fn leftover(&mut self) -> Option<Mismatch> {
        let events = self.wpp.alphabet.events();
        let (thread, position, left) = self
            .cursors
            .iter_mut()
            .find_map(|c| Some((c.thread, c.pos, c.rest.next()?)))?;
        Some(Mismatch {
            thread: thread.0,
            position,
            trace_index: None,
            grammar: self.show(Some(events[left.index()])),
            trace: None,
        })
    }
}

/// Compares the grammar with the trace; `Ok(None)` if equal per thread. `read` counts the
/// trace events compared.
fn compare(
    wpp: &WppFile,
    reader: &mut TraceReader,
    read: &mut u64,
) -> Result<Option<Mismatch>, TraceError> {
    let trace_program = reader.program().clone();
    let flat = Flattened::new(&wpp.grammar);
    let mut cmp = Comparison::new(wpp, &flat, &trace_program);
    let bar = event_counter("verifying".to_owned());
    let mut mismatch = None;
    while let Some(run) = reader.next_batch()? {
        mismatch = run.iter().find_map(|&e| cmp.step(e));
        bar.set_position(cmp.read);
        if mismatch.is_some() {
            break;
        }
    }
    bar.finish_and_clear();
    *read = cmp.read;
    Ok(mismatch.or_else(|| cmp.leftover()))
}

/// Whether two program databases name the same functions by the same ids. A text trace keeps
/// only names, and declares a name it cannot carry (edge whitespace, a line break) unnamed, so
/// an empty name matches any.
fn same_program(a: &ProgramDb, b: &ProgramDb) -> bool {
    a.functions.len() == b.functions.len()
        && a.functions
            .iter()
            .zip(&b.functions)
            .all(|(f, g)| f.name == g.name || f.name.is_empty() || g.name.is_empty())
}

/// The mismatch in words.
fn describe(m: &Mismatch) -> String {
    let at = format!("thread {}, event {}", m.thread, m.position);
    let trace_at = m
        .trace_index
        .map_or(String::new(), |i| format!(" (trace event {i})"));
    match (&m.grammar, &m.trace) {
        (Some(g), Some(t)) => format!("{at}{trace_at}: the grammar has `{g}`, the trace has `{t}`"),
        (None, Some(t)) => format!(
            "{at}{trace_at}: the grammar's thread {} ends here, the trace continues with `{t}`",
            m.thread
        ),
        (Some(g), None) => format!(
            "{at}: the trace's thread {} ends here, the grammar continues with `{g}`",
            m.thread
        ),
        (None, None) => at,
    }
}

/// Runs `wpp verify`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let wpp = read_wpp(&args.wpp, "verify")?;
    let mut reader = open_trace(&args.trace, "verify")?;
    let mut read = 0;
    let same_program = same_program(&wpp.program, reader.program());
    let mismatch = compare(&wpp, &mut reader, &mut read)
        .with_context(|| format!("cannot read {}", args.trace.display()))?;
    warn_truncated(&args.trace, reader.truncation());
    let report = Report {
        wpp: args.wpp.display().to_string(),
        trace: args.trace.display().to_string(),
        equal: mismatch.is_none(),
        trace_events: read,
        threads: wpp.grammar.starts().len(),
        same_program,
        mismatch,
    };
    if args.json {
        crate::util::print_json(&report)?;
    }
    match &report.mismatch {
        Some(m) => anyhow::bail!(
            "{} does not expand to {}: {}{}",
            report.wpp,
            report.trace,
            describe(m),
            if same_program {
                ""
            } else {
                "; the two files record different programs (their function tables differ)"
            }
        ),
        None if !args.json => {
            let mut out = std::io::stdout().lock();
            writeln!(
                out,
                "ok: {} expands to exactly {} ({} events in the trace, its thread switches \
                 included; {})",
                report.wpp,
                report.trace,
                report.trace_events,
                threads(report.threads)
            )?;
            Ok(out.flush()?)
        }
        None => Ok(()),
    }
}
