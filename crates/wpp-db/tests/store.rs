//! The store against wpp's own profile library, without LLVM: counts round trip, re-adding
//! changes nothing, damaged files are named and skipped, killed ingests leave a readable store,
//! compaction keeps every row, and the views answer what their docs say.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use common::{bl_profile, counts, ok, ppp_profile, profile_counts, rows, wpp_db, write};

/// Ten `bl` profiles with different counts and two `ppp` profiles.
fn suite(dir: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let bl = (0..10u64)
        .map(|i| {
            let counts = [i, 1 + i % 3, 0, 2 * i, 0, i % 2];
            write(dir, &format!("run{i}.blprof"), &bl_profile(&counts, i + 1))
        })
        .collect();
    let ppp = vec![
        write(
            dir,
            "field0.pppprof",
            &ppp_profile([4, 0, 1], &[(2, 7), (4, 1)]),
        ),
        write(dir, "field1.pppprof", &ppp_profile([1, 2, 3], &[(2, 2)])),
    ];
    (bl, ppp)
}

fn s(p: &Path) -> String {
    p.display().to_string()
}

/// Every file of the store with its bytes.
fn snapshot(db: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    files_in(db)
        .into_iter()
        .map(|f| {
            let bytes = std::fs::read(&f).unwrap();
            (f, bytes)
        })
        .collect()
}

fn files_in(db: &Path) -> BTreeSet<PathBuf> {
    let mut out = BTreeSet::new();
    for t in std::fs::read_dir(db).unwrap() {
        let t = t.unwrap().path();
        if t.is_dir() {
            out.extend(std::fs::read_dir(&t).unwrap().map(|f| f.unwrap().path()));
        } else {
            out.insert(t);
        }
    }
    out
}

#[test]
fn profile_counts_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let (bl, ppp) = suite(dir.path());
    let db = dir.path().join("db");
    ok(&["add", &s(dir.path()), "--db", &s(&db), "--batch-runs", "4"]);
    let all: Vec<PathBuf> = bl.iter().chain(&ppp).cloned().collect();
    assert_eq!(counts(&db, "path_counts"), profile_counts(&all));
    // Residual counts: the uninteresting paths the ppp profiles carry.
    let mut residual = BTreeMap::new();
    for (f, r) in ppp.iter().zip([&[(2, 7), (4, 1)][..], &[(2, 2)]]) {
        for &(id, c) in r {
            residual.insert((s(f), "fig3".to_owned(), id), c);
        }
    }
    assert_eq!(counts(&db, "residual_counts"), residual);
    let runs = rows(
        &db,
        "SELECT mode, COUNT(*), SUM(events) FROM runs GROUP BY mode ORDER BY mode",
    );
    let bl_events: u64 = profile_counts(&bl).values().sum();
    let ppp_events: u64 = profile_counts(&ppp).values().sum();
    assert_eq!(
        runs,
        [format!("bl,10,{bl_events}"), format!("ppp,2,{ppp_events}")]
    );
    // bl and ppp builds of one program share its id (the same CFGs), not their build hash.
    let ids = rows(
        &db,
        "SELECT COUNT(DISTINCT program_id), COUNT(DISTINCT build_hash) FROM runs",
    );
    assert_eq!(ids, ["1,2"]);
}

#[test]
fn re_adding_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    suite(dir.path());
    let db = dir.path().join("db");
    ok(&["add", &s(dir.path()), "--db", &s(&db)]);
    let before = snapshot(&db);
    let out = wpp_db(&["add", &s(dir.path()), "--db", &s(&db)]);
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("0 runs added, 12 already present"), "{err}");
    assert_eq!(before, snapshot(&db));
}

