//! The run in callgrind's profile format (valgrind.org/docs/manual/cl-format.html), which
//! KCachegrind and `callgrind_annotate` read: per function, the exclusive events of each source
//! line, and per call edge (caller line → callee) the number of calls and the inclusive events
//! spent in them.
//!
//! The counts come from the calling-context tree ([`crate::walk`]), summed over every context
//! of a function. A call's inclusive cost is everything its activation ran, so for recursive
//! calls it includes the nested ones, as callgrind's own inclusive costs do without cycle
//! detection.

use std::collections::BTreeMap;
use std::io::Write;

use rustc_hash::FxHashMap;
use wpp_trace::ProgramDb;

use crate::source::{SourceMap, NO_FILE};
use crate::walk::{Run, ROOT};
use crate::{function_name, ShowError};

/// One function's costs: exclusive events per slot, and calls per `(call slot, callee)` as
/// `(calls, inclusive events)`.
#[derive(Default)]
struct Costs {
    own: BTreeMap<u32, u64>,
    calls: BTreeMap<(u32, u32), (u64, u64)>,
}

/// Compressed names: `(id) name` the first time, `(id)` after.
#[derive(Default)]
struct Names(FxHashMap<String, usize>);

impl Names {
    fn name(&mut self, s: &str) -> String {
        let next = self.0.len() + 1;
        match self.0.get(s) {
            Some(id) => format!("({id})"),
            None => {
                self.0.insert(s.to_owned(), next);
                format!("({next}) {s}")
            }
        }
    }
}

/// The line of slot `slot` of `f`, first switching the cost lines' file (`fi=`) when the
/// line is in another file than the previous one.
fn position(
    map: &SourceMap,
    f: u32,
    slot: u32,
    current: &mut u32,
    files: &mut Names,
    out: &mut impl Write,
) -> std::io::Result<u32> {
    let loc = map.loc(f, slot);
    if loc.file != *current {
        *current = loc.file;
        writeln!(out, "fi={}", files.name(file_name(map, loc.file)))?;
    }
    Ok(loc.line)
}

fn file_name(map: &SourceMap, file: u32) -> &str {
    match file {
        NO_FILE => "???",
        f => map.file_name(f),
    }
}

/// Writes the run as a callgrind profile with one event type, `Events` (the crate docs'
/// samples); `command` is recorded as the profiled command.
pub fn write_callgrind(
    db: &ProgramDb,
    map: &SourceMap,
    run: &Run,
    command: &str,
    out: &mut impl Write,
) -> Result<(), ShowError> {
    let inclusive = run.inclusive();
    let mut costs: BTreeMap<u32, Costs> = BTreeMap::new();
    for (i, c) in run.contexts.iter().enumerate() {
        let own = costs.entry(c.function).or_default();
        for (s, &n) in c.counts.iter().enumerate().filter(|(_, &n)| n > 0) {
            *own.own.entry(s as u32).or_default() += n;
        }
        if i == 0 || run.contexts[c.parent as usize].function == ROOT {
            continue;
        }
        let caller = costs
            .entry(run.contexts[c.parent as usize].function)
            .or_default();
        let edge = caller.calls.entry((c.call_slot, c.function)).or_default();
        edge.0 += c.calls;
        edge.1 += inclusive[i];
    }
    writeln!(out, "# callgrind format")?;
    writeln!(out, "version: 1")?;
    writeln!(out, "creator: wpp {}", env!("CARGO_PKG_VERSION"))?;
    writeln!(out, "cmd: {command}")?;
    writeln!(out, "positions: line")?;
    writeln!(out, "events: Events")?;
    writeln!(out, "summary: {}", run.samples)?;
    let (mut files, mut fns) = (Names::default(), Names::default());
    for (&f, c) in &costs {
        if c.own.is_empty() && c.calls.is_empty() {
            continue;
        }
        let home = map.loc(f, 0).file;
        writeln!(out)?;
        writeln!(out, "fl={}", files.name(file_name(map, home)))?;
        writeln!(out, "fn={}", fns.name(&function_name(db, f)))?;
        let mut current = home;
        for (&slot, &n) in &c.own {
            let line = position(map, f, slot, &mut current, &mut files, out)?;
            writeln!(out, "{line} {n}")?;
        }
        for (&(slot, callee), &(calls, inc)) in &c.calls {
            let line = position(map, f, slot, &mut current, &mut files, out)?;
            let target = map.loc(callee, 0);
            let start = db
                .function(wpp_trace::FunctionId(callee))
                .and_then(|func| func.line)
                .unwrap_or(0);
            writeln!(out, "cfi={}", files.name(file_name(map, target.file)))?;
            writeln!(out, "cfn={}", fns.name(&function_name(db, callee)))?;
            writeln!(out, "calls={calls} {start}")?;
            writeln!(out, "{line} {inc}")?;
        }
    }
    Ok(())
}
