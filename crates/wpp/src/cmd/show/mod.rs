//! Commands that show a recording to a person or a profiler's viewer (`wpp annotate`, `wpp
//! export`, `wpp report`), thin over `wpp_show`. They share [`load`]: any recording (`.wpp`,
//! binary or text trace) is walked once, streaming; `annotate` and `report` also take bl/ppp
//! profiles.

pub mod annotate;
pub mod export;
pub mod report;

use std::path::Path;

use anyhow::Context;
use wpp_show::walk::Recording;
use wpp_show::{Run, SourceMap};
use wpp_trace::ProgramDb;

/// What a shown file held, walked.
pub struct Loaded {
    /// The program database.
    pub db: ProgramDb,
    /// Its source locations.
    pub map: SourceMap,
    /// The walk (or a profile's counts).
    pub run: Run,
    /// What kind of file it was, for the report.
    pub kind: String,
}

/// Opens a recording (not a profile) for streaming.
pub fn open_recording(path: &Path, command: &str) -> anyhow::Result<Recording> {
    use crate::input::Kind;
    let kinds = [Kind::Wpp, Kind::Trace, Kind::TextTrace];
    Ok(match crate::input::expect(path, &kinds, command)? {
        Kind::Wpp => Recording::Wpp(Box::new(crate::input::read_wpp(path, command)?)),
        _ => Recording::Trace(Box::new(
            crate::input::open_trace(path, command)?.read_ahead(),
        )),
    })
}

/// Walks a recording, or reads a bl/ppp profile's path counts.
pub fn load(path: &Path, command: &str) -> anyhow::Result<Loaded> {
    use crate::input::Kind;
    // A missing, empty or unknown file, a directory, or another kind is an error naming it
    // and these four (the input layer's).
    let kinds = [Kind::Wpp, Kind::Trace, Kind::TextTrace, Kind::Profile];
    if crate::input::expect(path, &kinds, command)? == Kind::Profile {
        return load_profile(path);
    }
    let rec = open_recording(path, command)?;
    let kind = match &rec {
        Recording::Wpp(w) => format!(
            "`.wpp` grammar ({} rules, {:?})",
            w.grammar.num_rules(),
            w.algorithm
        ),
        Recording::Trace(t) => format!("{:?} trace", t.format()),
    };
    let (db, map, run) = rec
        .walk()
        .with_context(|| format!("cannot walk {}", path.display()))?;
    Ok(Loaded { db, map, run, kind })
}

/// Warns of each source file of `map` changed after the recording or profile at `path` was
/// written: the lines shown from it may no longer be the lines its counts are of (trial 34 G3).
/// By modification times: a recording copied later hides an edit made before the copy.
pub fn warn_edited_sources(path: &Path, map: &wpp_show::SourceMap) {
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let Some(recorded) = modified(path) else {
        return;
    };
    for file in &map.files {
        if modified(Path::new(file)).is_some_and(|t| t > recorded) {
            eprintln!(
                "wpp: warning: {file} changed after {} was written: its lines may not be the \
                 lines the counts are of",
                path.display()
            );
        }
    }
}

fn load_profile(path: &Path) -> anyhow::Result<Loaded> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut file = wpp_abi::profile::ProfileFile::from_bytes(&bytes)
        .with_context(|| format!("cannot read {}", path.display()))?;
    file.program.attach_cfgs();
    let db = file.program.program.clone();
    let counts = file.path_counts();
    let mut triples = Vec::new();
    for (name, paths) in &counts.functions {
        let f = db.find(name).with_context(|| {
            format!(
                "{}: the profile counts `{name}`, which its program does not have",
                path.display()
            )
        })?;
        triples.extend(paths.iter().map(|(&p, &n)| (f, p, n)));
    }
    let run = Run::from_path_counts(&db, triples)
        .with_context(|| format!("cannot decode the paths of {}", path.display()))?;
    let map = SourceMap::new(&db);
    let kind = format!("{} profile", file.program.mode.name());
    Ok(Loaded { db, map, run, kind })
}

/// The function `name` means in the recording `file` (see [`crate::util::function_position`]).
pub fn function_index(file: &Path, db: &ProgramDb, name: &str) -> anyhow::Result<u32> {
    let names = db.functions.iter().map(|f| f.name.as_str());
    Ok(crate::util::function_position(file, name, names)? as u32)
}