#[test]
fn damaged_files_are_named_and_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let (bl, _) = suite(dir.path());
    let good = std::fs::read(&bl[3]).unwrap();
    let truncated = dir.path().join("truncated.blprof");
    std::fs::write(&truncated, &good[..good.len() - 5]).unwrap();
    let flipped = dir.path().join("flipped.blprof");
    let mut bytes = good.clone();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x40;
    std::fs::write(&flipped, bytes).unwrap();
    let garbage = dir.path().join("garbage.wpp");
    std::fs::write(&garbage, b"hello, not a recording").unwrap();
    let empty = dir.path().join("empty.trace");
    std::fs::write(&empty, b"").unwrap();
    let db = dir.path().join("db");
    let out = wpp_db(&["add", &s(dir.path()), "--db", &s(&db)]);
    assert!(!out.status.success(), "skipped files must fail the command");
    let err = String::from_utf8_lossy(&out.stderr);
    for (f, why) in [
        (&truncated, "truncated"),
        (&flipped, "checksum"),
        (&garbage, "not a wpp profile"),
        (&empty, "empty"),
    ] {
        let line = err
            .lines()
            .find(|l| l.contains(&s(f)))
            .unwrap_or_else(|| panic!("{} not named in {err}", f.display()));
        assert!(line.contains(why), "{line}");
    }
    assert_eq!(rows(&db, "SELECT COUNT(*) FROM runs"), ["12"]);
}

#[test]
fn leftovers_of_a_killed_ingest_are_never_read() {
    let dir = tempfile::tempdir().unwrap();
    let (bl, _) = suite(dir.path());
    let db = dir.path().join("db");
    ok(&["add", &s(&bl[0]), &s(&bl[1]), "--db", &s(&db)]);
    let before = counts(&db, "path_counts");
    // What a kill leaves: files being written, a batch renamed into place but not committed,
    // and a manifest being written.
    std::fs::write(db.join("path_counts/.x.parquet.tmp"), b"half a file").unwrap();
    std::fs::write(db.join("runs/uncommitted.parquet"), b"PAR1 not really").unwrap();
    let committed = files_in(&db)
        .into_iter()
        .find(|p| {
            p.starts_with(db.join("path_counts")) && p.extension().is_some_and(|e| e == "parquet")
        })
        .unwrap();
    std::fs::copy(committed, db.join("path_counts/uncommitted.parquet")).unwrap();
    std::fs::write(db.join(".manifest.tmp"), b"uncommitted\n").unwrap();
    assert_eq!(counts(&db, "path_counts"), before);
    // The next writer removes them.
    ok(&["add", &s(&bl[2]), "--db", &s(&db)]);
    let left: Vec<PathBuf> = files_in(&db)
        .into_iter()
        .filter(|p| {
            let p = p.to_string_lossy();
            p.contains("uncommitted") || p.ends_with(".tmp")
        })
        .collect();
    assert!(left.is_empty(), "{left:?}");
    assert_eq!(counts(&db, "path_counts"), profile_counts(&bl[..3]));
}

#[test]
fn a_killed_ingest_leaves_whole_batches() {
    let dir = tempfile::tempdir().unwrap();
    let many = dir.path().join("many");
    std::fs::create_dir(&many).unwrap();
    let files: Vec<PathBuf> = (0..600u64)
        .map(|i| {
            let counts = [i, 1, 2, 3, 4, i % 7];
            write(&many, &format!("r{i:04}.blprof"), &bl_profile(&counts, 1))
        })
        .collect();
    let db = dir.path().join("db");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_wpp-db"))
        .args(["add", &s(&many), "--db", &s(&db), "--batch-runs", "7"])
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(150));
    child.kill().unwrap();
    child.wait().unwrap();
    // Whatever landed is whole batches of whole runs.
    let landed: Vec<PathBuf> = rows(&db, "SELECT file FROM runs")
        .iter()
        .map(PathBuf::from)
        .collect();
    let whole = landed.len().is_multiple_of(7) || landed.len() == files.len();
    assert!(whole, "{} runs: not whole batches", landed.len());
    assert_eq!(counts(&db, "path_counts"), profile_counts(&landed));
    // Adding again completes the store.
    ok(&["add", &s(&many), "--db", &s(&db)]);
    assert_eq!(counts(&db, "path_counts"), profile_counts(&files));
}

