//! The tables of the store: their Arrow schemas and row buffers.
//!
//! Every column is a signed `Int64`, a `Utf8` or a `Boolean`, so Spark and other engines read
//! the Parquet files unchanged (no unsigned types). Counts above `i64::MAX` are stored as
//! `i64::MAX` (a saturated count; wpp's own counters saturate at `u64::MAX`).

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, BooleanBuilder, Int64Builder, StringBuilder};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::arrow::error::ArrowError;
use datafusion::arrow::record_batch::RecordBatch;

/// The type of one column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColumnType {
    /// `Int64`.
    Int,
    /// `Utf8`.
    Text,
    /// `Boolean`.
    Bool,
}

use ColumnType::{Bool, Int, Text};

/// One table: its name (the folder of its Parquet files) and columns `(name, type, nullable)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Table {
    /// The table's name in SQL and its folder in the store.
    pub name: &'static str,
    /// Columns: name, type, whether it may be null.
    pub columns: &'static [(&'static str, ColumnType, bool)],
}

/// `runs`: one row per ingested file (crate docs).
pub const RUNS: Table = Table {
    name: "runs",
    columns: &[
        ("run_id", Text, false),
        ("program_id", Text, false),
        ("build_hash", Text, false),
        ("mode", Text, false),
        ("kind", Text, false),
        ("file", Text, false),
        ("label", Text, true),
        ("host", Text, true),
        ("time", Int, true),
        ("command_line", Text, true),
        ("exit_status", Int, true),
        ("events", Int, false),
    ],
};

/// `functions`: one row per function of each program.
pub const FUNCTIONS: Table = Table {
    name: "functions",
    columns: &[
        ("program_id", Text, false),
        ("function_id", Int, false),
        ("function", Text, false),
        ("file", Text, true),
        ("line", Int, true),
        ("blocks", Int, true),
        ("paths_total", Int, true),
        ("paths_listed", Bool, false),
    ],
};

/// `blocks`: one row per block of each function with a CFG or block lines.
pub const BLOCKS: Table = Table {
    name: "blocks",
    columns: &[
        ("program_id", Text, false),
        ("function_id", Int, false),
        ("block_id", Int, false),
        ("file", Text, true),
        ("line", Int, true),
    ],
};

/// `paths`: Ball–Larus paths with their blocks: every path of a function with few paths, the
/// executed ones of the others.
pub const PATHS: Table = Table {
    name: "paths",
    columns: &[
        ("program_id", Text, false),
        ("function_id", Int, false),
        ("path_id", Int, false),
        ("blocks", Text, false),
    ],
};

/// `path_counts`: executions of each path in each run. The largest table by far (a row per
/// run and path: 50 M rows for 10^4 SQLite runs), so it has ids only: the run's program is in
/// `runs`, the function's name in `functions` (each a string the Parquet writer would look up
/// in its dictionary per row).
pub const PATH_COUNTS: Table = Table {
    name: "path_counts",
    columns: &[
        ("run_id", Text, false),
        ("function_id", Int, false),
        ("path_id", Int, false),
        ("count", Int, false),
    ],
};

/// `residual_counts`: the uninteresting paths of each `ppp` run (PPP §1's residual paths),
/// with their program and function names (few rows: the paths testing did not predict).
pub const RESIDUAL_COUNTS: Table = Table {
    name: "residual_counts",
    columns: &[
        ("run_id", Text, false),
        ("program_id", Text, false),
        ("function_id", Int, false),
        ("function", Text, false),
        ("path_id", Int, false),
        ("count", Int, false),
    ],
};

/// `calls`: calls from one function to another in each recording.
pub const CALLS: Table = Table {
    name: "calls",
    columns: &[
        ("run_id", Text, false),
        ("program_id", Text, false),
        ("caller_id", Int, true),
        ("caller", Text, true),
        ("callee_id", Int, false),
        ("callee", Text, false),
        ("count", Int, false),
    ],
};

/// `function_events`: per function of each recording, its calls and samples.
pub const FUNCTION_EVENTS: Table = Table {
    name: "function_events",
    columns: &[
        ("run_id", Text, false),
        ("program_id", Text, false),
        ("function_id", Int, false),
        ("function", Text, false),
        ("calls", Int, false),
        ("samples", Int, false),
    ],
};

/// `line_events`: per source line of each recording, its executions.
pub const LINE_EVENTS: Table = Table {
    name: "line_events",
    columns: &[
        ("run_id", Text, false),
        ("program_id", Text, false),
        ("file", Text, true),
        ("line", Int, false),
        ("count", Int, false),
    ],
};

/// `path_totals`: per batch and path, the runs of the batch that took it and its executions
/// ([`crate::totals`]: what the views over many runs read instead of `path_counts`).
pub const PATH_TOTALS: Table = Table {
    name: "path_totals",
    columns: &[
        ("program_id", Text, false),
        ("label", Text, true),
        ("function_id", Int, false),
        ("function", Text, false),
        ("path_id", Int, false),
        ("runs", Int, false),
        ("executions", Int, false),
    ],
};

