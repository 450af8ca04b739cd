//! `wpp db add`: reads profiles and recordings into rows and commits them in batches.
//!
//! Files are read one at a time through the libraries that `wpp profile show` and `wpp
//! functions`/`wpp annotate` use ([`ProfileFile::path_counts`] for profiles,
//! [`wpp_show::Recording::walk`] for recordings), and each run's rows go into the batch's
//! Parquet files as soon as the file has been read, so memory is bounded by one file, the
//! writers' row groups and the ids of the runs and paths stored, whatever the number of files
//! or the batch size. A file that cannot be read is reported with its name and skipped; the
//! rows of the others land.
//!
//! Profiles of one build (a suite's or a fleet's runs) differ in their counts only: after the
//! first, their program database, most of each file, is compared byte for byte and not decoded,
//! and their counts are handed out one by one as they are decoded ([`Build::each_count`]). The
//! program's `functions`, `blocks` and listed `paths` rows are written once per program, as
//! are the `paths` rows of executed paths of functions with many paths. Each batch ends with
//! its totals ([`crate::totals`]).

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use memmap2::Mmap;
use rustc_hash::{FxHashMap, FxHashSet};
use twox_hash::XxHash3_128;
use wpp_abi::profile::{peek_run_id, ppp_path_counts, Build, Counts, ProfileFile, RunInfo};
use wpp_abi::EmbeddedProgram;
use wpp_grammar::file::WppFile;
use wpp_paths::{BallLarus, Cfg, Dag, PathId, PppProfile};
use wpp_show::walk::ROOT;
use wpp_show::Recording;
use wpp_trace::ProgramDb;

use crate::store::{int_column, text_column, unique, BatchWriter, Store};
use crate::table::{self, Rows, Table, Value, TABLES};
use crate::totals::Totals;
use crate::DbError;

/// Functions with at most this many Ball–Larus paths have every path in `paths`
/// (`functions.paths_listed`); the others have their executed paths only.
pub const LIST_PATHS: u64 = 256;

/// What `wpp db add` is told about the runs.
#[derive(Clone, Debug)]
pub struct Options {
    /// `runs.label` of every run added (e.g. a commit or a test suite's name).
    pub label: Option<String>,
    /// `runs.host` of every run added.
    pub host: Option<String>,
    /// Runs per batch: its files are committed (made visible) after this many runs.
    pub batch_runs: usize,
}

/// What an ingest did.
#[derive(Debug, Default)]
pub struct Report {
    /// Runs added.
    pub added: usize,
    /// Files whose run was already in the store (the same content).
    pub present: usize,
    /// Profiles added whose run has no exit status: snapshots of running programs (a later
    /// snapshot of the run is then already present) or runs killed by a signal.
    pub without_exit: usize,
    /// Files skipped, with why.
    pub skipped: Vec<(PathBuf, String)>,
    /// Profiles whose run the store has from a snapshot of the running program, while they
    /// have its exit status: the store keeps the snapshot (trial 35 H10).
    pub later_snapshots: Vec<PathBuf>,
    /// Recordings not added because the store has the run from another file of the same
    /// recording (its `.trace` and its `.wpp`), with that file; counted in `present` too.
    pub same_recording: Vec<(PathBuf, String)>,
    /// Rows written, all tables.
    pub rows: u64,
    /// Batches committed.
    pub batches: usize,
}

/// The kinds of file ingested, by their magic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Profile,
    Wpp,
    Trace,
}

impl Kind {
    fn of(head: &[u8]) -> Option<Kind> {
        if head.starts_with(wpp_abi::profile::MAGIC) {
            Some(Kind::Profile)
        } else if head.starts_with(&wpp_grammar::file::MAGIC) {
            Some(Kind::Wpp)
        } else if head.starts_with(&wpp_trace::file::binary::MAGIC) {
            Some(Kind::Trace)
        } else {
            None
        }
    }

    fn name(self) -> &'static str {
        match self {
            Kind::Profile => "profile",
            Kind::Wpp => "wpp",
            Kind::Trace => "trace",
        }
    }
}

/// File names taken from folders (files named on the command line are taken whatever their
/// name, by content).
const EXTENSIONS: [&str; 4] = ["blprof", "pppprof", "wpp", "trace"];