#[test]
fn compaction_keeps_every_row() {
    let dir = tempfile::tempdir().unwrap();
    let (bl, ppp) = suite(dir.path());
    let db = dir.path().join("db");
    ok(&["add", &s(dir.path()), "--db", &s(&db), "--batch-runs", "3"]);
    let before = (counts(&db, "path_counts"), counts(&db, "residual_counts"));
    ok(&["compact", "--db", &s(&db)]);
    let parquet = files_in(&db)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "parquet"))
        .count();
    // One file per table with rows: runs, functions, blocks, paths, path_counts, residual_counts,
    // path_totals, function_totals.
    assert_eq!(parquet, 8);
    let after = (counts(&db, "path_counts"), counts(&db, "residual_counts"));
    assert_eq!(after, before);
    let all: Vec<PathBuf> = bl.iter().chain(&ppp).cloned().collect();
    assert_eq!(before.0, profile_counts(&all));
}

#[test]
fn views_answer_their_questions() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let (t, f) = (dir.path().join("tests"), dir.path().join("field"));
    std::fs::create_dir_all(&t).unwrap();
    std::fs::create_dir_all(&f).unwrap();
    // Tests take paths 0 and 1 of fig3; the field takes 1 and 3.
    write(&t, "a.blprof", &bl_profile(&[3, 1, 0, 0, 0, 0], 0));
    write(&t, "b.blprof", &bl_profile(&[1, 3, 0, 0, 0, 0], 0));
    write(&f, "c.blprof", &bl_profile(&[0, 2, 0, 6, 0, 0], 0));
    write(&f, "d.pppprof", &ppp_profile([0, 0, 0], &[(3, 5)]));
    ok(&["add", &s(&t), "--db", &s(&db), "--label", "test"]);
    ok(&["add", &s(&f), "--db", &s(&db), "--label", "v2"]);
    let coverage = "SELECT function, paths_total, paths_taken, paths_not_taken FROM coverage \
                    ORDER BY function";
    assert_eq!(rows(&db, coverage), ["fig3,6,3,3", "leaf,1,0,1"]);
    let untaken = "SELECT path_id FROM untaken_paths WHERE function = 'fig3' ORDER BY path_id";
    assert_eq!(rows(&db, untaken), ["2", "4", "5"]);
    let residual = "SELECT function, path_id, runs, executions FROM residual_paths";
    assert_eq!(rows(&db, residual), ["fig3,3,1,5"]);
    let runs = rows(&db, "SELECT file, label FROM residual_runs");
    assert_eq!(runs, [format!("{},v2", s(&f.join("d.pppprof")))]);
    // Shares: test: path 0 4/8, path 1 4/8; v2: path 1 2/13, path 3 11/13.
    let change = rows(
        &db,
        "SELECT path_id, ROUND(change, 4) FROM path_changes WHERE label_a = 'test' AND \
         label_b = 'v2' ORDER BY abs(change) DESC, path_id",
    );
    assert_eq!(change, ["3,0.8462", "0,-0.5", "1,-0.3462"]);
    let diversity = "SELECT function, distinct_paths, runs FROM function_diversity \
                     ORDER BY distinct_paths DESC";
    assert_eq!(rows(&db, diversity), ["fig3,3,4"]);
}

