//! `wpp sql`: the store's tables and views on an embedded DataFusion session, and the query's
//! result as a table, CSV, JSON or a Parquet file.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use datafusion::arrow::record_batch::RecordBatch;
use datafusion::datasource::file_format::parquet::ParquetFormat;
use datafusion::datasource::listing::{
    ListingOptions, ListingTable, ListingTableConfig, ListingTableUrl,
};
use datafusion::datasource::MemTable;
use datafusion::error::DataFusionError;
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::prelude::{SQLOptions, SessionContext};

use crate::store::Store;
use crate::table::{Table, TABLES};
use crate::views::VIEWS;
use crate::DbError;

/// How a result is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// An aligned text table.
    Table,
    /// CSV with a header line.
    Csv,
    /// A JSON array of objects, one per row.
    Json,
    /// A Parquet file (needs an output file).
    Parquet,
}

/// A session with every table of `store` (its committed files) and every view registered.
pub async fn session(store: &Store) -> Result<SessionContext, DbError> {
    store.require_totals()?;
    let ctx = SessionContext::new();
    for t in TABLES {
        register(&ctx, store, t).await?;
    }
    for v in VIEWS {
        ctx.sql(&format!("CREATE VIEW {} AS {}", v.name, v.sql))
            .await
            .map_err(|e| DbError::Query(format!("view {}: {e}", v.name)))?;
    }
    Ok(ctx)
}

async fn register(ctx: &SessionContext, store: &Store, table: Table) -> Result<(), DbError> {
    let files = store.files(table)?;
    let schema = table.schema();
    let query_err = |e: datafusion::error::DataFusionError| {
        DbError::Query(format!("table {}: {e}", table.name))
    };
    if files.is_empty() {
        let empty = MemTable::try_new(schema, vec![vec![]]).map_err(query_err)?;
        ctx.register_table(table.name, Arc::new(empty))
            .map_err(query_err)?;
        return Ok(());
    }
    let mut urls = Vec::new();
    for f in &files {
        let abs = std::path::absolute(f).map_err(|e| DbError::io(f, e))?;
        urls.push(ListingTableUrl::parse(abs.to_string_lossy()).map_err(query_err)?);
    }
    let options =
        ListingOptions::new(Arc::new(ParquetFormat::default())).with_file_extension(".parquet");
    let config = ListingTableConfig::new_with_multi_paths(urls)
        .with_listing_options(options)
        .with_schema(schema);
    let provider = ListingTable::try_new(config).map_err(query_err)?;
    ctx.register_table(table.name, Arc::new(provider))
        .map_err(query_err)?;
    Ok(())
}

/// Runs `sql` on the store and collects the result: at least one batch (an empty one for no
/// rows), so that the output has the result's columns. Only queries: a statement that would
/// change tables, files or the session (`DROP TABLE`, `INSERT`, `COPY`, `SET`…) is refused,
/// as the store is changed by `wpp db` only. A failure that is a damaged Parquet file names
/// the file.
pub async fn run(store: &Store, sql: &str) -> Result<Vec<RecordBatch>, DbError> {
    let ctx = session(store).await?;
    let plan = ctx
        .state()
        .create_logical_plan(sql)
        .await
        .map_err(|e| query_error(store, e))?;
    // The whole plan: a `COPY … TO` (which writes any file, a store's own included) may hide
    // under an `EXPLAIN ANALYZE`, which runs it.
    let reads_only = SQLOptions::new()
        .with_allow_ddl(false)
        .with_allow_dml(false)
        .with_allow_statements(false);
    if reads_only.verify_plan(&plan).is_err() {
        return Err(DbError::Query(format!(
            "`{}` is not a query: `wpp sql` only reads the store (`wpp db add` and `wpp db \
             compact` change it)",
            sql.trim()
        )));
    }
    let df = ctx
        .execute_logical_plan(plan)
        .await
        .map_err(|e| query_error(store, e))?;
    let schema = Arc::new(df.schema().as_arrow().clone());
    let mut batches = df.collect().await.map_err(|e| query_error(store, e))?;
    if batches.iter().all(|b| b.num_rows() == 0) {
        batches = vec![RecordBatch::new_empty(schema)];
    }
    Ok(batches)
}

/// The error of a query: DataFusion's, after the name of the first committed file that does not
/// read as Parquet if it is a Parquet error (DataFusion's does not say which file).
fn query_error(store: &Store, e: DataFusionError) -> DbError {
    let parquet = matches!(e.find_root(), DataFusionError::ParquetError(_));
    let damaged = parquet
        .then(|| store.first_damaged().ok().flatten())
        .flatten();
    match damaged {
        Some(file) => DbError::Query(format!("{}: {e}", file.display())),
        None => DbError::Query(e.to_string()),
    }
}

/// Writes `batches` to `out` in `format` (not [`Format::Parquet`], see [`write_parquet`]).
pub fn write(batches: &[RecordBatch], format: Format, out: &mut impl Write) -> Result<(), DbError> {
    let arrow_err = |e| DbError::arrow("result", e);
    match format {
        Format::Table => {
            let text = datafusion::arrow::util::pretty::pretty_format_batches(batches)
                .map_err(arrow_err)?;
            writeln!(out, "{text}").map_err(|e| DbError::io(Path::new("-"), e))
        }
        Format::Csv => {
            let mut w = datafusion::arrow::csv::WriterBuilder::new()
                .with_header(true)
                .build(out);
            batches
                .iter()
                .try_for_each(|b| w.write(b))
                .map_err(arrow_err)
        }
        Format::Json => {
            let mut w = datafusion::arrow::json::ArrayWriter::new(out);
            let refs: Vec<&RecordBatch> = batches.iter().collect();
            w.write_batches(&refs).map_err(arrow_err)?;
            w.finish().map_err(arrow_err)
        }
        Format::Parquet => Err(DbError::Query(
            "--format parquet writes a file: give it with -o FILE".into(),
        )),
    }
}

/// Writes `batches` as a Parquet file at `path`.
pub fn write_parquet(batches: &[RecordBatch], path: &Path) -> Result<(), DbError> {
    let Some(first) = batches.first() else {
        return Err(DbError::Query(format!(
            "the query returned no record batch to write to {}",
            path.display()
        )));
    };
    let file = std::fs::File::create(path).map_err(|e| DbError::io(path, e))?;
    let mut w =
        ArrowWriter::try_new(file, first.schema(), None).map_err(|e| DbError::parquet(path, e))?;
    for b in batches {
        w.write(b).map_err(|e| DbError::parquet(path, e))?;
    }
    w.close().map_err(|e| DbError::parquet(path, e))?;
    Ok(())
}