/// The files to ingest: each file named, and every file with a wpp extension under each
/// folder named (recursively), sorted within a folder.
pub fn expand(inputs: &[PathBuf]) -> Result<Vec<PathBuf>, DbError> {
    let mut out = Vec::new();
    for p in inputs {
        if p.is_dir() {
            walk_dir(p, &mut out)?;
        } else {
            out.push(p.clone());
        }
    }
    Ok(out)
}

fn walk_dir(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), DbError> {
    for e in walkdir::WalkDir::new(dir)
        .follow_links(true)
        .sort_by_file_name()
    {
        let e = e.map_err(|e| DbError::io(dir, e.into()))?;
        let input = e
            .path()
            .extension()
            .and_then(|x| x.to_str())
            .is_some_and(|x| EXTENSIONS.contains(&x));
        if e.file_type().is_file() && input {
            out.push(e.into_path());
        }
    }
    Ok(())
}

/// A program seen in this ingest: its functions by name and their numberings.
struct Program {
    /// Function names by id.
    names: Vec<String>,
    by_name: HashMap<String, u32>,
    numberings: Vec<Option<(Dag, BallLarus)>>,
    /// Per function: whether `paths` lists all its paths (asked for each path counted).
    listed: Vec<bool>,
}

impl Program {
    fn new(db: &ProgramDb) -> Program {
        let numberings = db
            .functions
            .iter()
            .map(|f| {
                let mut cfg = Cfg::from_record(&f.name, f.cfg.as_ref()?);
                wpp_paths::number_with_limit(&mut cfg, wpp_abi::PATH_LIMIT).ok()
            })
            .collect();
        let by_name = db
            .functions
            .iter()
            .enumerate()
            .map(|(i, f)| (f.name.clone(), i as u32))
            .collect();
        let mut program = Program {
            names: db.functions.iter().map(|f| f.name.clone()).collect(),
            by_name,
            numberings,
            listed: Vec::new(),
        };
        program.listed = (0..db.functions.len() as u32)
            .map(|f| program.paths_total(f).is_some_and(|n| n <= LIST_PATHS))
            .collect();
        program
    }

    fn paths_total(&self, f: u32) -> Option<u64> {
        let (_, bl) = self.numberings.get(f as usize)?.as_ref()?;
        Some(bl.path_count())
    }

    fn listed(&self, f: u32) -> bool {
        self.listed.get(f as usize).copied().unwrap_or(false)
    }

    /// The blocks of path `id` of function `f` as `wpp profile show` prints them: `b3` for a
    /// block, `b3'` for the part of block 3 after a call (a path starting at a cut), `?` for an
    /// id out of range.
    fn blocks(&self, f: u32, id: u64) -> String {
        let Some(Some((dag, bl))) = self.numberings.get(f as usize) else {
            return String::new();
        };
        bl.block_names(dag, PathId(id))
            .map_or_else(|_| "?".into(), |names| names.join(" "))
    }
}

/// The rows of one run, kept apart until the whole file has been read.
struct RunRows {
    tables: Vec<Rows>,
    /// The run's program id.
    program_id: String,
    /// Paths of the run's program this run adds to `paths` (Fx sets: these and the stored
    /// paths are looked up for every path counted, where SipHash showed in the profile).
    new_paths: FxHashSet<PathKey>,
    new_program: Option<String>,
}

/// A path listed in `paths`, within its program: function, path id.
type PathKey = (u32, u64);

/// A path's count in a profile: function, path id, count.
type PathCount = (u32, u64, u64);

/// What a run's `runs` row says besides its file, label and host.
struct RunFacts {
    program_id: String,
    build_hash: String,
    mode: &'static str,
    events: u64,
    /// Its command line and exit status, where the file records them (profiles since
    /// version 4).
    run: Option<RunInfo>,
}

/// Function ids by name for counts handed out one at a time, in runs of one function: the
/// last name's id is kept, and the first unknown name's error.
struct FunctionIds<'a> {
    program: &'a Program,
    name: String,
    id: Result<u32, String>,
    failure: Option<String>,
}

