//! A window of the run as a Chrome trace-event JSON file (the "JSON Array/Object Format" that
//! `chrome://tracing`, Perfetto's UI and its trace processor load), with the event index as
//! the time axis.
//!
//! Time is the index of an event in replay order ([`crate::walk::Recording::replay`]: a
//! trace's events in file order, a `.wpp`'s threads one after another), one index per
//! microsecond. `T` events are not counted, so in a one-thread recording the index is the
//! position `wpp match`, `wpp hot` and `wpp subpath` print; with a thread chosen, the index
//! counts that thread's events only, which is the position they print for it. Each function
//! activation is a `B`/`E` slice pair on its thread's track; each run of consecutive
//! block/path events on one line is an `X` slice named `function:line` lasting as many events.
//! Frames already open when the window starts are opened at its start, and those still open at
//! its end are closed there, so every slice is balanced. The window is capped ([`MAX_WINDOW`]
//! by default) so the file stays loadable.

use std::io::Write;

use rustc_hash::FxHashMap;
use serde::Serialize;
use wpp_trace::{Event, ProgramDb, ThreadId};

use crate::source::SourceMap;
use crate::walk::Recording;
use crate::{frame_name, function_name, ShowError};

/// The largest window written unless the caller allows more (events).
pub const MAX_WINDOW: u64 = 1_000_000;

/// One trace event of the JSON format.
#[derive(Serialize)]
struct TraceEvent {
    name: String,
    ph: &'static str,
    ts: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    dur: Option<u64>,
    pid: u32,
    tid: u32,
    cat: &'static str,
}

#[derive(Default)]
struct ThreadState {
    stack: Vec<u32>,
    /// How many frames at the bottom of `stack` have an open `B` in the window.
    opened: usize,
    started: bool,
    /// The `X` slice being extended: its index in the output and its name.
    run: Option<(usize, String)>,
}

/// Writes events `from..to` (replay indices without `T` events, or positions in `thread` when
/// one is given) of the recording as a Chrome trace.
pub fn write_chrome(
    rec: &mut Recording,
    (from, to, thread): (u64, u64, Option<ThreadId>),
    max_window: u64,
    out: impl Write,
) -> Result<(), ShowError> {
    if from >= to {
        return Err(ShowError::Request(format!(
            "--from {from} must be below --to {to}"
        )));
    }
    if to - from > max_window {
        return Err(ShowError::Request(format!(
            "the window {from}..{to} asks for {} events, more than the cap of {max_window} \
             (choose a smaller window or raise --max-events)",
            to - from
        )));
    }
    // A grammar's threads are known before any event is expanded.
    if let (Some(t), Some(threads)) = (thread, rec.threads()) {
        if !threads.contains(&t) {
            return Err(no_thread(t, threads.iter().map(|t| t.0)));
        }
    }
    let db = rec.program().clone();
    let map = SourceMap::new(&db);
    let mut w = Window {
        db: &db,
        map: &map,
        threads: FxHashMap::default(),
        thread: ThreadId(0),
        events: Vec::new(),
    };
    let mut index = 0u64;
    let mut seen = std::collections::BTreeSet::new();
    rec.replay_threads(
        |t| thread.is_none_or(|want| want == t),
        |e| {
            if let Event::Thread(t) = e {
                w.thread = t;
                seen.insert(t.0);
                return Ok(true);
            }
            if thread.is_some_and(|t| t != w.thread) {
                return Ok(true);
            }
            let at = index;
            index += 1;
            if at >= to {
                return Ok(false);
            }
            w.push(e, at, at >= from);
            Ok(true)
        },
    )?;
    let of = match thread {
        Some(t) if !seen.contains(&t.0) => return Err(no_thread(t, seen.into_iter())),
        Some(t) => format!("thread {}", t.0),
        None => "the recording".into(),
    };
    if index <= from {
        return Err(ShowError::Request(format!(
            "--from {from} is past the end of {of} ({index} events)"
        )));
    }
    w.close(to.min(index));
    serde_json::to_writer(
        out,
        &serde_json::json!({ "traceEvents": w.events, "displayTimeUnit": "ns" }),
    )
    .map_err(|e| ShowError::Io(e.into()))
}

/// The error for `--thread t` of a recording with only `threads`.
fn no_thread(t: ThreadId, threads: impl Iterator<Item = u32>) -> ShowError {
    let ids: Vec<String> = threads.map(|t| t.to_string()).collect();
    ShowError::Request(format!(
        "the recording has no thread {}; choose --thread from its threads: {}",
        t.0,
        ids.join(", ")
    ))
}

struct Window<'a> {
    db: &'a ProgramDb,
    map: &'a SourceMap,
    threads: FxHashMap<ThreadId, ThreadState>,
    thread: ThreadId,
    events: Vec<TraceEvent>,
}

impl Window<'_> {
    fn push(&mut self, e: Event, at: u64, inside: bool) {
        let tid = self.thread.0;
        let (db, map) = (self.db, self.map);
        let st = self.threads.entry(self.thread).or_default();
        if inside && !st.started {
            st.started = true;
            for &f in &st.stack {
                self.events.push(slice(function_name(db, f), "B", at, tid));
            }
            st.opened = st.stack.len();
        }
        match e {
            Event::Enter(f) => {
                st.stack.push(f.0);
                st.run = None;
                if inside {
                    self.events
                        .push(slice(function_name(db, f.0), "B", at, tid));
                    st.opened = st.stack.len();
                }
            }
            Event::Leave => {
                st.run = None;
                if st.stack.pop().is_some() && inside && st.opened > st.stack.len() {
                    self.events.push(slice(String::new(), "E", at, tid));
                }
                st.opened = st.opened.min(st.stack.len());
            }
            Event::Block(b) if inside => {
                let f = st.stack.last().copied().unwrap_or(crate::walk::ROOT);
                let name = frame_name(db, map, f, map.slot(f, b.0));
                extend(&mut self.events, st, name, at, tid);
            }
            Event::Path(p) if inside => {
                let f = st.stack.last().copied().unwrap_or(crate::walk::ROOT);
                let name = format!("{} path {}", function_name(db, f), p.0);
                extend(&mut self.events, st, name, at, tid);
            }
            _ => {}
        }
    }

    fn close(&mut self, end: u64) {
        let mut threads: Vec<_> = self.threads.iter().collect();
        threads.sort_by_key(|(t, _)| t.0);
        for (t, st) in threads {
            for _ in 0..st.opened {
                self.events.push(slice(String::new(), "E", end, t.0));
            }
        }
    }
}

fn slice(name: String, ph: &'static str, ts: u64, tid: u32) -> TraceEvent {
    TraceEvent {
        name,
        ph,
        ts,
        dur: None,
        pid: 1,
        tid,
        cat: "wpp",
    }
}

/// Lengthens the thread's current `X` slice when the event continues it, else starts one.
fn extend(events: &mut Vec<TraceEvent>, st: &mut ThreadState, name: String, at: u64, tid: u32) {
    if let Some((i, current)) = &st.run {
        let e = &mut events[*i];
        if *current == name && e.ts + e.dur.unwrap_or(0) == at {
            e.dur = Some(e.dur.unwrap_or(0) + 1);
            return;
        }
    }
    let mut e = slice(name.clone(), "X", at, tid);
    e.dur = Some(1);
    events.push(e);
    st.run = Some((events.len() - 1, name));
}
