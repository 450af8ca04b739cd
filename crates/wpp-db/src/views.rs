//! The views registered beside the tables: the questions users ask of many runs, each one SQL
//! query over the tables (the same text runs on Spark; `bench/` and the tests run them there).
//!
//! The views that aggregate path executions over runs read the per-batch totals
//! (`path_totals`, `function_totals`: [`crate::totals`]) rather than `path_counts`, a row per
//! path and batch instead of one per path and run; the tests check each against the same
//! question asked of `path_counts`.

/// A documented view: its name, what it answers and its query.
#[derive(Clone, Copy, Debug)]
pub struct View {
    /// The view's name in SQL.
    pub name: &'static str,
    /// What it answers.
    pub about: &'static str,
    /// Its query.
    pub sql: &'static str,
}

/// Path coverage of the runs, per function with a CFG: paths in the Ball–Larus numbering,
/// paths some run took, and paths no run took.
pub const COVERAGE: View = View {
    name: "coverage",
    about: "per function: Ball-Larus paths, paths some run took, paths no run took",
    sql: "SELECT f.program_id, f.function_id, f.function, f.paths_total,
       COUNT(t.path_id) AS paths_taken,
       f.paths_total - COUNT(t.path_id) AS paths_not_taken
FROM functions f
LEFT JOIN (SELECT DISTINCT program_id, function_id, path_id FROM path_totals) t
  ON t.program_id = f.program_id AND t.function_id = f.function_id
WHERE f.paths_total IS NOT NULL
GROUP BY f.program_id, f.function_id, f.function, f.paths_total",
};

/// The paths no run took, with their blocks, of the functions whose paths are all listed
/// (`functions.paths_listed`; the others have only counts, in [`COVERAGE`]).
pub const UNTAKEN_PATHS: View = View {
    name: "untaken_paths",
    about: "paths no run took, with their blocks (functions with at most 256 paths)",
    sql: "SELECT p.program_id, p.function_id, f.function, p.path_id, p.blocks
FROM paths p
JOIN functions f ON f.program_id = p.program_id AND f.function_id = p.function_id
LEFT JOIN (SELECT DISTINCT program_id, function_id, path_id FROM path_totals) t
  ON t.program_id = p.program_id AND t.function_id = p.function_id AND t.path_id = p.path_id
WHERE f.paths_listed AND t.path_id IS NULL",
};

/// Residual paths across runs (PPP §1: paths a deployed program ran that testing, the
/// interesting set of its `ppp` build, did not): per path, how many runs took it and how often.
pub const RESIDUAL_PATHS: View = View {
    name: "residual_paths",
    about: "residual paths of ppp runs (PPP section 1): runs that took each, executions",
    sql: "SELECT rc.program_id, rc.function_id, rc.function, rc.path_id, p.blocks,
       COUNT(DISTINCT rc.run_id) AS runs, SUM(rc.count) AS executions
FROM residual_counts rc
LEFT JOIN paths p
  ON p.program_id = rc.program_id AND p.function_id = rc.function_id AND p.path_id = rc.path_id
GROUP BY rc.program_id, rc.function_id, rc.function, rc.path_id, p.blocks",
};

/// The runs that took each residual path, with their file and label.
pub const RESIDUAL_RUNS: View = View {
    name: "residual_runs",
    about: "each residual path with each run that took it (file, label, count)",
    sql: "SELECT rc.program_id, rc.function, rc.path_id, rc.run_id, r.file, r.label, rc.count
FROM residual_counts rc
JOIN runs r ON r.run_id = rc.run_id",
};

/// Every path's share of its program's executions under a label (runs without a label are
/// left out). Per program: path ids of two programs, or of two builds of one, name different
/// paths (trial 35 H3 summed `main`'s path 3 of two programs).
pub const LABEL_SHARES: View = View {
    name: "label_shares",
    about: "per label (db add --label), program and path: executions and share of the program's \
            executions under the label",
    sql: "SELECT per.label, per.program_id, per.function_id, per.function, per.path_id,
       per.executions, CAST(per.executions AS DOUBLE) / CAST(tot.total AS DOUBLE) AS share
FROM (SELECT label, program_id, function_id, function, path_id, SUM(executions) AS executions
      FROM path_totals
      WHERE label IS NOT NULL
      GROUP BY label, program_id, function_id, function, path_id) per
JOIN (SELECT label, program_id, SUM(executions) AS total
      FROM path_totals
      WHERE label IS NOT NULL
      GROUP BY label, program_id) tot
  ON per.label = tot.label AND per.program_id = tot.program_id",
};

/// Between every two labels `label_a < label_b` (e.g. the test runs and the field runs of one
/// build), each path's share in both and the change, per program that ran under both:
/// `WHERE label_a = 'test' AND label_b = 'field' ORDER BY abs(change) DESC`. A path id means
/// one path only within a build, so a program rebuilt between the labels is not compared here
/// (`wpp diff` and `wpp profile diff` compare builds, function by function where the CFG is
/// unchanged). Each pair's paths are those of either label, found by one pass over
/// `label_shares` (an outer join of `label_shares` with itself per pair took 24 s on 10^4
/// runs).
pub const PATH_CHANGES: View = View {
    name: "path_changes",
    about: "per pair of labels, program run under both, and path: shares in each and the \
            change (label_a < label_b)",
    sql: "SELECT label_a, label_b, program_id, function, path_id, share_a, share_b,
       share_b - share_a AS change
FROM (SELECT la.label AS label_a, lb.label AS label_b, la.program_id, s.function_id,
             s.function, s.path_id,
             SUM(CASE WHEN s.label = la.label THEN s.share ELSE 0.0 END) AS share_a,
             SUM(CASE WHEN s.label = lb.label THEN s.share ELSE 0.0 END) AS share_b
      FROM (SELECT DISTINCT label, program_id FROM path_totals WHERE label IS NOT NULL) la
      JOIN (SELECT DISTINCT label, program_id FROM path_totals WHERE label IS NOT NULL) lb
        ON la.label < lb.label AND la.program_id = lb.program_id
      JOIN label_shares s
        ON s.program_id = la.program_id AND (s.label = la.label OR s.label = lb.label)
      GROUP BY la.label, lb.label, la.program_id, s.function_id, s.function, s.path_id) pairs",
};

/// Functions by path diversity: distinct paths taken over all runs, against the paths there
/// are (per function of a program: two functions of one name, e.g. `static` ones of two files,
/// are two rows).
pub const FUNCTION_DIVERSITY: View = View {
    name: "function_diversity",
    about: "per function: distinct paths taken over all runs, runs, executions, paths there are",
    sql: "SELECT f.program_id, f.function, d.distinct_paths, t.runs, t.executions, f.paths_total
FROM (SELECT program_id, function_id, COUNT(DISTINCT path_id) AS distinct_paths
      FROM path_totals
      GROUP BY program_id, function_id) d
JOIN (SELECT program_id, function_id, SUM(runs) AS runs, SUM(executions) AS executions
      FROM function_totals
      GROUP BY program_id, function_id) t
  ON t.program_id = d.program_id AND t.function_id = d.function_id
JOIN functions f ON f.program_id = d.program_id AND f.function_id = d.function_id",
};

/// Every view, in the order they are created (a view may use the ones before it).
pub const VIEWS: [View; 7] = [
    COVERAGE,
    UNTAKEN_PATHS,
    RESIDUAL_PATHS,
    RESIDUAL_RUNS,
    LABEL_SHARES,
    PATH_CHANGES,
    FUNCTION_DIVERSITY,
];
