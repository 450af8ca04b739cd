//! The text trace format: one event per line, for examples, tests and users' own tools.
//!
//! | line | meaning |
//! |---|---|
//! | `F name` | `Enter(f)` — Zhang–Gupta §3 marks entry with the function name |
//! | `F #2` | `Enter(FunctionId(2))`, a raw id: it must be declared (below) |
//! | `E` | `Leave` — Zhang–Gupta §3's exit marker |
//! | `B 3` | `Block(3)`, local to the current function |
//! | `P 7` | `Path(7)`, local to the current function (Larus §2's NewPath) |
//! | `T 2` | `Thread(2)` (Larus §2's EnterThread) |
//! | `D name` | no event: declares the next function id with this name (bare `D`: unnamed) |
//! | `# …`, blank | ignored |
//!
//! A worked example: this file is `Enter(0), Block(0), Enter(1), Path(7), Leave, Enter(2)`
//! with `main` declared as function 0, `helper`, first named by an `F` line, as function 1,
//! and an unnamed function 2 declared by the bare `D`
//! (the test `worked_example_reads_as_documented` checks this).
//!
//! ```text
//! # three functions
//! D main
//! F main
//! B 0
//! F helper
//! P 7
//! E
//! D
//! F #2
//! ```
//!
//! Leading and trailing whitespace is ignored; the letter and its argument are separated by
//! whitespace. Ids are decimal: below 2^32, or 2^64 for paths. A function name is the rest of
//! the line: it does not start with `#`, and may hold spaces (`F std::pair<int, int>::swap`, as
//! C++ and Rust names do; a name with leading or trailing whitespace or a line break is written
//! `F #id`).
//!
//! # The program database
//!
//! Function ids are assigned in order of appearance: each `D name` line, and each `F name`
//! whose name was not seen before, takes the next id. The reader makes one pass over the `D`
//! and `F` lines when it opens the file, so [`TraceReader::program`](super::TraceReader::program)
//! is complete before the first event. The writer starts with one `D` line per function of the
//! database, in id order, so ids survive a round trip; it writes `F name` where the name is
//! representable and unique, and `F #id` otherwise. Only names survive: source files, lines
//! and block lines of the database are binary-only.
//!
//! Ids are checked against that database where the trace is read ([`super::IdLimits`]): `F #id`
//! must name a declared function, so a file with no `D` lines cannot name function 4294967295
//! and make a reader size an index by it; thread ids are below [`super::MAX_THREADS`]. A text
//! trace has no CFGs, so its block ids are only bounded by 2^32.
//!
//! Errors name the 1-based line number and the line's content.

use super::{Bytes, TraceError};
use crate::event::Event;
use crate::ids::{BlockId, FunctionId, PathId, ThreadId};
use crate::program::ProgramDb;
use hashbrown::HashTable;
use rustc_hash::FxBuildHasher;
use std::hash::BuildHasher;
use std::io::Write;

/// What one line of a text trace says.
#[derive(Debug, PartialEq, Eq)]
enum Line<'a> {
    /// Blank or a comment.
    Skip,
    /// `D name` (or a bare `D` for an unnamed function).
    Declare(&'a str),
    /// `F name`.
    EnterName(&'a str),
    /// Any other event, including `F #id`.
    Event(Event),
}

/// Whether the text format can carry `name`: a line's argument, trimmed, reads back as it.
fn is_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('#')
        && name.trim() == name
        && !name.contains(['\n', '\r'])
}

