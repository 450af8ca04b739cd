//! The totals of a batch: `path_totals` and `function_totals`, written with the batch's
//! `path_counts` so that the views over many runs read a row per path and batch instead of a
//! row per path and run (10^4 SQLite runs: 50 M `path_counts` rows, 200 k `path_totals` rows).
//!
//! A run is in exactly one committed batch (ingest is idempotent) and a batch's runs share
//! their label (`db add --label`), so summing a path's `runs` and `executions` over the
//! batches of a label gives that label's totals exactly, and over all batches the store's.

use std::borrow::Cow;

use datafusion::arrow::array::{AsArray, RecordBatch};
use datafusion::arrow::datatypes::Int64Type;
use rustc_hash::FxHashMap;

use crate::table::{self, Rows, Value};

/// The totals of the runs added to a batch so far.
#[derive(Debug, Default)]
pub struct Totals {
    programs: FxHashMap<String, ProgramTotals>,
    /// The number of runs added: stamps a path or function with the last run that took it.
    runs: u64,
}

#[derive(Debug, Default)]
struct ProgramTotals {
    /// Function names by id.
    names: Vec<String>,
    paths: FxHashMap<(i64, i64), Total>,
    /// By function id, for the ids the program has.
    functions: Vec<Total>,
    /// Function ids past the program's (a recording's events may name them): kept apart so
    /// that an id read from a file never sizes an allocation.
    other_functions: FxHashMap<i64, Total>,
}

impl ProgramTotals {
    fn function(&mut self, f: i64) -> &mut Total {
        match usize::try_from(f)
            .ok()
            .filter(|&i| i < self.functions.len())
        {
            Some(i) => &mut self.functions[i],
            None => self.other_functions.entry(f).or_default(),
        }
    }
}

/// Runs that took a path (or function) and its executions in them.
#[derive(Clone, Copy, Debug, Default)]
struct Total {
    runs: u64,
    executions: u64,
    /// The last run counted in `runs` (runs are numbered from 1).
    last_run: u64,
}

impl Total {
    fn add(&mut self, run: u64, count: u64) {
        self.runs += u64::from(self.last_run != run);
        self.last_run = run;
        self.executions = self.executions.saturating_add(count);
    }
}

impl Totals {
    /// Adds one run's `path_counts` rows; the run's program is `program_id`, whose functions
    /// are `names` by id.
    pub fn add_run(&mut self, program_id: &str, names: &[String], path_counts: &RecordBatch) {
        self.runs += 1;
        let (run, rows) = (self.runs, path_counts);
        let int = |name| {
            rows.column_by_name(name)
                .map(|c| c.as_primitive::<Int64Type>())
        };
        let (Some(function), Some(path), Some(count)) =
            (int("function_id"), int("path_id"), int("count"))
        else {
            return;
        };
        let totals = match self.programs.get_mut(program_id) {
            Some(t) => t,
            None => self.programs.entry(program_id.to_owned()).or_default(),
        };
        if totals.names.is_empty() {
            totals.names = names.to_vec();
            totals.functions = vec![Total::default(); names.len()];
        }
        for i in 0..rows.num_rows() {
            let (f, n) = (function.value(i), count.value(i).max(0) as u64);
            totals
                .paths
                .entry((f, path.value(i)))
                .or_default()
                .add(run, n);
            totals.function(f).add(run, n);
        }
    }

    /// The rows of `path_totals` and `function_totals` of the runs added, all with `label`, in
    /// key order; the totals are left empty.
    pub fn take_rows(&mut self, label: Option<&str>) -> [Rows; 2] {
        let mut paths = Rows::new(table::PATH_TOTALS);
        let mut functions = Rows::new(table::FUNCTION_TOTALS);
        let mut programs: Vec<_> = std::mem::take(&mut self.programs).into_iter().collect();
        programs.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        for (program, totals) in &programs {
            let name = |f: i64| match totals.names.get(f as usize) {
                Some(n) => Cow::Borrowed(n.as_str()),
                None => Cow::Owned(format!("#{f}")),
            };
            let mut keys: Vec<_> = totals.paths.iter().collect();
            keys.sort_unstable_by_key(|(k, _)| **k);
            for (&(f, id), t) in keys {
                let name = name(f);
                let row = [
                    program.into(),
                    label.into(),
                    Value::Int(f),
                    name.as_ref().into(),
                    Value::Int(id),
                    t.runs.into(),
                    t.executions.into(),
                ];
                paths.push(&row);
            }
            let mut others: Vec<_> = totals.other_functions.iter().collect();
            others.sort_unstable_by_key(|(f, _)| **f);
            let known = totals.functions.iter().enumerate();
            let all = known
                .map(|(f, t)| (f as i64, t))
                .chain(others.into_iter().map(|(&f, t)| (f, t)));
            for (f, t) in all.filter(|(_, t)| t.runs > 0) {
                let name = name(f);
                let row = [
                    program.into(),
                    label.into(),
                    Value::Int(f),
                    name.as_ref().into(),
                    t.runs.into(),
                    t.executions.into(),
                ];
                functions.push(&row);
            }
        }
        self.runs = 0;
        [paths, functions]
    }
}
