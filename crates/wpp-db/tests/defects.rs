//! Regression tests of user trial 33's store defects (F1–F4, F9, F12 of its report): concurrent
//! writers, run identity, folders that are not stores, truncated traces, SQL output and
//! statements, and error wording.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use common::{bl_profile, ok, rows, wpp_db, write};
use wpp_trace::{BlockId, Event, FunctionId, ProgramDb, ThreadId, TraceWriter};

fn s(p: &Path) -> String {
    p.display().to_string()
}

/// `n` bl profiles with distinct counts (so distinct runs) in a new folder `dir/name`.
fn profiles(dir: &Path, name: &str, n: u64, seed: u64) -> PathBuf {
    let folder = dir.join(name);
    std::fs::create_dir(&folder).unwrap();
    for i in 0..n {
        let counts = [seed + i, 1, 2, 3, i % 5, seed];
        write(&folder, &format!("r{i:03}.blprof"), &bl_profile(&counts, 1));
    }
    folder
}

/// Starts `wpp-db ARGS` with its standard error captured.
fn spawn(args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_wpp-db"))
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run wpp-db")
}

/// Waits for `child`, which must succeed.
fn succeeds(child: Child) {
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
}

/// F1: two `db add`s of disjoint runs into one store at once, in small batches, many times:
/// both succeed and every run is stored exactly once (each writer used to delete the other's
/// batch in flight as garbage, and to name its batches as the other did).
#[test]
fn concurrent_adds_keep_every_run() {
    let dir = tempfile::tempdir().unwrap();
    let a = profiles(dir.path(), "a", 30, 100);
    let b = profiles(dir.path(), "b", 30, 200);
    for trial in 0..6 {
        let db = dir.path().join(format!("db{trial}"));
        let add = |from: &Path, label: &str| {
            spawn(&[
                "add",
                &s(from),
                "--db",
                &s(&db),
                "--label",
                label,
                "--batch-runs",
                "2",
            ])
        };
        let (first, second) = (add(&a, "a"), add(&b, "b"));
        succeeds(first);
        succeeds(second);
        let q = "SELECT label, COUNT(*), COUNT(DISTINCT run_id) FROM runs GROUP BY label \
                 ORDER BY label";
        assert_eq!(rows(&db, q), ["a,30,30", "b,30,30"], "trial {trial}");
    }
}

/// F1: a `db add` and a `db compact` at once: every run stays, once, and the store reads.
#[test]
fn add_and_compact_at_once_keep_every_run() {
    let dir = tempfile::tempdir().unwrap();
    let a = profiles(dir.path(), "a", 20, 100);
    let b = profiles(dir.path(), "b", 30, 200);
    for trial in 0..4 {
        let db = dir.path().join(format!("db{trial}"));
        ok(&["add", &s(&a), "--db", &s(&db), "--batch-runs", "2"]);
        let add = spawn(&["add", &s(&b), "--db", &s(&db), "--batch-runs", "2"]);
        let compact = spawn(&["compact", "--db", &s(&db)]);
        succeeds(add);
        succeeds(compact);
        let q = "SELECT COUNT(*), COUNT(DISTINCT run_id) FROM runs";
        assert_eq!(rows(&db, q), ["50,50"], "trial {trial}");
    }
}

/// F1: a writer that finds the store locked says so and waits: it adds nothing while the lock
/// is held, and its runs once it is released.
#[test]
fn a_second_writer_waits_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let a = profiles(dir.path(), "a", 1, 100);
    let db = dir.path().join("db");
    ok(&["add", &s(&a), "--db", &s(&db)]);
    let lock = std::fs::File::open(db.join("lock")).unwrap();
    rustix::fs::flock(&lock, rustix::fs::FlockOperation::LockExclusive).unwrap();
    let b = profiles(dir.path(), "b", 1, 200);
    let log = dir.path().join("stderr");
    let waiting = format!("waiting for another writer of {}", s(&db));
    let mut child = spawn_until_said(&["add", &s(&b), "--db", &s(&db)], &log, &waiting);
    assert_eq!(rows(&db, "SELECT COUNT(*) FROM runs"), ["1"]);
    drop(lock);
    assert!(child.wait().unwrap().success());
    let err = std::fs::read_to_string(&log).unwrap();
    assert_eq!(err.matches(&waiting).count(), 1, "{err}");
    assert_eq!(rows(&db, "SELECT COUNT(*) FROM runs"), ["2"]);
}