/// `function_totals`: per batch and function, the runs of the batch that took any of its
/// paths and their executions ([`crate::totals`]).
pub const FUNCTION_TOTALS: Table = Table {
    name: "function_totals",
    columns: &[
        ("program_id", Text, false),
        ("label", Text, true),
        ("function_id", Int, false),
        ("function", Text, false),
        ("runs", Int, false),
        ("executions", Int, false),
    ],
};

/// Every table, `runs` first.
pub const TABLES: [Table; 11] = [
    RUNS,
    FUNCTIONS,
    BLOCKS,
    PATHS,
    PATH_COUNTS,
    RESIDUAL_COUNTS,
    CALLS,
    FUNCTION_EVENTS,
    LINE_EVENTS,
    PATH_TOTALS,
    FUNCTION_TOTALS,
];

impl Table {
    /// The Arrow schema.
    pub fn schema(&self) -> SchemaRef {
        let fields: Vec<Field> = self
            .columns
            .iter()
            .map(|&(name, ty, nullable)| {
                let ty = match ty {
                    Int => DataType::Int64,
                    Text => DataType::Utf8,
                    Bool => DataType::Boolean,
                };
                Field::new(name, ty, nullable)
            })
            .collect();
        Arc::new(Schema::new(fields))
    }
}

/// One value of a row. Text is borrowed: a row is copied into its columns as it is pushed, so
/// the millions of rows of an ingest allocate nothing of their own (issue 16 item 5).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value<'a> {
    /// An integer.
    Int(i64),
    /// A string.
    Text(&'a str),
    /// A boolean.
    Bool(bool),
    /// Null.
    Null,
}

impl From<u64> for Value<'_> {
    /// Saturates at `i64::MAX` (module docs).
    fn from(v: u64) -> Self {
        Value::Int(i64::try_from(v).unwrap_or(i64::MAX))
    }
}

impl<'a> From<&'a str> for Value<'a> {
    fn from(v: &'a str) -> Self {
        Value::Text(v)
    }
}

impl<'a> From<&'a String> for Value<'a> {
    fn from(v: &'a String) -> Self {
        Value::Text(v)
    }
}

impl From<bool> for Value<'_> {
    fn from(v: bool) -> Self {
        Value::Bool(v)
    }
}

impl<'a, T: Into<Value<'a>>> From<Option<T>> for Value<'a> {
    fn from(v: Option<T>) -> Self {
        v.map_or(Value::Null, Into::into)
    }
}

/// A column being filled.
#[derive(Debug)]
enum Column {
    Int(Int64Builder),
    Text(StringBuilder),
    Bool(BooleanBuilder),
}

/// Rows of one table, buffered column by column until written.
#[derive(Debug)]
pub struct Rows {
    table: Table,
    columns: Vec<Column>,
    len: usize,
}

impl Rows {
    /// No rows of `table`.
    pub fn new(table: Table) -> Rows {
        let columns = table
            .columns
            .iter()
            .map(|&(_, ty, _)| match ty {
                Int => Column::Int(Int64Builder::new()),
                Text => Column::Text(StringBuilder::new()),
                Bool => Column::Bool(BooleanBuilder::new()),
            })
            .collect();
        Rows {
            table,
            columns,
            len: 0,
        }
    }

    /// The table.
    pub fn table(&self) -> Table {
        self.table
    }

    /// Rows buffered.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no row is buffered.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Appends a row; `row` has one value per column, of the column's type or null.
    ///
    /// # Panics
    /// If the row does not fit the table (a bug in this crate, never bad input).
    pub fn push(&mut self, row: &[Value]) {
        assert_eq!(row.len(), self.columns.len(), "row of {}", self.table.name);
        for (col, &v) in self.columns.iter_mut().zip(row) {
            match (col, v) {
                (Column::Int(b), Value::Int(i)) => b.append_value(i),
                (Column::Text(b), Value::Text(s)) => b.append_value(s),
                (Column::Bool(b), Value::Bool(x)) => b.append_value(x),
                (Column::Int(b), Value::Null) => b.append_null(),
                (Column::Text(b), Value::Null) => b.append_null(),
                (Column::Bool(b), Value::Null) => b.append_null(),
                (_, v) => panic!("{v:?} does not fit a column of {}", self.table.name),
            }
        }
        self.len += 1;
    }

    /// The rows as one record batch; the buffer is left empty.
    pub fn finish(&mut self) -> Result<RecordBatch, ArrowError> {
        let arrays: Vec<ArrayRef> = self
            .columns
            .iter_mut()
            .map(|c| -> ArrayRef {
                match c {
                    Column::Int(b) => Arc::new(b.finish()),
                    Column::Text(b) => Arc::new(b.finish()),
                    Column::Bool(b) => Arc::new(b.finish()),
                }
            })
            .collect();
        self.len = 0;
        RecordBatch::try_new(self.table.schema(), arrays)
    }
}
