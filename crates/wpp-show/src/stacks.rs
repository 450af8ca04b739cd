//! The whole run as call stacks with exact counts: folded stacks (Brendan Gregg's format), an
//! SVG flame graph drawn by inferno, pprof's `profile.proto` and speedscope's JSON.
//!
//! Each sample of the crate docs' definition is one stack `caller:line;…;leaf:line`; the
//! counts are the walk's, so every format shows the same numbers.

use std::io::Write;

use prost::Message;
use rustc_hash::FxHashMap;
use serde::Serialize;
use wpp_trace::ProgramDb;

use crate::source::SourceMap;
use crate::walk::Run;
use crate::{frame_name, function_name, ShowError};

/// Writes folded stacks, one `frame;frame;… count` line per calling context and line, in the
/// order the walk met them.
pub fn write_folded(
    db: &ProgramDb,
    map: &SourceMap,
    run: &Run,
    out: &mut impl Write,
) -> Result<(), ShowError> {
    for line in folded_lines(db, map, run) {
        writeln!(out, "{line}")?;
    }
    Ok(())
}

/// The folded-stack lines of a run.
pub fn folded_lines(db: &ProgramDb, map: &SourceMap, run: &Run) -> Vec<String> {
    run.samples()
        .map(|(ctx, slot, n)| {
            let names: Vec<String> = run
                .stack(ctx, slot)
                .into_iter()
                .map(|(f, s)| frame_name(db, map, f, s))
                .collect();
            format!("{} {n}", names.join(";"))
        })
        .collect()
}

/// Writes an SVG flame graph of the whole run (inferno; every frame is labelled
/// `function:line`, narrow ones as far as they fit).
pub fn write_svg(
    db: &ProgramDb,
    map: &SourceMap,
    run: &Run,
    title: &str,
    out: impl Write,
) -> Result<(), ShowError> {
    let lines = folded_lines(db, map, run);
    let mut opt = inferno::flamegraph::Options::default();
    opt.title = title.to_owned();
    opt.count_name = "events".into();
    if lines.is_empty() {
        return Err(ShowError::Request(
            "the recording has no block or path events to draw".into(),
        ));
    }
    inferno::flamegraph::from_lines(&mut opt, lines.iter().map(String::as_str), out)
        .map_err(|e| ShowError::Io(std::io::Error::other(e.to_string())))
}

/// pprof's `profile.proto` messages (github.com/google/pprof/proto/profile.proto), the fields
/// wpp fills, with their field numbers.
pub mod proto {
    /// `perftools.profiles.Profile`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Profile {
        /// What each sample value counts.
        #[prost(message, repeated, tag = "1")]
        pub sample_type: Vec<ValueType>,
        /// The samples.
        #[prost(message, repeated, tag = "2")]
        pub sample: Vec<Sample>,
        /// Locations (one per function and line).
        #[prost(message, repeated, tag = "4")]
        pub location: Vec<Location>,
        /// Functions.
        #[prost(message, repeated, tag = "5")]
        pub function: Vec<Function>,
        /// Every string; index 0 is `""`.
        #[prost(string, repeated, tag = "6")]
        pub string_table: Vec<String>,
        /// The unit of `period`.
        #[prost(message, optional, tag = "11")]
        pub period_type: Option<ValueType>,
        /// Events per sample (1).
        #[prost(int64, tag = "12")]
        pub period: i64,
    }

    /// `ValueType`: type and unit as string-table indices.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ValueType {
        /// Index of the type's name.
        #[prost(int64, tag = "1")]
        pub r#type: i64,
        /// Index of the unit's name.
        #[prost(int64, tag = "2")]
        pub unit: i64,
    }

    /// `Sample`: a stack (leaf first) and its values.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Sample {
        /// Location ids, leaf first.
        #[prost(uint64, repeated, tag = "1")]
        pub location_id: Vec<u64>,
        /// One value per sample type.
        #[prost(int64, repeated, tag = "2")]
        pub value: Vec<i64>,
    }

    /// `Location`: here one function at one line.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Location {
        /// Non-zero id.
        #[prost(uint64, tag = "1")]
        pub id: u64,
        /// The line(s).
        #[prost(message, repeated, tag = "4")]
        pub line: Vec<Line>,
    }

    /// `Line`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Line {
        /// The function's id.
        #[prost(uint64, tag = "1")]
        pub function_id: u64,
        /// The source line (0 unknown).
        #[prost(int64, tag = "2")]
        pub line: i64,
    }

    /// `Function`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Function {
        /// Non-zero id.
        #[prost(uint64, tag = "1")]
        pub id: u64,
        /// Index of the name.
        #[prost(int64, tag = "2")]
        pub name: i64,
        /// Index of the linkage name.
        #[prost(int64, tag = "3")]
        pub system_name: i64,
        /// Index of the source file name.
        #[prost(int64, tag = "4")]
        pub filename: i64,
        /// First line.
        #[prost(int64, tag = "5")]
        pub start_line: i64,
    }
}

/// Interns strings for pprof's string table.
#[derive(Default)]
struct Strings {
    table: Vec<String>,
    index: FxHashMap<String, i64>,
}

impl Strings {
    fn new() -> Strings {
        let mut s = Strings::default();
        s.get("");
        s
    }