fn parse_line(line: &str) -> Result<Line<'_>, &'static str> {
    let line = line.trim();
    let mut chars = line.chars();
    let Some(letter) = chars.next() else {
        return Ok(Line::Skip);
    };
    let rest = chars.as_str();
    if letter == '#' {
        return Ok(Line::Skip);
    }
    if !rest.is_empty() && !rest.starts_with(char::is_whitespace) {
        return Err("expected an event letter (F, B, P, E, T or D) followed by whitespace");
    }
    let arg = rest.trim_start();
    let id32 = |what| arg.parse::<u32>().map_err(|_| what);
    Ok(match letter {
        'E' if arg.is_empty() => Line::Event(Event::Leave),
        'E' => return Err("`E` takes no argument"),
        'B' => Line::Event(Event::Block(BlockId(id32(
            "expected a block id (a decimal number below 2^32)",
        )?))),
        'T' => Line::Event(Event::Thread(ThreadId(id32(
            "expected a thread id (a decimal number below 2^32)",
        )?))),
        'P' => Line::Event(Event::Path(PathId(
            arg.parse::<u64>()
                .map_err(|_| "expected a path id (a decimal number below 2^64)")?,
        ))),
        'F' => match arg.strip_prefix('#') {
            Some(raw) => Line::Event(Event::Enter(FunctionId(raw.parse::<u32>().map_err(
                |_| "expected a function id after `#` (a decimal number below 2^32)",
            )?))),
            None if is_name(arg) => Line::EnterName(arg),
            None => return Err("expected a function name or `#id`"),
        },
        'D' if arg.is_empty() || is_name(arg) => Line::Declare(arg),
        'D' => return Err("expected a function name (not starting with `#`)"),
        _ => return Err("unknown event letter (expected F, B, P, E, T or D)"),
    })
}

/// A parse error for line `line` (1-based) with content `raw`.
fn parse_error(line: u64, raw: &[u8], message: &'static str) -> TraceError {
    const SHOWN: usize = 80;
    let mut content = String::from_utf8_lossy(&raw[..raw.len().min(SHOWN)]).into_owned();
    if raw.len() > SHOWN {
        content.push('…');
    }
    TraceError::Parse {
        line,
        content: content.trim_end().to_owned(),
        message,
    }
}

/// Splits off the line starting at `*pos`, advancing past its newline.
fn next_line<'a>(bytes: &'a [u8], pos: &mut usize) -> Option<&'a [u8]> {
    if *pos >= bytes.len() {
        return None;
    }
    let rest = &bytes[*pos..];
    let len = rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len());
    *pos += (len + 1).min(rest.len());
    Some(&rest[..len])
}

fn parse_raw(line_no: u64, raw: &[u8]) -> Result<Line<'_>, TraceError> {
    let text = std::str::from_utf8(raw).map_err(|_| parse_error(line_no, raw, "not UTF-8"))?;
    parse_line(text).map_err(|m| parse_error(line_no, raw, m))
}

/// Function names by id, in one arena, with a hash table over them: a name costs its bytes plus
/// about 12 bytes, not a `String` key of its own, so a file of 10^6 `D` lines needs memory in
/// proportion to its size (issue 14, item 4).
#[derive(Default)]
struct NameIndex {
    arena: String,
    /// End of each id's name in `arena`; it starts where the previous one ends.
    ends: Vec<usize>,
    /// Ids of the first function with each non-empty name.
    table: HashTable<FunctionId>,
}

impl NameIndex {
    fn name(&self, f: FunctionId) -> &str {
        let start = f.index().checked_sub(1).map_or(0, |p| self.ends[p]);
        &self.arena[start..self.ends[f.index()]]
    }

    /// Appends the next id's name; whether it is the first function with it.
    fn push(&mut self, name: &str) -> bool {
        let id = FunctionId(self.ends.len() as u32);
        self.arena.push_str(name);
        self.ends.push(self.arena.len());
        if name.is_empty() || self.get(name).is_some() {
            return false;
        }
        let hash = FxBuildHasher.hash_one(name);
        let Self { arena, ends, table } = self;
        let name_of = |f: &FunctionId| {
            let start = f.index().checked_sub(1).map_or(0, |p| ends[p]);
            FxBuildHasher.hash_one(&arena[start..ends[f.index()]])
        };
        table.insert_unique(hash, id, name_of);
        true
    }

