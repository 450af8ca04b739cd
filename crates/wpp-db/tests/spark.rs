//! The distributed route: every documented view, run by Apache Spark in `local-cluster` mode
//! (a master and two executor processes, started and stopped by `tests/spark_views.py`) over the
//! store's Parquet files as they are, returns exactly the rows embedded DataFusion returns.
//!
//! Skipped, with a message saying why, where `python3` cannot import `pyspark` or there is no
//! Java (`pip install pyspark`; Java 17).

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use common::{bl_profile, ok, ppp_profile, write};
use serde_json::Value;
use wpp_db::store::Store;
use wpp_db::views::VIEWS;

/// Why Spark cannot run here, if it cannot.
fn spark_missing() -> Option<String> {
    let python = Command::new("python3")
        .args(["-c", "import pyspark"])
        .output();
    if !python.is_ok_and(|o| o.status.success()) {
        return Some("python3 cannot import pyspark (pip install pyspark)".into());
    }
    let java = Command::new("java").arg("-version").output();
    if !java.is_ok_and(|o| o.status.success()) {
        return Some("no java on PATH (Spark needs Java 17)".into());
    }
    None
}

/// A store with labelled bl runs and ppp runs (residual paths).
fn store(dir: &Path) -> std::path::PathBuf {
    let (t, f) = (dir.join("tests"), dir.join("field"));
    std::fs::create_dir_all(&t).unwrap();
    std::fs::create_dir_all(&f).unwrap();
    for i in 0..6u64 {
        write(
            &t,
            &format!("t{i}.blprof"),
            &bl_profile(&[i, 1, 0, i % 2, 0, 2], i),
        );
    }
    write(&f, "f0.blprof", &bl_profile(&[0, 2, 0, 6, 1, 0], 3));
    write(&f, "f1.pppprof", &ppp_profile([2, 0, 1], &[(3, 5), (4, 2)]));
    write(&f, "f2.pppprof", &ppp_profile([0, 1, 1], &[(3, 1)]));
    let db = dir.join("db");
    let s = |p: &Path| p.display().to_string();
    ok(&["add", &s(&t), "--db", &s(&db), "--label", "test"]);
    ok(&[
        "add",
        &s(&f),
        "--db",
        &s(&db),
        "--label",
        "v2",
        "--batch-runs",
        "1",
    ]);
    db
}

/// A row with nulls dropped and numbers printed alike (Spark's and DataFusion's doubles).
fn normalize(row: &serde_json::Map<String, Value>) -> String {
    let fields: BTreeMap<&str, String> = row
        .iter()
        .filter(|(_, v)| !v.is_null())
        .map(|(k, v)| {
            let shown = match v {
                Value::Number(n) => format!("{:.9}", n.as_f64().unwrap()),
                other => other.to_string(),
            };
            (k.as_str(), shown)
        })
        .collect();
    format!("{fields:?}")
}

fn normalized(rows: &[Value]) -> Vec<String> {
    let mut out: Vec<String> = rows
        .iter()
        .map(|r| normalize(r.as_object().expect("a row object")))
        .collect();
    out.sort();
    out
}

#[test]
fn views_on_spark_equal_views_embedded() {
    if let Some(why) = spark_missing() {
        eprintln!("skipped: {why}");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = store(dir.path());
    let store = Store::open(&db).unwrap();
    let spec_json = wpp_db::spark::spec(&store, None).unwrap();
    let queries: BTreeMap<String, String> =
        serde_json::from_value(spec_json["queries"].clone()).unwrap();
    assert_eq!(queries.len(), VIEWS.len());
    let spec = dir.path().join("spec.json");
    std::fs::write(&spec, spec_json.to_string()).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/spark_views.py");
    let out = Command::new("python3")
        .arg(&script)
        .arg(&spec)
        .output()
        .expect("run python3");
    assert!(
        out.status.success(),
        "spark failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let spark: BTreeMap<String, Vec<Value>> =
        serde_json::from_slice(out.stdout.trim_ascii()).expect("spark's JSON");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    for (name, query) in &queries {
        let batches = runtime.block_on(wpp_db::query::run(&store, query)).unwrap();
        let mut json_out = Vec::new();
        wpp_db::query::write(&batches, wpp_db::query::Format::Json, &mut json_out).unwrap();
        let embedded: Vec<Value> = serde_json::from_slice(&json_out).unwrap_or_default();
        let embedded = normalized(&embedded);
        assert!(!embedded.is_empty(), "view {name} is empty: a weak test");
        assert_eq!(normalized(&spark[name]), embedded, "view {name}");
    }
}

/// The spec for a store copied to object storage names every committed file under the prefix,
/// by its place in the store, and no other.
#[test]
fn spark_spec_names_files_under_a_url_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let db = store(dir.path());
    let local = wpp_db::spark::spec(&Store::open(&db).unwrap(), None).unwrap();
    let remote =
        wpp_db::spark::spec(&Store::open(&db).unwrap(), Some("s3a://bucket/runs/")).unwrap();
    let files = |spec: &Value| -> Vec<String> {
        let tables = spec["tables"].as_array().unwrap();
        let files = tables.iter().flat_map(|t| t["files"].as_array().unwrap());
        files.map(|f| f.as_str().unwrap().to_owned()).collect()
    };
    let (local, remote) = (files(&local), files(&remote));
    assert!(local.len() > 10 && local.len() == remote.len());
    let root = std::path::absolute(&db).unwrap().display().to_string();
    for (l, r) in local.iter().zip(&remote) {
        let relative = l.strip_prefix(&root).unwrap();
        assert_eq!(r, &format!("s3a://bucket/runs{relative}"));
        assert!(r.ends_with(".parquet") && !r.contains("runs//"), "{r}");
    }
}