impl<'a> FunctionIds<'a> {
    fn new(program: &'a Program) -> FunctionIds<'a> {
        FunctionIds {
            program,
            name: String::new(),
            id: Err(String::new()),
            failure: None,
        }
    }

    fn of(&mut self, name: &str) -> Result<u32, String> {
        if name != self.name || self.name.is_empty() {
            self.name.clear();
            self.name.push_str(name);
            self.id = function_id(self.program, name);
        }
        self.id.clone()
    }

    fn fail(&mut self, why: String) {
        self.failure.get_or_insert(why);
    }

    fn failure(self) -> Result<(), String> {
        self.failure.map_or(Ok(()), Err)
    }
}

impl RunRows {
    fn new() -> RunRows {
        RunRows {
            tables: TABLES.iter().map(|&t| Rows::new(t)).collect(),
            program_id: String::new(),
            new_paths: FxHashSet::default(),
            new_program: None,
        }
    }

    fn push(&mut self, table: Table, row: &[Value]) {
        let i = TABLES.iter().position(|t| t.name == table.name);
        self.tables[i.expect("a table")].push(row);
    }
}

/// The last build whose profile was read: the next profile of that build (the common case:
/// a suite's or a fleet's runs of one program) has only its counts decoded.
struct LastBuild {
    build: Build,
    program_id: String,
    build_hash: String,
    mode: &'static str,
}

/// An ingest in progress: what the store holds and the rows of the batch being filled.
pub struct Ingest<'a> {
    store: &'a Store,
    options: Options,
    runs: FxHashSet<String>,
    /// The profile runs the store holds without an exit status (snapshots, or killed).
    snapshots: FxHashSet<String>,
    /// The recordings (traces, `.wpp`s) the store holds, by [`RecordingKey`], with their file.
    recordings: FxHashMap<RecordingKey, String>,
    programs_stored: FxHashSet<String>,
    /// Per program id, the paths `paths` has.
    paths_stored: HashMap<String, FxHashSet<PathKey>>,
    programs: HashMap<String, Program>,
    last_build: Option<LastBuild>,
    batch: Option<BatchWriter<'a>>,
    /// The totals of the batch's runs, written when it is committed.
    totals: Totals,
    pending_runs: Vec<String>,
    /// The buffer of a profile's counts.
    counts: Vec<PathCount>,
    report: Report,
}