    fn get(&self, name: &str) -> Option<FunctionId> {
        let hash = FxBuildHasher.hash_one(name);
        self.table.find(hash, |&f| self.name(f) == name).copied()
    }

    /// Drops the hash table once only [`name`](Self::name) is needed.
    fn into_names(mut self) -> Self {
        self.table = HashTable::new();
        self
    }
}

/// Function names seen so far, and the database they build.
#[derive(Default)]
struct Names {
    db: ProgramDb,
    index: NameIndex,
}

impl Names {
    /// A database sized for the `declared` functions of `D` lines (`F name` lines may add more).
    fn with_capacity(declared: usize) -> Self {
        let mut names = Names::default();
        names.db.functions.reserve_exact(declared);
        names.index.ends.reserve_exact(declared);
        names
    }

    fn declare(&mut self, name: &str) {
        self.db.functions.push(crate::program::Function {
            name: name.to_owned(),
            ..Default::default()
        });
        self.index.push(name);
    }

    fn intern(&mut self, name: &str) {
        if self.index.get(name).is_none() {
            self.declare(name);
        }
    }
}

/// The number of `D` lines in `bytes`, so the database is allocated once at its size.
fn count_declarations(bytes: &[u8]) -> usize {
    let mut pos = 0;
    std::iter::from_fn(|| next_line(bytes, &mut pos))
        .filter(|raw| raw.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'D'))
        .count()
}

/// Decodes a text trace held in memory.
pub(crate) struct TextDecoder {
    bytes: Bytes,
    pos: usize,
    line: u64,
    index: NameIndex,
    limits: super::IdLimits,
}

impl TextDecoder {
    /// Builds the program database from the `D` and `F name` lines, then starts at line 1.
    pub(crate) fn new(bytes: Bytes) -> Result<(ProgramDb, Self), TraceError> {
        let mut names = Names::with_capacity(count_declarations(&bytes));
        let (mut pos, mut line_no) = (0, 0);
        while let Some(raw) = next_line(&bytes, &mut pos) {
            line_no += 1;
            let first = raw.iter().find(|b| !b.is_ascii_whitespace());
            if !matches!(first, Some(b'D' | b'F')) {
                continue;
            }
            match parse_raw(line_no, raw)? {
                Line::Declare(name) => names.declare(name),
                Line::EnterName(name) => names.intern(name),
                Line::Skip | Line::Event(_) => {}
            }
        }
        let decoder = TextDecoder {
            bytes,
            pos: 0,
            line: 0,
            index: names.index,
            limits: super::IdLimits::of(&names.db),
        };
        Ok((names.db, decoder))
    }

    /// Parses up to [`BATCH_EVENTS`](super::binary::BATCH_EVENTS) events into `out`;
    /// `Ok(false)` at the end of the text.
    pub(crate) fn fill(&mut self, out: &mut Vec<Event>) -> Result<bool, TraceError> {
        while out.len() < super::binary::BATCH_EVENTS {
            let Some(raw) = next_line(&self.bytes, &mut self.pos) else {
                break;
            };
            self.line += 1;
            match parse_raw(self.line, raw)? {
                Line::Skip | Line::Declare(_) => {}
                Line::Event(e) => {
                    self.limits
                        .check(e)
                        .map_err(|reason| TraceError::Undeclared {
                            line: self.line,
                            reason,
                        })?;
                    out.push(e)
                }
                Line::EnterName(name) => match self.index.get(name) {
                    Some(f) => out.push(Event::Enter(f)),
                    // The first pass interned every name; this guards against a changed file.
                    None => {
                        return Err(parse_error(
                            self.line,
                            raw,
                            "name missing from the first pass",
                        ))
                    }
                },
            }
        }
        Ok(!out.is_empty())
    }
}

/// Writes a text trace: a comment, `D` lines for the database, then one line per event.
pub struct TextWriter<W: Write> {
    out: W,
    /// The database's names by function id.
    names: NameIndex,
    /// For each function id, whether `F name` reads back as that id (else `F #id`).
    by_name: Vec<bool>,
}

