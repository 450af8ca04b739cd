//! Decoding query results for people: hot subpaths as events, with the call stack and source
//! location of their first occurrence, and as folded stacks for flame-graph tools. Paths of a
//! path recording are decoded to their blocks (and so to source lines) through the CFGs of
//! the program database (`wpp_paths::trace`).

use wpp_grammar::Grammar;
use wpp_trace::{Alphabet, Event, FunctionId, ProgramDb, Terminal};

use crate::dag::call_stacks;
use crate::hot::{first_uses, HotSubpath};

/// A hot subpath with its decoded location.
#[derive(Clone, Debug, serde::Serialize)]
pub struct HotReport {
    /// The subpath as found.
    #[serde(flatten)]
    pub hot: HotSubpath,
    /// Thread of the occurrence below.
    pub thread: u32,
    /// Start position of one occurrence in that thread: the first use of the rule where the
    /// search found it, not necessarily the subpath's first occurrence (`wpp subpath` gives
    /// that).
    pub position: u64,
    /// Function names on the call stack there, outermost first.
    pub stack: Vec<String>,
    /// The subpath's events in text form (`F name`, `B 3`, `E`, …).
    pub events: Vec<String>,
    /// Function executing the subpath's first block or path, if any.
    pub function: Option<String>,
    /// That function's blocks in the subpath, at its own level: as recorded, or decoded from
    /// its paths through the program database's CFG (empty if the function has none).
    pub blocks: Vec<u64>,
    /// That function's paths in the subpath, at its own level (path recordings only).
    pub paths: Vec<u64>,
    /// Source lines of those blocks, where the program database knows them.
    pub lines: Vec<u32>,
}

/// An event in the text trace form, with function names from `db`.
pub fn event_text(e: Event, db: &ProgramDb) -> String {
    match e {
        Event::Enter(f) => format!("F {}", db.name(f)),
        Event::Leave => "E".into(),
        Event::Block(b) => format!("B {b}"),
        Event::Path(p) => format!("P {p}"),
        Event::Thread(t) => format!("T {t}"),
    }
}

/// Decodes hot subpaths found at `places` (per subpath: index into `g.starts()` and start
/// position there): call stack (one pass over each thread's start rule), events
/// and location. [`first_places`] gives the places of Figure 7's reports.
pub fn decode_hot(
    g: &Grammar,
    alphabet: &Alphabet,
    db: &ProgramDb,
    hot: &[HotSubpath],
    places: &[(usize, u64)],
) -> Vec<HotReport> {
    let place = places.to_vec();
    let mut decoder = wpp_paths::PathDecoder::new(db).ok();
    let mut stacks: Vec<Vec<FunctionId>> = vec![Vec::new(); hot.len()];
    for (s, start) in g.starts().iter().enumerate() {
        let mut idx: Vec<usize> = (0..hot.len()).filter(|&i| place[i].0 == s).collect();
        idx.sort_by_key(|&i| place[i].1);
        let pos: Vec<u64> = idx.iter().map(|&i| place[i].1).collect();
        for (i, st) in idx
            .into_iter()
            .zip(call_stacks(g, alphabet, start.rule, &pos))
        {
            stacks[i] = st;
        }
    }
    hot.iter()
        .zip(place)
        .zip(stacks)
        .map(|((h, (stream, position)), stack)| {
            let events: Vec<Event> = h
                .terminals
                .iter()
                .filter_map(|&t| alphabet.event(Terminal(t)))
                .collect();
            let (function, items, are_paths) = own_items(&stack, &events);
            let (blocks, paths) = match (are_paths, function) {
                (true, Some(f)) => (decode_paths(decoder.as_mut(), f, &items), items),
                _ => (items, Vec::new()),
            };
            let lines = function
                .and_then(|f| db.function(f))
                .map(|f| {
                    blocks
                        .iter()
                        .filter_map(|&b| f.block_lines.get(b as usize).copied())
                        .collect()
                })
                .unwrap_or_default();
            HotReport {
                hot: h.clone(),
                thread: g.starts().get(stream).map_or(0, |s| s.thread.0),
                position,
                stack: stack.iter().map(|&f| db.name(f)).collect(),
                events: events.iter().map(|&e| event_text(e, db)).collect(),
                function: function.map(|f| db.name(f)),
                blocks,
                paths,
                lines,
            }
        })
        .collect()
}

/// Where each of Figure 7's reports first occurs: the first use of its rule, plus its offset.
pub fn first_places(g: &Grammar, hot: &[HotSubpath]) -> Vec<(usize, u64)> {
    let firsts = first_uses(g);
    hot.iter()
        .map(|h| {
            let (stream, base) = firsts[h.rule as usize].unwrap_or((0, 0));
            (stream, base + h.offset)
        })
        .collect()
}

/// The blocks of `f`'s paths `ids`, in order; empty when they cannot be decoded (no CFG).
fn decode_paths(
    decoder: Option<&mut wpp_paths::PathDecoder>,
    f: FunctionId,
    ids: &[u64],
) -> Vec<u64> {
    let Some(d) = decoder else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for &p in ids {
        match d.blocks(f, wpp_trace::PathId(p), 0) {
            Ok(bs) => out.extend(bs.iter().map(|b| u64::from(b.0))),
            Err(_) => return Vec::new(),
        }
    }
    out
}

/// The function running the first block or path of `events` (given the stack before them),
/// the ids of its blocks or paths at its own level, and whether they are paths.
fn own_items(stack: &[FunctionId], events: &[Event]) -> (Option<FunctionId>, Vec<u64>, bool) {
    let mut st = stack.to_vec();
    let mut owner: Option<(FunctionId, usize)> = None;
    let mut items = Vec::new();
    let mut paths = false;
    for &e in events {
        let id = match e {
            Event::Block(b) => u64::from(b.0),
            Event::Path(p) => {
                paths = true;
                p.0
            }
            Event::Enter(f) => {
                st.push(f);
                continue;
            }
            Event::Leave => {
                st.pop();
                continue;
            }
            Event::Thread(_) => continue,
        };
        match owner {
            None => {
                if let Some(&f) = st.last() {
                    owner = Some((f, st.len()));
                    items.push(id);
                }
            }
            Some((_, depth)) if depth == st.len() => items.push(id),
            Some(_) => {}
        }
    }
    (owner.map(|(f, _)| f), items, paths)
}

/// One line of folded stacks (`main;f;g label cost`), the input format of flame-graph tools:
/// the call stack of the first occurrence, then the subpath's events as the leaf frame.
pub fn folded_line(r: &HotReport) -> String {
    let clean = |s: &str| s.replace([';', ' '], "_");
    let mut frames: Vec<String> = r.stack.iter().map(|s| clean(s)).collect();
    let leaf: Vec<String> = r.events.iter().map(|e| clean(e)).collect();
    frames.push(leaf.join(","));
    format!("{} {}", frames.join(";"), r.hot.cost)
}