impl<'a> Ingest<'a> {
    /// Starts an ingest into `store`, reading which runs, programs and paths it holds.
    pub fn new(store: &'a Store, options: Options) -> Result<Ingest<'a>, DbError> {
        let mut runs = FxHashSet::default();
        let mut programs_stored = FxHashSet::default();
        let mut recordings = FxHashMap::default();
        let mut snapshots = FxHashSet::default();
        for b in store.read(table::RUNS)? {
            let columns = text_column(&b, "run_id")
                .into_iter()
                .zip(text_column(&b, "kind"))
                .zip(int_column(&b, "exit_status"))
                .zip(text_column(&b, "file"))
                .zip(text_column(&b, "program_id"))
                .zip(int_column(&b, "events"));
            for (((((run, kind), exit), file), program), events) in columns {
                match (kind, file, program, events) {
                    (Some("profile"), ..) if exit.is_none() => {
                        snapshots.extend(run.map(str::to_owned));
                    }
                    (Some("trace" | "wpp"), Some(file), Some(p), Some(n)) => {
                        let key = recording_key(Path::new(file), p, n as u64);
                        recordings.insert(key, file.to_owned());
                    }
                    _ => {}
                }
            }
            runs.extend(
                text_column(&b, "run_id")
                    .into_iter()
                    .flatten()
                    .map(String::from),
            );
            programs_stored.extend(
                text_column(&b, "program_id")
                    .into_iter()
                    .flatten()
                    .map(String::from),
            );
        }
        let mut paths_stored: HashMap<String, FxHashSet<PathKey>> = HashMap::new();
        for b in store.read(table::PATHS)? {
            let keys = text_column(&b, "program_id")
                .into_iter()
                .zip(int_column(&b, "function_id"))
                .zip(int_column(&b, "path_id"));
            for ((p, f), id) in keys {
                if let (Some(p), Some(f), Some(id)) = (p, f, id) {
                    let program = paths_stored.entry(p.to_owned()).or_default();
                    program.insert((f as u32, id as u64));
                }
            }
        }
        Ok(Ingest {
            store,
            options,
            runs,
            snapshots,
            recordings,
            programs_stored,
            paths_stored,
            programs: HashMap::new(),
            last_build: None,
            batch: None,
            totals: Totals::default(),
            pending_runs: Vec::new(),
            counts: Vec::new(),
            report: Report::default(),
        })
    }

    /// Reads one file into the batch (committing the batch when full); a file that cannot be
    /// read is recorded in the report as skipped, with why.
    pub fn add(&mut self, path: &Path) -> Result<(), DbError> {
        match self.read_run(path) {
            Ok(Some(rows)) => self.accept(rows)?,
            Ok(None) => self.report.present += 1,
            Err(why) => self.report.skipped.push((path.to_owned(), why)),
        }
        if self.pending_runs.len() >= self.options.batch_runs.max(1) {
            self.flush()?;
        }
        Ok(())
    }

    /// Commits what is pending and returns the report.
    pub fn finish(mut self) -> Result<Report, DbError> {
        self.flush()?;
        Ok(self.report)
    }

    /// Writes a run's rows into the batch.
    fn accept(&mut self, run: (String, RunRows)) -> Result<(), DbError> {
        let (run_id, mut run_rows) = run;
        let store = self.store;
        let batch = self.batch.get_or_insert_with(|| store.batch_writer());
        for r in run_rows.tables.iter_mut().filter(|r| !r.is_empty()) {
            self.report.rows += r.len() as u64;
            let t = r.table();
            let rows = r.finish().map_err(|e| DbError::arrow(t.name, e))?;
            if t == table::PATH_COUNTS {
                let names = &self.programs[&run_rows.program_id].names;
                self.totals.add_run(&run_rows.program_id, names, &rows);
            }
            batch.write(t, &rows)?;
        }
        let stored = self.paths_stored.entry(run_rows.program_id).or_default();
        stored.extend(run_rows.new_paths);
        self.programs_stored.extend(run_rows.new_program);
        self.runs.insert(run_id.clone());
        self.pending_runs.push(run_id);
        self.report.added += 1;
        Ok(())
    }

    /// Commits the batch with its totals, named by a hash of its run ids and a name no other
    /// batch has ([`unique`]).
    fn flush(&mut self) -> Result<(), DbError> {
        let Some(mut batch) = self.batch.take() else {
            return Ok(());
        };
        for mut rows in self.totals.take_rows(self.options.label.as_deref()) {
            if !rows.is_empty() {
                self.report.rows += rows.len() as u64;
                let t = rows.table();
                batch.write(t, &rows.finish().map_err(|e| DbError::arrow(t.name, e))?)?;
            }
        }
        let name = format!("{}\n{}", self.pending_runs.join("\n"), unique());
        batch.commit(&hash_hex(name.as_bytes()))?;
        self.pending_runs.clear();
        self.report.batches += 1;
        Ok(())
    }

    /// The run of `path` and its rows; `None` if the store already has it.
    fn read_run(&mut self, path: &Path) -> Result<Option<(String, RunRows)>, String> {
        let (kind, run_id, profile) = identify(path)?;
        if self.runs.contains(&run_id) || self.runs.contains(&legacy_run_id(path, &run_id)) {
            let exited = |b: &Mmap| {
                let file = ProfileFile::from_bytes(b).ok();
                file.and_then(|f| f.run?.exit_status).is_some()
            };
            if self.snapshots.contains(&run_id) && profile.as_ref().is_some_and(exited) {
                self.report.later_snapshots.push(path.to_owned());
            }
            return Ok(None);
        }
        let mut rows = RunRows::new();
        let facts = match profile {
            Some(bytes) => self.profile(&bytes, &run_id, &mut rows)?,
            None => self.recording(path, kind, &run_id, &mut rows)?,
        };
        if kind != Kind::Profile {
            let key = recording_key(path, &facts.program_id, facts.events);
            if let Some(other) = self.recordings.get(&key) {
                let same = (path.to_owned(), other.clone());
                self.report.same_recording.push(same);
                return Ok(None);
            }
            self.recordings.insert(key, path.display().to_string());
        }
        let run = facts.run.as_ref();
        if run.is_some_and(|r| r.exit_status.is_none()) {
            self.report.without_exit += 1;
        }
        let command_line = run.map(RunInfo::command_text);
        let exit_status = run.and_then(|r| r.exit_status).map(i64::from);
        let time = std::fs::metadata(path)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| d.as_secs());
        rows.push(
            table::RUNS,
            &[
                (&run_id).into(),
                (&facts.program_id).into(),
                (&facts.build_hash).into(),
                facts.mode.into(),
                kind.name().into(),
                path.display().to_string().as_str().into(),
                self.options.label.as_deref().into(),
                self.options.host.as_deref().into(),
                time.into(),
                command_line.as_ref().into(),
                exit_status.map_or(Value::Null, Value::Int),
                facts.events.into(),
            ],
        );
        rows.program_id = facts.program_id;
        Ok(Some((run_id, rows)))
    }