/// The totals and the views that read them against the same questions asked of `path_counts`
/// (the oracle: one row per run and path), on a store of many batches, two labels and runs
/// without a label.
#[test]
fn totals_answer_as_path_counts() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    for (label, n) in [
        (Some("a"), 23u64),
        (Some("b"), 17),
        (Some("c"), 3),
        (None, 5),
    ] {
        let runs = dir.path().join(label.unwrap_or("none"));
        std::fs::create_dir(&runs).unwrap();
        for i in 0..n {
            let counts = [i % 4, (i * n) % 3, i % 2, 0, i / 9, (i + n) % 5];
            write(
                &runs,
                &format!("r{i:02}.blprof"),
                &bl_profile(&counts, i % 3),
            );
        }
        let field = ppp_profile([n % 3, 1, 0], &[(2, n), (4, 1)]);
        write(&runs, "f.pppprof", &field);
        let mut add = vec!["add".to_owned(), s(&runs), "--db".into(), s(&db)];
        add.extend(["--batch-runs".into(), "4".into()]);
        if let Some(l) = label {
            add.extend(["--label".into(), l.into()]);
        }
        ok(&add.iter().map(String::as_str).collect::<Vec<_>>());
    }
    // `path_counts` with each row's label, program and function name.
    let by_run = "FROM (SELECT c.*, r.label, r.program_id, f.function FROM path_counts c \
                  JOIN runs r ON r.run_id = c.run_id \
                  JOIN functions f ON f.program_id = r.program_id \
                  AND f.function_id = c.function_id) pc";
    let pairs = [
        (
            "SELECT label, program_id, function_id, path_id, SUM(runs), SUM(executions) \
             FROM path_totals GROUP BY 1, 2, 3, 4"
                .to_owned(),
            format!(
                "SELECT pc.label, pc.program_id, pc.function_id, pc.path_id, COUNT(*), \
                 SUM(pc.count) {by_run} GROUP BY 1, 2, 3, 4"
            ),
        ),
        (
            "SELECT label, program_id, function_id, function, SUM(runs), SUM(executions) \
             FROM function_totals GROUP BY 1, 2, 3, 4"
                .to_owned(),
            format!(
                "SELECT pc.label, pc.program_id, pc.function_id, pc.function, \
                 COUNT(DISTINCT pc.run_id), SUM(pc.count) {by_run} GROUP BY 1, 2, 3, 4"
            ),
        ),
        (
            "SELECT * FROM label_shares".to_owned(),
            format!(
                "SELECT per.label, per.program_id, per.function_id, per.function, per.path_id, \
                 per.executions, CAST(per.executions AS DOUBLE) / CAST(tot.total AS DOUBLE) \
                 FROM (SELECT pc.label, pc.program_id, pc.function_id, pc.function, pc.path_id, \
                 SUM(pc.count) AS executions {by_run} WHERE pc.label IS NOT NULL \
                 GROUP BY 1, 2, 3, 4, 5) per \
                 JOIN (SELECT pc.label, pc.program_id, SUM(pc.count) AS total {by_run} \
                 WHERE pc.label IS NOT NULL GROUP BY 1, 2) tot \
                 ON per.label = tot.label AND per.program_id = tot.program_id"
            ),
        ),
        (
            "SELECT * FROM path_changes".to_owned(),
            "SELECT la.label, lb.label, k.program_id, k.function, k.path_id, \
             COALESCE(a.share, 0.0), COALESCE(b.share, 0.0), \
             COALESCE(b.share, 0.0) - COALESCE(a.share, 0.0) \
             FROM (SELECT DISTINCT label, program_id FROM label_shares) la \
             JOIN (SELECT DISTINCT label, program_id FROM label_shares) lb \
             ON la.label < lb.label AND la.program_id = lb.program_id \
             JOIN (SELECT DISTINCT program_id, function_id, function, path_id FROM label_shares) k \
             ON k.program_id = la.program_id \
             LEFT JOIN label_shares a ON a.label = la.label AND a.program_id = k.program_id \
             AND a.function_id = k.function_id AND a.path_id = k.path_id \
             LEFT JOIN label_shares b ON b.label = lb.label AND b.program_id = k.program_id \
             AND b.function_id = k.function_id AND b.path_id = k.path_id \
             WHERE a.share IS NOT NULL OR b.share IS NOT NULL"
                .to_owned(),
        ),
        (
            "SELECT * FROM function_diversity".to_owned(),
            format!(
                "SELECT pc.program_id, f.function, COUNT(DISTINCT pc.path_id), \
                 COUNT(DISTINCT pc.run_id), SUM(pc.count), f.paths_total {by_run} \
                 JOIN functions f \
                 ON f.program_id = pc.program_id AND f.function_id = pc.function_id \
                 GROUP BY pc.program_id, pc.function_id, f.function, f.paths_total"
            ),
        ),
        (
            "SELECT * FROM coverage".to_owned(),
            format!(
                "SELECT f.program_id, f.function_id, f.function, f.paths_total, \
                 COUNT(t.path_id), f.paths_total - COUNT(t.path_id) FROM functions f \
                 LEFT JOIN (SELECT DISTINCT pc.program_id, pc.function_id, pc.path_id {by_run}) t \
                 ON t.program_id = f.program_id AND t.function_id = f.function_id \
                 WHERE f.paths_total IS NOT NULL \
                 GROUP BY f.program_id, f.function_id, f.function, f.paths_total"
            ),
        ),
    ];
    for (view, oracle) in pairs {
        let sorted = |q: &str| {
            let mut r = rows(&db, q);
            r.sort();
            r
        };
        let (got, want) = (sorted(&view), sorted(&oracle));
        assert!(want.len() > 1, "{oracle}: {want:?}");
        assert_eq!(got, want, "{view}");
    }
}