/// Spawns `wpp-db ARGS` with standard error to `log`, and waits until it has said `what`.
fn spawn_until_said(args: &[&str], log: &Path, what: &str) -> Child {
    let child = Command::new(env!("CARGO_BIN_EXE_wpp-db"))
        .args(args)
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .unwrap();
    let said = || std::fs::read_to_string(log).unwrap().contains(what);
    for _ in 0..600 {
        if said() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(said(), "{}", std::fs::read_to_string(log).unwrap());
    child
}

/// A compaction leaves the batches it merged while a reader that may have listed them reads
/// (a query used to fail on a deleted file, or skip it and answer from part of the store),
/// and deletes them when the reader is done.
#[test]
fn a_compaction_keeps_the_files_a_reader_reads() {
    let dir = tempfile::tempdir().unwrap();
    let a = profiles(dir.path(), "a", 6, 100);
    let db = dir.path().join("db");
    ok(&["add", &s(&a), "--db", &s(&db), "--batch-runs", "2"]);
    let runs = |db: &Path| -> usize { std::fs::read_dir(db.join("runs")).unwrap().count() };
    assert_eq!(runs(&db), 3);
    // A reader in flight, as `wpp sql` holds it from before it reads the manifest.
    let reader = std::fs::File::open(db.join("readers")).unwrap();
    rustix::fs::flock(&reader, rustix::fs::FlockOperation::LockShared).unwrap();
    let log = dir.path().join("stderr");
    let waiting = format!("waiting for readers of {}", s(&db));
    let compact = spawn_until_said(&["compact", "--db", &s(&db)], &log, &waiting);
    assert_eq!(runs(&db), 4, "the merged batches stay beside the new one");
    drop(reader);
    assert!(compact.wait_with_output().unwrap().status.success());
    assert_eq!(runs(&db), 1);
    assert_eq!(rows(&db, "SELECT COUNT(*) FROM runs"), ["6"]);
}

/// F2: a run is its bytes, wherever they are: the same profile copied to another folder and
/// renamed is already present, and counts once in the totals.
#[test]
fn a_copied_profile_is_the_same_run() {
    let dir = tempfile::tempdir().unwrap();
    let a = profiles(dir.path(), "a", 1, 100);
    let db = dir.path().join("db");
    ok(&["add", &s(&a), "--db", &s(&db)]);
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    std::fs::copy(a.join("r000.blprof"), elsewhere.join("renamed.blprof")).unwrap();
    let out = wpp_db(&["add", &s(&elsewhere), "--db", &s(&db)]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("0 runs added, 1 already present"), "{err}");
    assert_eq!(rows(&db, "SELECT COUNT(*) FROM runs"), ["1"]);
    let runs = rows(
        &db,
        "SELECT SUM(runs) FROM function_totals WHERE function = 'leaf'",
    );
    assert_eq!(runs, ["1"]);
}

/// F2: a profile of a running program (no exit status yet) is a snapshot: adding it says so.
#[test]
fn a_snapshot_is_noted() {
    let dir = tempfile::tempdir().unwrap();
    let mut running = bl_profile(&[1, 2, 3, 0, 0, 0], 1);
    running.run.as_mut().unwrap().exit_status = None;
    let path = write(dir.path(), "live.blprof", &running);
    let out = wpp_db(&["add", &s(&path), "--db", &s(&dir.path().join("db"))]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("1 profiles added have no exit status"),
        "{err}"
    );
}

/// F2: a profile's run id, not its bytes, is the run: two runs with equal counts are two runs,
/// and a later snapshot of a run already added (more counts, then an exit status) is that run,
/// whose first-added counts stay.
#[test]
fn runs_are_told_apart_by_their_run_id() {
    let dir = tempfile::tempdir().unwrap();
    let with = |counts: &[u64], id: u128, exit: Option<i32>| {
        let mut p = bl_profile(counts, 1);
        let run = p.run.as_mut().unwrap();
        (run.id, run.exit_status) = (Some(id), exit);
        p
    };
    let twins = dir.path().join("twins");
    std::fs::create_dir(&twins).unwrap();
    write(&twins, "a.blprof", &with(&[1, 2, 3], 7, Some(0)));
    write(&twins, "b.blprof", &with(&[1, 2, 3], 8, Some(0)));
    let db = dir.path().join("db");
    ok(&["add", &s(&twins), "--db", &s(&db)]);
    let snapshot = write(dir.path(), "s.blprof", &with(&[1, 0, 0], 9, None));
    ok(&["add", &s(&snapshot), "--db", &s(&db)]);
    let last = write(dir.path(), "s2.blprof", &with(&[5, 5, 5], 9, Some(0)));
    let out = wpp_db(&["add", &s(&last), "--db", &s(&db)]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("0 runs added, 1 already present"), "{err}");
    // ... which `db add` says (trial 35 H10: "1 already present" alone).
    let said = format!(
        "{} is the whole run of a profile the store has from a snapshot",
        s(&last)
    );
    assert!(err.contains(&said), "{err}");
    let q = "SELECT run_id, exit_status, events FROM runs ORDER BY run_id";
    let ids = [7u128, 8, 9].map(|i| format!("{i:032x}"));
    let want = [
        format!("{},0,7", ids[0]),
        format!("{},0,7", ids[1]),
        format!("{},,2", ids[2]),
    ];
    assert_eq!(rows(&db, q), want);
}

/// F3: `sql` and `compact` on a folder that is not a store fail naming it and leave it as it
/// was; `add` makes a store only of a missing or empty folder; `--db FILE` says it is a file.
#[test]
fn a_folder_that_is_not_a_store_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let a = profiles(dir.path(), "a", 2, 100);
    let listing = || {
        let mut names: Vec<_> = std::fs::read_dir(&a)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        names.sort();
        names
    };
    let before = listing();
    for args in [
        &["sql", "--db", &s(&a), "SELECT COUNT(*) FROM runs"][..],
        &["compact", "--db", &s(&a)],
        &["add", &s(&a), "--db", &s(&a)],
    ] {
        let out = wpp_db(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?}: {err}");
        assert!(
            err.contains(&format!("{} is not a wpp store", s(&a))),
            "{err}"
        );
    }
    assert_eq!(listing(), before, "the folder was changed");
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    ok(&["add", &s(&a), "--db", &s(&empty)]);
    assert_eq!(rows(&empty, "SELECT COUNT(*) FROM runs"), ["2"]);
    let file = a.join("r000.blprof");
    let out = wpp_db(&["sql", "--db", &s(&file), "SELECT 1"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("is not a wpp store: a file"), "{err}");
    assert!(!err.contains("create one"), "{err}");
}

/// A binary trace of `main` running a block `n` times.
fn trace(n: u32) -> Vec<u8> {
    let db = ProgramDb {
        functions: vec![wpp_trace::Function {
            name: "main".into(),
            ..Default::default()
        }],
        ..Default::default()
    };
    let mut w = TraceWriter::with_chunk_bytes(Vec::new(), &db, 64).unwrap();
    // A thread event first, as the runtime writes.
    w.push(Event::Thread(ThreadId(0))).unwrap();
    w.push(Event::Enter(FunctionId(0))).unwrap();
    for i in 0..n {
        w.push(Event::Block(BlockId(i % 2))).unwrap();
    }
    w.push(Event::Leave).unwrap();
    w.finish().unwrap()
}

/// F4: a truncated binary trace is named and skipped (exit 1) while the rest lands.
#[test]
fn a_truncated_trace_is_named_and_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let whole = trace(2000);
    let good = dir.path().join("good.trace");
    std::fs::write(&good, &whole).unwrap();
    let cut = dir.path().join("cut.trace");
    std::fs::write(&cut, &whole[..whole.len() / 2]).unwrap();
    // A finisher's `.wpp` in progress (trial 35 H8: "empty file").
    let staged = dir.path().join("p.wpp.tmp");
    std::fs::write(&staged, b"").unwrap();
    let db = dir.path().join("db");
    let out = wpp_db(&["add", &s(&good), &s(&cut), &s(&staged), "--db", &s(&db)]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    let line = err.lines().find(|l| l.contains(&s(&cut))).unwrap_or("");
    assert!(line.contains("truncated"), "{err}");
    let line = err.lines().find(|l| l.contains(&s(&staged))).unwrap_or("");
    assert!(line.contains("a .wpp still being written"), "{err}");
    assert_eq!(rows(&db, "SELECT file FROM runs"), [s(&good)]);
}

/// F9: an empty result has its header (table and CSV); a statement that is not a query is
/// refused and changes nothing.
#[test]
fn sql_prints_headers_and_refuses_statements() {
    let dir = tempfile::tempdir().unwrap();
    let a = profiles(dir.path(), "a", 1, 100);
    let db = dir.path().join("db");
    ok(&["add", &s(&a), "--db", &s(&db)]);
    let q = "SELECT file, label FROM runs WHERE 1 = 0";
    let table = ok(&["sql", "--db", &s(&db), q]);
    assert!(table.contains("| file | label |"), "{table}");
    let csv = ok(&["sql", "--db", &s(&db), "--format", "csv", q]);
    assert_eq!(csv, "file,label\n");
    // Trial 35 H2: `COPY … TO` overwrote a committed batch of the store (its runs vanished),
    // also under an `EXPLAIN ANALYZE`, which runs what it explains.
    let batch = std::fs::read_dir(db.join("runs")).unwrap().next().unwrap();
    let batch = batch.unwrap().path();
    let copy = format!(
        "COPY (SELECT * FROM runs WHERE 1 = 0) TO '{}' STORED AS PARQUET",
        batch.display()
    );
    let outside = dir.path().join("x.csv");
    let copy_out = format!("COPY (SELECT 1) TO '{}'", outside.display());
    let explained = format!("EXPLAIN ANALYZE {copy_out}");
    let drop_table = "DROP TABLE runs".to_string();
    let insert = "INSERT INTO runs SELECT * FROM runs".to_string();
    for statement in [drop_table, insert, copy, copy_out, explained] {
        let out = wpp_db(&["sql", "--db", &s(&db), &statement]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{statement}: {err}");
        assert!(err.contains("not a query"), "{err}");
    }
    assert!(!outside.exists());
    assert_eq!(rows(&db, "SELECT COUNT(*) FROM runs"), ["1"]);
    // A reader that stops early (`| head`) is no error: no message, exit 0.
    let long = "SELECT value FROM generate_series(1, 200000)";
    let mut sql = Command::new(env!("CARGO_BIN_EXE_wpp-db"))
        .args(["sql", "--db", &s(&db), "--format", "csv", long])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(sql.stdout.take());
    let out = sql.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && err.is_empty(),
        "{:?}: {err}",
        out.status
    );
}

/// F12: an OS error is said once; a query on a damaged file names the file.
#[test]
fn errors_say_why_once_and_name_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let a = profiles(dir.path(), "a", 1, 100);
    let under_a_file = a.join("r000.blprof").join("db");
    let out = wpp_db(&["add", &s(&a), "--db", &s(&under_a_file)]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert_eq!(err.matches("os error").count(), 1, "{err}");
    let db = dir.path().join("db");
    ok(&["add", &s(&a), "--db", &s(&db)]);
    let runs = std::fs::read_dir(db.join("runs")).unwrap().next().unwrap();
    let runs = runs.unwrap().path();
    // Its footer's metadata zeroed (lengths and magic kept): "Required field version is
    // missing", as a file deleted and rewritten under a reader left it.
    let mut bytes = std::fs::read(&runs).unwrap();
    let end = bytes.len() - 8;
    let footer = u32::from_le_bytes(bytes[end..end + 4].try_into().unwrap()) as usize;
    bytes[end - footer..end].fill(0);
    std::fs::write(&runs, bytes).unwrap();
    let out = wpp_db(&["sql", "--db", &s(&db), "SELECT COUNT(*) FROM runs"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains(&s(&runs)), "{err}");
}

/// Trial 35 H3: `label_shares` summed one function name's path id over two programs (each
/// `main`'s path 3 means other blocks), and `path_changes` compared path ids across builds.
/// Now a share is of its program's executions under the label, and only a program run under
/// both labels is compared.
#[test]
fn label_views_keep_programs_and_builds_apart() {
    let dir = tempfile::tempdir().unwrap();
    let (v1, v2) = (dir.path().join("v1"), dir.path().join("v2"));
    std::fs::create_dir_all(&v1).unwrap();
    std::fs::create_dir_all(&v2).unwrap();
    // Program b is another build of a: its fig3 starts on another line.
    let other_build = |mut p: wpp_abi::profile::ProfileFile| {
        p.program.program.functions[0].line = Some(2);
        p
    };
    write(&v1, "a.blprof", &bl_profile(&[0, 0, 0, 9, 0, 0], 0));
    write(
        &v1,
        "b.blprof",
        &other_build(bl_profile(&[0, 0, 0, 3, 0, 0], 0)),
    );
    write(
        &v2,
        "b.blprof",
        &other_build(bl_profile(&[0, 6, 0, 6, 0, 0], 0)),
    );
    let db = dir.path().join("db");
    ok(&["add", &s(&v1), "--db", &s(&db), "--label", "v1"]);
    ok(&["add", &s(&v2), "--db", &s(&db), "--label", "v2"]);
    let shares = "SELECT executions, share FROM label_shares WHERE label = 'v1' AND path_id = 3 \
                  ORDER BY executions";
    assert_eq!(rows(&db, shares), ["3,1.0", "9,1.0"]);
    let b = "SELECT DISTINCT program_id FROM path_totals WHERE label = 'v2'";
    let b = rows(&db, b);
    let changes = "SELECT program_id, path_id, share_a, share_b FROM path_changes \
                   ORDER BY path_id";
    let want = [format!("{},1,0.0,0.5", b[0]), format!("{},3,1.0,0.5", b[0])];
    assert_eq!(rows(&db, changes), want);
}

/// Trial 35 H4: a recording's raw trace and the `.wpp` made of it (the finisher's, or `wpp
/// compress`'s after a crash) were two runs, doubling the store's totals. Another run of the
/// same program (another name) still counts.
#[test]
fn a_recordings_trace_and_its_wpp_are_one_run() {
    use wpp_grammar::{trace::TraceCompressor, Algorithm};
    let dir = tempfile::tempdir().unwrap();
    let bytes = trace(300);
    let raw = dir.path().join("p.4242.trace");
    std::fs::write(&raw, &bytes).unwrap();
    std::fs::write(dir.path().join("p.4343.trace"), trace(301)).unwrap();
    let (program, events) = wpp_trace::file::read_events(&raw).unwrap();
    let mut c = TraceCompressor::new(Algorithm::Sequitur, None, program);
    c.push_batch(&events).unwrap();
    let wpp = dir.path().join("p.4242.wpp");
    c.finish().unwrap().write(&wpp).unwrap();
    let db = dir.path().join("db");
    ok(&["add", &s(&raw), "--db", &s(&db)]);
    let out = wpp_db(&[
        "add",
        &s(&wpp),
        &s(&dir.path().join("p.4343.trace")),
        "--db",
        &s(&db),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let said = format!(
        "{} is another file of the recording the store has as {}",
        s(&wpp),
        s(&raw)
    );
    assert!(err.contains(&said), "{err}");
    assert!(err.contains("1 runs added, 1 already present"), "{err}");
    assert_eq!(rows(&db, "SELECT COUNT(*) FROM runs"), ["2"]);
    // And the other way round: the `.wpp` first, then the trace.
    let db = dir.path().join("db2");
    ok(&["add", &s(&wpp), "--db", &s(&db)]);
    let out = wpp_db(&["add", &s(&raw), "--db", &s(&db)]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("0 runs added, 1 already present"));
}