    /// A bl/ppp profile: its counts by Ball–Larus id (as `wpp profile show`) and its residual
    /// paths (as `wpp profile residual`).
    fn profile(
        &mut self,
        bytes: &[u8],
        run_id: &str,
        rows: &mut RunRows,
    ) -> Result<RunFacts, String> {
        let mut counts = std::mem::take(&mut self.counts);
        counts.clear();
        let read = self.read_counts(bytes, &mut counts, rows);
        let done = read.and_then(|rest| {
            let facts = self.profile_rows(run_id, &mut counts, rest.ppp.as_ref(), rows)?;
            Ok(RunFacts {
                run: rest.run,
                ..facts
            })
        });
        self.counts = counts;
        done
    }

    /// The `bl` counts of a profile into `counts` (function, path id, count), and the rest of
    /// its counts (`ppp`, the run) with an empty `bl`. A profile of the last build, whose
    /// program the store has, has its counts decoded one by one ([`Build::each_count`]);
    /// another is read whole and becomes the last build (the rows of a program first seen in
    /// a run that was then skipped are not stored).
    fn read_counts(
        &mut self,
        bytes: &[u8],
        counts: &mut Vec<PathCount>,
        rows: &mut RunRows,
    ) -> Result<Counts, String> {
        let last = self.last_build.as_ref();
        if let Some(last) = last.filter(|l| self.programs_stored.contains(&l.program_id)) {
            let mut ids = FunctionIds::new(&self.programs[&last.program_id]);
            let each = |name: &str, id, count| match ids.of(name) {
                Ok(f) => counts.push((f, id, count)),
                Err(e) => ids.fail(e),
            };
            if let Some(rest) = last
                .build
                .each_count(bytes, each)
                .map_err(|e| e.to_string())?
            {
                ids.failure()?;
                return Ok(rest);
            }
        }
        let file = ProfileFile::from_bytes(bytes).map_err(|e| e.to_string())?;
        self.note_build(&file.program, rows)?;
        let program = &self.programs[&self.last_build.as_ref().expect("noted").program_id];
        for (name, paths) in &file.bl.functions {
            let f = function_id(program, name)?;
            counts.extend(paths.iter().map(|(&id, &c)| (f, id, c)));
        }
        Ok(Counts {
            bl: Default::default(),
            ppp: file.ppp,
            run: file.run,
        })
    }

    /// The rows of a profile of the last build: `ppp`'s residual paths, and every path's
    /// count with `ppp`'s added by Ball–Larus id (as [`ProfileFile::path_counts`]).
    fn profile_rows(
        &self,
        run_id: &str,
        counts: &mut Vec<PathCount>,
        ppp: Option<&PppProfile>,
        rows: &mut RunRows,
    ) -> Result<RunFacts, String> {
        let last = self.last_build.as_ref().expect("the profile's build");
        let program = &self.programs[&last.program_id];
        for (name, fp) in ppp.iter().flat_map(|p| &p.functions) {
            let f = function_id(program, name)?;
            for (&id, &count) in &fp.uninteresting {
                let row = residual_row(run_id, &last.program_id, f, name, id, count);
                rows.push(table::RESIDUAL_COUNTS, &row);
            }
        }
        for (name, id, c) in ppp.into_iter().flat_map(ppp_path_counts) {
            counts.push((function_id(program, name)?, id, c));
        }
        if ppp.is_some() {
            counts.sort_unstable_by_key(|&(f, id, _)| (f, id));
            counts.dedup_by(|later, kept| {
                let same = (later.0, later.1) == (kept.0, kept.1);
                if same {
                    kept.2 = kept.2.saturating_add(later.2);
                }
                same
            });
        }
        let stored = self.paths_stored.get(&last.program_id);
        let mut events = 0u64;
        for &(f, id, count) in counts.iter() {
            events = events.saturating_add(count);
            rows.push(table::PATH_COUNTS, &count_row(run_id, f, id, count));
            note_path(program, stored, &last.program_id, (f, id), rows);
        }
        Ok(RunFacts {
            program_id: last.program_id.clone(),
            build_hash: last.build_hash.clone(),
            mode: last.mode,
            events,
            run: None,
        })
    }