/// Issue 16 item 5: 200 profiles added in batches of 7 answer every query as when added in one
/// batch (the rows stream into each batch's files as runs are read).
#[test]
fn small_batches_answer_as_one_batch() {
    let dir = tempfile::tempdir().unwrap();
    let many = dir.path().join("many");
    std::fs::create_dir(&many).unwrap();
    for i in 0..200u64 {
        let counts = [i % 5, 1 + i % 3, i % 2, 0, i / 50, i % 7];
        write(&many, &format!("r{i:03}.blprof"), &bl_profile(&counts, i));
    }
    write(
        &many,
        "f.pppprof",
        &ppp_profile([4, 0, 1], &[(2, 7), (4, 1)]),
    );
    let (small, one) = (dir.path().join("small"), dir.path().join("one"));
    ok(&["add", &s(&many), "--db", &s(&small), "--batch-runs", "7"]);
    ok(&["add", &s(&many), "--db", &s(&one), "--batch-runs", "1000"]);
    let batches = |db: &Path| {
        std::fs::read_to_string(db.join("manifest"))
            .unwrap()
            .lines()
            .count()
    };
    assert_eq!((batches(&small), batches(&one)), (29, 1));
    let queries = [
        "SELECT r.file, c.function_id, c.path_id, c.count FROM path_counts c \
         JOIN runs r ON r.run_id = c.run_id ORDER BY 1, 2, 3",
        "SELECT function, paths_total, paths_taken, paths_not_taken FROM coverage ORDER BY 1",
        "SELECT function, path_id, runs, executions FROM residual_paths ORDER BY 1, 2",
        "SELECT function, distinct_paths, runs FROM function_diversity ORDER BY 1",
        "SELECT (SELECT COUNT(*) FROM functions) AS f, (SELECT COUNT(*) FROM blocks) AS b, \
         (SELECT COUNT(*) FROM paths) AS p, (SELECT COUNT(*) FROM runs) AS r",
    ];
    for q in queries {
        let (a, b) = (rows(&small, q), rows(&one, q));
        assert!(a == b, "{q}: {} rows against {}", a.len(), b.len());
    }
    assert_eq!(rows(&one, queries[4]), ["2,8,7,201"]);
}

/// A store whose batches have path counts but no totals (written before them) is refused with
/// its name, not answered without those runs.
#[test]
fn a_store_without_totals_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    suite(dir.path());
    let db = dir.path().join("db");
    ok(&["add", &s(dir.path()), "--db", &s(&db)]);
    for f in std::fs::read_dir(db.join("path_totals")).unwrap() {
        std::fs::remove_file(f.unwrap().path()).unwrap();
    }
    let out = wpp_db(&["sql", "--db", &s(&db), "SELECT * FROM coverage"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains(&s(&db)) && err.contains("no path totals"),
        "{err}"
    );
    let add = wpp_db(&["add", &s(dir.path()), "--db", &s(&db)]);
    assert!(!add.status.success());
    assert!(String::from_utf8_lossy(&add.stderr).contains("no path totals"));
}

/// A profile's run (version 4) fills `runs.command_line`, quoted as a shell would split it,
/// and `runs.exit_status`; a profile without one (as a merge's) leaves them null.
#[test]
fn runs_have_their_command_lines_and_exit_statuses() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    write(dir.path(), "a.blprof", &bl_profile(&[1, 0, 0, 0, 0, 0], 5));
    write(dir.path(), "b.pppprof", &ppp_profile([1, 0, 0], &[]));
    ok(&["add", &s(dir.path()), "--db", &s(&db)]);
    let q = "SELECT command_line, exit_status FROM runs ORDER BY file";
    assert_eq!(rows(&db, q), ["./t 5 'a b',1", ","]);
}
