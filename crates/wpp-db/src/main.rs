//! The `wpp-db` command (also run as `wpp db …` and `wpp sql …`): ingest runs into a Parquet
//! store, compact it, query it with SQL. See the `wpp_db` crate docs for the schema.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use wpp_db::ingest::{self, Ingest, Options};
use wpp_db::query::{self, Format};
use wpp_db::store::{unique, Store};
use wpp_db::views::VIEWS;

/// Many runs' path profiles and recordings in a Parquet store, queried with SQL.
#[derive(Parser)]
#[command(name = "wpp-db", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Add bl/ppp profiles and recordings (`.wpp`, binary traces) to the store; folders are
    /// searched for `*.blprof`, `*.pppprof`, `*.wpp`, `*.trace`. Files already in the store
    /// (the same bytes, from anywhere) are left as they are; unreadable or truncated files are
    /// named and skipped (exit status 1). One writer at a time: a second waits.
    Add {
        /// Files and folders.
        #[arg(required = true)]
        inputs: Vec<PathBuf>,
        /// The store (a folder, created if missing or empty).
        #[arg(long)]
        db: PathBuf,
        /// `runs.label` of these runs (e.g. a commit, or `test` and `field`).
        #[arg(long)]
        label: Option<String>,
        /// `runs.host` of these runs.
        #[arg(long)]
        host: Option<String>,
        /// Runs per committed batch: one Parquet file per table, visible once all its runs are in.
        #[arg(long, default_value_t = 1000)]
        batch_runs: usize,
    },
    /// Merge the store's files into one file per table.
    Compact {
        /// The store.
        #[arg(long)]
        db: PathBuf,
    },
    /// Run a SQL query on the store's tables and views.
    Sql {
        /// The query.
        query: String,
        /// The store.
        #[arg(long)]
        db: PathBuf,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
        /// Write here instead of standard output (required for parquet).
        #[arg(short, long)]
        output: Option<PathBuf>,
    },
    /// List the views with their queries.
    Views,
    /// Print what `tests/spark_views.py` needs to run the views on Apache Spark over the
    /// store's files (JSON: tables with their DDL and files, views, queries).
    SparkSpec {
        /// The store.
        #[arg(long)]
        db: PathBuf,
        /// Name the files under this URL instead of their local paths: the store folder's URL
        /// once copied to object storage (e.g. `s3a://BUCKET/STORE`).
        #[arg(long)]
        url_prefix: Option<String>,
    },
}

fn main() -> ExitCode {
    match run(Cli::parse().command) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("wpp-db: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Add {
            inputs,
            db,
            label,
            host,
            batch_runs,
        } => add(
            &inputs,
            &db,
            Options {
                label,
                host,
                batch_runs,
            },
        ),
        Command::Compact { db } => {
            let store = Store::open_for_writing(&db, || waiting(&db))?;
            let batch = format!("compact-{}", ingest::hash_hex(unique().as_bytes()));
            let readers = || {
                eprintln!(
                    "wpp-db: waiting for readers of {} before deleting the merged files",
                    db.display()
                )
            };
            let merged = store.compact(&batch, &readers)?;
            eprintln!("{}: {merged} batches merged", db.display());
            Ok(ExitCode::SUCCESS)
        }
        Command::Sql {
            query,
            db,
            format,
            output,
        } => sql(&query, &db, format, output),
        Command::SparkSpec { db, url_prefix } => {
            let spec = wpp_db::spark::spec(&Store::open(&db)?, url_prefix.as_deref())?;
            print(format!("{spec}\n"))
        }
        Command::Views => {
            let text: String = VIEWS
                .iter()
                .map(|v| {
                    let (name, about, sql) = (v.name, v.about, v.sql);
                    format!("-- {name}: {about}\nCREATE VIEW {name} AS\n{sql};\n\n")
                })
                .collect();
            print(&text)
        }
    }
}

/// Writes `text` to standard output; a reader that went away (`| head`) is not an error.
fn print(text: impl AsRef<[u8]>) -> anyhow::Result<ExitCode> {
    match std::io::stdout().lock().write_all(text.as_ref()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(e).context("cannot write to standard output")
        }
        _ => Ok(ExitCode::SUCCESS),
    }
}

/// Says that this writer waits for another's lock on the store `db`.
fn waiting(db: &std::path::Path) {
    eprintln!("wpp-db: waiting for another writer of {}", db.display());
}

/// `wpp db add`: every file, with a progress bar on a terminal.
fn add(inputs: &[PathBuf], db: &std::path::Path, options: Options) -> anyhow::Result<ExitCode> {
    let files = ingest::expand(inputs)?;
    let store = Store::create_for_writing(db, || waiting(db))?;
    let mut ingest = Ingest::new(&store, options)?;
    let bar = if std::io::stderr().is_terminal() {
        ProgressBar::new(files.len() as u64)
    } else {
        ProgressBar::hidden()
    };
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} files {per_sec} {eta}")
            .context("progress template")?,
    );
    for f in &files {
        ingest.add(f)?;
        bar.inc(1);
    }
    bar.finish_and_clear();
    let report = ingest.finish()?;
    for (path, why) in &report.skipped {
        eprintln!("wpp-db: skipped {}: {why}", path.display());
    }
    for (path, other) in &report.same_recording {
        eprintln!(
            "wpp-db: {} is another file of the recording the store has as {other} (the same \
             name, program and events): not added again",
            path.display()
        );
    }
    for path in &report.later_snapshots {
        eprintln!(
            "wpp-db: {} is the whole run of a profile the store has from a snapshot taken while \
             the program ran (no exit status): the store keeps that snapshot; add a running \
             program's profiles once it has exited, into a new store to count them whole",
            path.display()
        );
    }
    if report.without_exit > 0 {
        eprintln!(
            "wpp-db: note: {} profiles added have no exit status: snapshots of running programs \
             (the store keeps the first snapshot added of a run) or runs killed by a signal",
            report.without_exit
        );
    }
    eprintln!(
        "{}: {} runs added, {} already present, {} skipped ({} rows, {} batches)",
        db.display(),
        report.added,
        report.present,
        report.skipped.len(),
        report.rows,
        report.batches
    );
    Ok(if report.skipped.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// `wpp sql`.
fn sql(
    text: &str,
    db: &std::path::Path,
    format: Format,
    output: Option<PathBuf>,
) -> anyhow::Result<ExitCode> {
    let store = Store::open(db)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .context("cannot start the query runtime")?;
    let batches = runtime.block_on(query::run(&store, text))?;
    // Its files may go (a compaction) once the rows are read, before they are printed.
    drop(store);
    match (format, output) {
        (Format::Parquet, Some(path)) => query::write_parquet(&batches, &path)?,
        (_, Some(path)) => {
            let mut f = std::io::BufWriter::new(
                std::fs::File::create(&path)
                    .with_context(|| format!("cannot write {}", path.display()))?,
            );
            query::write(&batches, format, &mut f)?;
        }
        (_, None) => {
            // Whole, so that a reader that leaves early (`| head`) is told from a failed write
            // (the CSV writer turns the pipe's error into text).
            let mut text = Vec::new();
            query::write(&batches, format, &mut text)?;
            return print(text);
        }
    }
    Ok(ExitCode::SUCCESS)
}