    /// A `.wpp` or a trace: one walk (as `wpp annotate` and `wpp export`) for its calls,
    /// per-function and per-line counts and, in path recordings, path counts.
    fn recording(
        &mut self,
        path: &Path,
        kind: Kind,
        run_id: &str,
        rows: &mut RunRows,
    ) -> Result<RunFacts, String> {
        let recording = match kind {
            Kind::Wpp => Recording::Wpp(Box::new(WppFile::read(path).map_err(|e| e.to_string())?)),
            _ => {
                let reader = wpp_paths::trace::open(path).map_err(|e| e.to_string())?;
                Recording::Trace(Box::new(reader.allow_truncated(false).read_ahead()))
            }
        };
        let (db, map, run) = recording.walk().map_err(|e| e.to_string())?;
        let program_id = self.program(&db, rows)?;
        let name = |f: u32| {
            db.functions
                .get(f as usize)
                .map_or(format!("#{f}"), |x| x.name.clone())
        };
        let mut samples = vec![0u64; db.functions.len()];
        let mut calls: HashMap<(Option<u32>, u32), u64> = HashMap::new();
        for c in &run.contexts[1..] {
            if let Some(s) = samples.get_mut(c.function as usize) {
                *s += c.counts.iter().sum::<u64>();
            }
            let caller = run.contexts[c.parent as usize].function;
            let caller = (caller != ROOT).then_some(caller);
            *calls.entry((caller, c.function)).or_default() += c.calls;
        }
        for (f, (&n, s)) in run.calls().iter().zip(&samples).enumerate() {
            if n > 0 || *s > 0 {
                let f = f as u32;
                let function = name(f);
                let row = [
                    run_id.into(),
                    (&program_id).into(),
                    u64::from(f).into(),
                    (&function).into(),
                    n.into(),
                    (*s).into(),
                ];
                rows.push(table::FUNCTION_EVENTS, &row);
            }
        }
        let mut calls: Vec<_> = calls.into_iter().collect();
        calls.sort_unstable();
        for ((caller, callee), n) in calls {
            let (caller_name, callee_name) = (caller.map(name), name(callee));
            let row = [
                run_id.into(),
                (&program_id).into(),
                caller.map(u64::from).into(),
                caller_name.as_deref().into(),
                u64::from(callee).into(),
                (&callee_name).into(),
                n.into(),
            ];
            rows.push(table::CALLS, &row);
        }
        let lines =
            wpp_show::annotate::line_counts(&db, &map, &run, None).map_err(|e| e.to_string())?;
        for (loc, info) in lines {
            let file = Some(map.file_name(loc.file)).filter(|f| !f.is_empty());
            let row = [
                run_id.into(),
                (&program_id).into(),
                file.into(),
                u64::from(loc.line).into(),
                info.count.into(),
            ];
            rows.push(table::LINE_EVENTS, &row);
        }
        let mut paths: Vec<_> = run.path_counts.iter().map(|(&k, &n)| (k, n)).collect();
        paths.sort_unstable();
        let program = &self.programs[&program_id];
        let stored = self.paths_stored.get(&program_id);
        for &((f, id), count) in &paths {
            rows.push(table::PATH_COUNTS, &count_row(run_id, f, id, count));
            note_path(program, stored, &program_id, (f, id), rows);
        }
        let mode = if paths.is_empty() {
            "trace-blocks"
        } else {
            "trace-paths"
        };
        Ok(RunFacts {
            program_id: program_id.clone(),
            build_hash: program_id,
            mode,
            events: run.events,
            run: None,
        })
    }

    /// Makes `embedded` the last build read: its program id (adding the program's rows if the
    /// store does not have them) and build hash.
    fn note_build(&mut self, embedded: &EmbeddedProgram, rows: &mut RunRows) -> Result<(), String> {
        let build_hash = hash_hex(&postcard::to_allocvec(embedded).map_err(|e| e.to_string())?);
        let mut with_cfgs = embedded.clone();
        with_cfgs.attach_cfgs();
        let program_id = self.program(&with_cfgs.program, rows)?;
        self.last_build = Some(LastBuild {
            build: Build::of(embedded),
            program_id,
            build_hash,
            mode: embedded.mode.name(),
        });
        Ok(())
    }