impl<W: Write> TextWriter<W> {
    /// Writes the preamble for `db`.
    pub fn new(mut out: W, db: &ProgramDb) -> Result<Self, TraceError> {
        writeln!(
            out,
            "# wpp text trace: F name|#id = enter, E = leave, B/P/T id = block/path/thread; \
             D name declares the next function id"
        )?;
        let mut names = NameIndex::default();
        let mut by_name = Vec::with_capacity(db.functions.len());
        for f in &db.functions {
            let token = is_name(&f.name);
            let first = names.push(if token { &f.name } else { "" });
            if token {
                writeln!(out, "D {}", f.name)?;
            } else {
                writeln!(out, "D")?;
            }
            by_name.push(first);
        }
        let names = names.into_names();
        Ok(TextWriter {
            out,
            names,
            by_name,
        })
    }

    /// Writes one event line.
    pub fn push(&mut self, event: Event) -> Result<(), TraceError> {
        match event {
            Event::Enter(f) if self.by_name.get(f.index()) == Some(&true) => {
                writeln!(self.out, "F {}", self.names.name(f))
            }
            Event::Enter(f) => writeln!(self.out, "F #{f}"),
            Event::Leave => writeln!(self.out, "E"),
            Event::Block(b) => writeln!(self.out, "B {b}"),
            Event::Path(p) => writeln!(self.out, "P {p}"),
            Event::Thread(t) => writeln!(self.out, "T {t}"),
        }?;
        Ok(())
    }

    /// Flushes and returns the underlying writer.
    pub fn finish(mut self) -> Result<W, TraceError> {
        self.out.flush()?;
        Ok(self.out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worked_example_reads_as_documented() {
        let text = "# three functions\nD main\nF main\nB 0\nF helper\nP 7\nE\nD\nF #2\n";
        let r = super::super::TraceReader::from_bytes(text.into()).unwrap();
        let names: Vec<&str> = r
            .program()
            .functions
            .iter()
            .map(|f| f.name.as_str())
            .collect();
        assert_eq!(names, ["main", "helper", ""]);
        let f = |i| Event::Enter(FunctionId(i));
        let expected = [
            f(0),
            Event::Block(BlockId(0)),
            f(1),
            Event::Path(PathId(7)),
            Event::Leave,
            f(2),
        ];
        assert_eq!(r.read_all().unwrap(), expected);
    }

    #[test]
    fn lines_parse_to_their_events() {
        let e = |e| Ok(Line::Event(e));
        assert_eq!(parse_line("  B 3 "), e(Event::Block(BlockId(3))));
        assert_eq!(
            parse_line("P\t18446744073709551615"),
            e(Event::Path(PathId(u64::MAX)))
        );
        assert_eq!(parse_line("E"), e(Event::Leave));
        assert_eq!(parse_line("T 2"), e(Event::Thread(ThreadId(2))));
        assert_eq!(parse_line("F #12"), e(Event::Enter(FunctionId(12))));
        assert_eq!(parse_line("F main"), Ok(Line::EnterName("main")));
        assert_eq!(parse_line("F  a b\t"), Ok(Line::EnterName("a b")));
        assert_eq!(
            parse_line("D std::pair<int, int>::swap"),
            Ok(Line::Declare("std::pair<int, int>::swap"))
        );
        assert_eq!(parse_line("D"), Ok(Line::Declare("")));
        assert_eq!(parse_line("# B 3"), Ok(Line::Skip));
        assert_eq!(parse_line("   "), Ok(Line::Skip));
        for bad in [
            "B",
            "B -1",
            "B 4294967296",
            "E 1",
            "Bx 3",
            "X 1",
            "F",
            "F #x",
            "D #1",
            "F #1 x",
        ] {
            assert!(parse_line(bad).is_err(), "{bad:?} should not parse");
        }
    }
}
