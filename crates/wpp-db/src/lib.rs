//! Many runs in SQL: a columnar store (Parquet) of the path profiles and recordings of a test
//! suite or a fleet, queried with SQL on embedded Apache DataFusion (`wpp db add`, `wpp sql`).
//!
//! This is the only crate of the workspace that depends on DataFusion (and through it Arrow and
//! Parquet); `wpp db` and `wpp sql` run its `wpp-db` binary, so the core crates and `wpp` build
//! without it.
//!
//! # The store
//!
//! A folder with one subfolder of Parquet files per table, a `manifest` of committed batches
//! (which makes the folder a store) and the `lock` its writers take ([`store`] says how ingest
//! stays append-only and crash-safe, and writers one at a time). Every column is `Int64`, `Utf8`
//! or `Boolean` (no unsigned types, so Spark reads the files unchanged); counts saturate at
//! `i64::MAX`. Ids are 128-bit hex content hashes (XXH3-128):
//!
//! - a **run id** is a profile's own (`wpp_abi::profile::RunInfo::id`, chosen at random by
//!   its process and kept in its snapshots), else a hash of the run's file (its bytes, not its
//!   path): adding a file again, or a copy of it from elsewhere, changes nothing; recordings
//!   and older profiles carry no process identity, so two of them that left identical bytes are
//!   one run ([`ingest`]'s `identify`);
//! - a **program id** hashes the program database (names, source lines, CFGs), so runs of one
//!   build share it, different builds differ, and the `bl` and `ppp` builds of one program (the
//!   same CFGs, so the same Ball–Larus ids) share it;
//! - a **build hash** hashes a profile's whole embedded program (mode and all; the program id
//!   for recordings).
//!
//! | table | one row per | columns |
//! |---|---|---|
//! | `runs` | ingested file | `run_id`, `program_id`, `build_hash`, `mode` (`bl`, `ppp`, `trace-paths`, `trace-blocks`), `kind` (`profile`, `wpp`, `trace`), `file` (as given), `label` and `host` (`db add --label/--host`), `time` (the file's modification time, Unix seconds), `command_line` (its arguments, quoted as a POSIX shell would split them) and `exit_status` (as its parent saw it), from a bl/ppp profile's run (`wpp_abi::profile::RunInfo`); null for recordings, merged profiles, profiles before version 4, and runs that died of a signal or replaced themselves by `exec`, `events` (a profile's path executions; a recording's events) |
//! | `functions` | function of a program | `program_id`, `function_id` (its index in the program database), `function`, `file`, `line`, `blocks`, `paths_total` (Ball–Larus paths, null without a CFG), `paths_listed` (whether `paths` lists all of them: at most [`ingest::LIST_PATHS`]) |
//! | `blocks` | block of a function | `program_id`, `function_id`, `block_id`, `file`, `line` |
//! | `paths` | Ball–Larus path | `program_id`, `function_id`, `path_id`, `blocks` (as `wpp profile show` prints them: `b0 b2 b3'`); all paths of listed functions, the executed ones of the others |
//! | `path_counts` | (run, path) executed | `run_id`, `function_id`, `path_id`, `count`: a profile's counts by Ball–Larus id (a `ppp` run's interesting and uninteresting executions together, as `wpp profile show`); a path recording's. Ids only ([`table::PATH_COUNTS`] says why): the program is the run's, the name the function's |
//! | `residual_counts` | (ppp run, uninteresting path) | `run_id`, `program_id`, `function_id`, `function`, `path_id`, `count`: the paths outside the build's interesting set, PPP §1's residual paths (as `wpp profile residual`) |
//! | `calls` | (recording, caller, callee) | `run_id`, `program_id`, `caller_id`, `caller` (null: called from outside any function), `callee_id`, `callee`, `count` |
//! | `function_events` | (recording, function) | `run_id`, `program_id`, `function_id`, `function`, `calls` (entries, as `wpp functions`), `samples` (block and path events run in it) |
//! | `line_events` | (recording, source line) | `run_id`, `program_id`, `file`, `line`, `count` (as `wpp annotate`/lcov) |
//! | `path_totals` | (ingest batch, path) | `program_id`, `label`, `function_id`, `function`, `path_id`, `runs` (the batch's runs that took the path), `executions` (their `path_counts` summed): sum over batches for a label's or the store's totals |
//! | `function_totals` | (ingest batch, function) | `program_id`, `label`, `function_id`, `function`, `runs` (the batch's runs with a path of the function), `executions` |
//!
//! The [`views`] answer the common questions: path coverage, untaken paths, residual paths and
//! the runs that took them, path share changes between labels, functions by path diversity.
//!
//! # Build cost
//!
//! DataFusion is built with the `parquet`, `sql`, `string_expressions` and `math_expressions` features only
//! (no crypto, regex, nested or datetime functions, no compression codecs for CSV/JSON sources;
//! Parquet keeps its default codecs, which DataFusion turns on). The store's files are zstd.

#![deny(missing_docs)]

pub mod ingest;
pub mod query;
pub mod spark;
pub mod store;
pub mod table;
pub mod totals;
pub mod views;

use std::path::{Path, PathBuf};

/// Errors of the store. Each names its file; the OS's, Parquet's or Arrow's reason is its
/// [`source`](std::error::Error::source), not repeated in its message (`{:#}` of an
/// `anyhow::Error` says it once).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DbError {
    /// A file of the store could not be read or written.
    #[error("{}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A Parquet file of the store could not be read or written.
    #[error("{}", path.display())]
    Parquet {
        /// The file.
        path: PathBuf,
        /// Why.
        source: datafusion::parquet::errors::ParquetError,
    },
    /// Rows of a table could not be assembled.
    #[error("{what}")]
    Arrow {
        /// The table or result.
        what: String,
        /// Why.
        source: datafusion::arrow::error::ArrowError,
    },
    /// A folder given as a store is not one (missing, a file, or a folder without a
    /// manifest).
    #[error("{} is not a wpp store: {why}", path.display())]
    NotAStore {
        /// The folder.
        path: PathBuf,
        /// What it is instead.
        why: String,
    },
    /// A query failed (its message says why, with DataFusion's words).
    #[error("{0}")]
    Query(String),
}

impl DbError {
    fn io(path: &Path, source: std::io::Error) -> DbError {
        DbError::Io {
            path: path.to_owned(),
            source,
        }
    }

    fn parquet(path: &Path, source: datafusion::parquet::errors::ParquetError) -> DbError {
        DbError::Parquet {
            path: path.to_owned(),
            source,
        }
    }

    fn arrow(what: &str, source: datafusion::arrow::error::ArrowError) -> DbError {
        DbError::Arrow {
            what: what.to_owned(),
            source,
        }
    }
}