    /// The id of the program of `db` (a hash of its database), adding its `functions`,
    /// `blocks` and listed `paths` rows to `rows` if the store does not have them.
    fn program(&mut self, db: &ProgramDb, rows: &mut RunRows) -> Result<String, String> {
        let encoded = postcard::to_allocvec(db).map_err(|e| e.to_string())?;
        let id = hash_hex(&encoded);
        let program = self
            .programs
            .entry(id.clone())
            .or_insert_with(|| Program::new(db));
        if !self.programs_stored.contains(&id) {
            program_rows(&id, db, program, rows);
            rows.new_program = Some(id.clone());
        }
        Ok(id)
    }
}

/// Adds path `(f, id)` of `program` to `paths` unless it is listed there (all the paths of a
/// function with few of them), `stored` or added by this run already.
fn note_path(
    program: &Program,
    stored: Option<&FxHashSet<PathKey>>,
    program_id: &str,
    (f, id): PathKey,
    rows: &mut RunRows,
) {
    if program.listed(f)
        || stored.is_some_and(|s| s.contains(&(f, id)))
        || !rows.new_paths.insert((f, id))
    {
        return;
    }
    let blocks = program.blocks(f, id);
    let row = [
        program_id.into(),
        u64::from(f).into(),
        id.into(),
        blocks.as_str().into(),
    ];
    rows.push(table::PATHS, &row);
}

/// Rows of `functions`, `blocks` and the `paths` of functions with at most [`LIST_PATHS`].
fn program_rows(id: &str, db: &ProgramDb, program: &Program, rows: &mut RunRows) {
    let map = wpp_show::SourceMap::new(db);
    for (i, f) in db.functions.iter().enumerate() {
        let fid = i as u32;
        let blocks = wpp_show::walk::block_count(f);
        let known_blocks = f.cfg.is_some() || !f.block_lines.is_empty();
        rows.push(
            table::FUNCTIONS,
            &[
                id.into(),
                u64::from(fid).into(),
                (&f.name).into(),
                f.file.as_deref().into(),
                f.line.map(u64::from).into(),
                known_blocks.then_some(blocks as u64).into(),
                program.paths_total(fid).into(),
                program.listed(fid).into(),
            ],
        );
        for b in 0..blocks as u32 {
            let loc = map.block_loc(fid, b);
            let file = Some(map.file_name(loc.file)).filter(|f| !f.is_empty());
            let line = (loc.line > 0).then_some(u64::from(loc.line));
            let row = [
                id.into(),
                u64::from(fid).into(),
                u64::from(b).into(),
                file.into(),
                line.into(),
            ];
            rows.push(table::BLOCKS, &row);
        }
        if program.listed(fid) {
            for p in 0..program.paths_total(fid).unwrap_or(0) {
                let blocks = program.blocks(fid, p);
                let row = [
                    id.into(),
                    u64::from(fid).into(),
                    p.into(),
                    blocks.as_str().into(),
                ];
                rows.push(table::PATHS, &row);
            }
        }
    }
}

/// A row of `path_counts`.
fn count_row(run: &str, f: u32, id: u64, count: u64) -> [Value<'_>; 4] {
    [run.into(), u64::from(f).into(), id.into(), count.into()]
}

/// A row of `residual_counts`.
fn residual_row<'a>(
    run: &'a str,
    program: &'a str,
    f: u32,
    name: &'a str,
    id: u64,
    count: u64,
) -> [Value<'a>; 6] {
    [
        run.into(),
        program.into(),
        u64::from(f).into(),
        name.into(),
        id.into(),
        count.into(),
    ]
}

fn function_id(program: &Program, name: &str) -> Result<u32, String> {
    program.by_name.get(name).copied().ok_or_else(|| {
        format!("counts for function `{name}`, which the program database does not have")
    })
}