    fn get(&mut self, s: &str) -> i64 {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        self.table.push(s.to_owned());
        self.index.insert(s.to_owned(), self.table.len() as i64 - 1);
        self.table.len() as i64 - 1
    }
}

/// The run as a pprof profile: sample type `events/count`, one sample per calling context
/// and line with its exact count, one location per function and line.
pub fn pprof_profile(db: &ProgramDb, map: &SourceMap, run: &Run) -> proto::Profile {
    let mut strings = Strings::new();
    let mut functions: FxHashMap<u32, u64> = FxHashMap::default();
    let mut locations: FxHashMap<(u32, u32), u64> = FxHashMap::default();
    let mut profile = proto::Profile {
        sample_type: vec![proto::ValueType {
            r#type: strings.get("events"),
            unit: strings.get("count"),
        }],
        period_type: Some(proto::ValueType {
            r#type: strings.get("events"),
            unit: strings.get("count"),
        }),
        period: 1,
        ..Default::default()
    };
    for (ctx, slot, n) in run.samples() {
        let mut ids = Vec::new();
        for (f, s) in run.stack(ctx, slot).into_iter().rev() {
            let next = locations.len() as u64 + 1;
            let id = *locations.entry((f, s)).or_insert(next);
            if id == next {
                let fid = pprof_function(db, map, f, &mut functions, &mut strings, &mut profile);
                profile.location.push(proto::Location {
                    id,
                    line: vec![proto::Line {
                        function_id: fid,
                        line: i64::from(map.loc(f, s).line),
                    }],
                });
            }
            ids.push(id);
        }
        profile.sample.push(proto::Sample {
            location_id: ids,
            value: vec![n as i64],
        });
    }
    profile.string_table = strings.table;
    profile
}

fn pprof_function(
    db: &ProgramDb,
    map: &SourceMap,
    f: u32,
    functions: &mut FxHashMap<u32, u64>,
    strings: &mut Strings,
    profile: &mut proto::Profile,
) -> u64 {
    if let Some(&id) = functions.get(&f) {
        return id;
    }
    let id = functions.len() as u64 + 1;
    functions.insert(f, id);
    let name = strings.get(&function_name(db, f));
    let file = map.loc(f, 0).file;
    let start = db
        .function(wpp_trace::FunctionId(f))
        .and_then(|func| func.line)
        .unwrap_or(0);
    profile.function.push(proto::Function {
        id,
        name,
        system_name: name,
        filename: strings.get(map.file_name(file)),
        start_line: i64::from(start),
    });
    id
}

/// Writes the pprof profile gzip-compressed, as `go tool pprof` reads it.
pub fn write_pprof(
    db: &ProgramDb,
    map: &SourceMap,
    run: &Run,
    out: impl Write,
) -> Result<(), ShowError> {
    let bytes = pprof_profile(db, map, run).encode_to_vec();
    let mut gz = flate2::write::GzEncoder::new(out, flate2::Compression::default());
    gz.write_all(&bytes)?;
    gz.finish()?;
    Ok(())
}

#[derive(Serialize)]
struct SpeedscopeFile<'a> {
    #[serde(rename = "$schema")]
    schema: &'a str,
    shared: Shared,
    profiles: Vec<SampledProfile>,
    name: String,
    exporter: String,
}

#[derive(Serialize)]
struct Shared {
    frames: Vec<Frame>,
}

#[derive(Serialize)]
struct Frame {
    name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    file: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    line: Option<u32>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SampledProfile {
    r#type: &'static str,
    name: String,
    unit: &'static str,
    start_value: u64,
    end_value: u64,
    samples: Vec<Vec<usize>>,
    weights: Vec<u64>,
}

/// Writes the run as a speedscope file: one sampled profile whose samples are the stacks
/// (outermost frame first) and whose weights are their exact event counts.
pub fn write_speedscope(
    db: &ProgramDb,
    map: &SourceMap,
    run: &Run,
    name: &str,
    out: impl Write,
) -> Result<(), ShowError> {
    let mut frames = Vec::new();
    let mut index: FxHashMap<(u32, u32), usize> = FxHashMap::default();
    let mut samples = Vec::new();
    let mut weights = Vec::new();
    for (ctx, slot, n) in run.samples() {
        let stack = run
            .stack(ctx, slot)
            .into_iter()
            .map(|(f, s)| {
                *index.entry((f, s)).or_insert_with(|| {
                    let loc = map.loc(f, s);
                    frames.push(Frame {
                        name: frame_name(db, map, f, s),
                        file: Some(map.file_name(loc.file).to_owned()).filter(|n| !n.is_empty()),
                        line: Some(loc.line).filter(|&l| l > 0),
                    });
                    frames.len() - 1
                })
            })
            .collect();
        samples.push(stack);
        weights.push(n);
    }
    let total = weights.iter().sum();
    let file = SpeedscopeFile {
        schema: "https://www.speedscope.app/file-format-schema.json",
        shared: Shared { frames },
        profiles: vec![SampledProfile {
            r#type: "sampled",
            name: name.to_owned(),
            unit: "none",
            start_value: 0,
            end_value: total,
            samples,
            weights,
        }],
        name: name.to_owned(),
        exporter: format!("wpp {}", env!("CARGO_PKG_VERSION")),
    };
    serde_json::to_writer(out, &file).map_err(|e| ShowError::Io(e.into()))
}