/// The kind of the file at `path`, its run id and, for a profile, its bytes, mapped once for
/// the hash and the counts (reading them copied 800 KB a profile: a fifth of an ingest's time).
/// Recordings, which may be large, are hashed as they stream by and read again by their
/// readers.
///
/// A run's id is a profile's run id (`RunInfo::id`, chosen by its process: random, the same
/// in each snapshot), else the content hash of its whole file; either way a copy in another
/// folder or under another name is the same run. So two runs of a program whose profiles have
/// the same counts are two runs, and a later snapshot of a run already added is that run
/// (the first one added stays: the README says to add profiles once their programs have
/// exited). Recordings and profiles before version 5 carry no identity of their process: two
/// that left identical bytes are one run, and each snapshot of such a profile a new one.
fn identify(path: &Path) -> Result<(Kind, String, Option<Mmap>), String> {
    let mut file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let mut head = Vec::new();
    let read = (&mut file).take(8).read_to_end(&mut head);
    read.map_err(|e| e.to_string())?;
    if wpp_trace::output::is_staged_wpp(path) {
        return Err(
            "a .wpp still being written (a temporary file, renamed into place when \
                    whole): add the .wpp once it is there"
                .into(),
        );
    }
    if head.is_empty() {
        return Err("empty file (a recording cut short before it wrote anything?)".into());
    }
    let kind = Kind::of(&head).ok_or_else(|| {
        format!(
            "not a wpp profile, .wpp or binary trace (it starts with {:?})",
            String::from_utf8_lossy(&head)
        )
    })?;
    if kind == Kind::Profile {
        // SAFETY: the map is read-only. If another process rewrites the file meanwhile, reads
        // may see changed bytes (or fault on truncation, as with any mmap-based reader): the
        // profile's checksum and decoder check every byte and have no memory-safety
        // dependence on their values.
        let map = unsafe { Mmap::map(&file) }.map_err(|e| e.to_string())?;
        let id = match peek_run_id(&map) {
            Some(id) => format!("{id:032x}"),
            None => hash_hex(&map),
        };
        return Ok((kind, id, Some(map)));
    }
    if kind == Kind::Trace && !trace_ends_whole(&mut file, &head)? {
        return Err(
            "truncated: the trace has no end marker (its program may still be running, \
                    or it was cut short; `wpp compress` makes a .wpp of its whole chunks)"
                .into(),
        );
    }
    let mut hasher = XxHash3_128::new();
    hasher.write(&head);
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = file.read(&mut buf).map_err(|e| e.to_string())?;
        if n == 0 {
            break;
        }
        hasher.write(&buf[..n]);
    }
    Ok((kind, format!("{:032x}", hasher.finish_128()), None))
}

/// Whether a trace (read up to `head`) ends with its end marker, so that a live or cut trace
/// is skipped at once rather than after reading it all (trial 35 H12: 40 s); a format that
/// cannot tell passes. Leaves the file where it was.
fn trace_ends_whole(file: &mut std::fs::File, head: &[u8]) -> Result<bool, String> {
    use std::io::{Seek, SeekFrom};
    let len = wpp_trace::file::binary::CHUNK_HEADER_LEN as i64;
    let at = file.stream_position().map_err(|e| e.to_string())?;
    let size = file.metadata().map_err(|e| e.to_string())?.len();
    if size < (head.len() as u64) + len as u64 {
        return Ok(true);
    }
    let mut tail = vec![0u8; len as usize];
    file.seek(SeekFrom::End(-len)).map_err(|e| e.to_string())?;
    file.read_exact(&mut tail).map_err(|e| e.to_string())?;
    file.seek(SeekFrom::Start(at)).map_err(|e| e.to_string())?;
    Ok(wpp_trace::file::binary::ends_whole(head, &tail) != Some(false))
}

/// What tells the files of one recording apart from other runs: its raw trace and the `.wpp`
/// made of it (by the finisher, or `wpp compress`) have other bytes, so other run ids, but
/// one name before the extension (`PROGRAM.PID`), one program and as many events (trial 35
/// H4: a run added as both counted twice). Two runs whose files share a name, program and
/// event count are taken for one.
type RecordingKey = (String, String, u64);

fn recording_key(file: &Path, program_id: &str, events: u64) -> RecordingKey {
    let stem = file.file_stem().unwrap_or_default().to_string_lossy();
    (stem.into_owned(), program_id.to_owned(), events)
}

/// The id a run had in stores written before run ids were content ids: its content id and
/// its file's absolute path. Looked up too, so that adding a file again to such a store, from
/// where it was, still changes nothing.
fn legacy_run_id(path: &Path, content: &str) -> String {
    let absolute = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    hash_hex(format!("{content}\n{}", absolute.display()).as_bytes())
}

/// A 128-bit content id of `bytes` in hex, XXH3-128 (run, program, build and batch ids;
/// [`identify`] computes the same while streaming a file).
pub fn hash_hex(bytes: &[u8]) -> String {
    format!("{:032x}", XxHash3_128::oneshot(bytes))
}
