//! The distributed route: what Apache Spark needs to run the views over the store's files as
//! they are (`tests/spark_views.py` takes it): each table's DDL and committed files, the views'
//! SQL, and the queries to run. On a real cluster the files are object-store URLs of the same
//! layout (`--url-prefix s3a://BUCKET/STORE`).

use serde_json::{json, Value};

use crate::store::Store;
use crate::table::{ColumnType, TABLES};
use crate::views::VIEWS;
use crate::DbError;

/// The spec of `store` for `spark_views.py`: its tables' files as absolute paths, or under
/// `url_prefix` (the store folder's URL once copied to object storage), and one query per
/// view (`SELECT * FROM view`).
pub fn spec(store: &Store, url_prefix: Option<&str>) -> Result<Value, DbError> {
    let mut tables = Vec::new();
    for t in TABLES {
        let ddl: Vec<String> = t
            .columns
            .iter()
            .map(|&(name, ty, _)| {
                let ty = match ty {
                    ColumnType::Int => "BIGINT",
                    ColumnType::Text => "STRING",
                    ColumnType::Bool => "BOOLEAN",
                };
                format!("`{name}` {ty}")
            })
            .collect();
        let mut files = Vec::new();
        for f in store.files(t)? {
            files.push(match url_prefix {
                Some(prefix) => url(prefix, store.relative(&f)),
                None => std::path::absolute(&f)
                    .map_err(|e| DbError::io(&f, e))?
                    .display()
                    .to_string(),
            });
        }
        tables.push(json!({"name": t.name, "ddl": ddl.join(", "), "files": files}));
    }
    let views: Vec<Value> = VIEWS
        .iter()
        .map(|v| json!({"name": v.name, "sql": v.sql}))
        .collect();
    let queries: serde_json::Map<String, Value> = VIEWS
        .iter()
        .map(|v| {
            (
                v.name.to_owned(),
                format!("SELECT * FROM {}", v.name).into(),
            )
        })
        .collect();
    Ok(json!({"tables": tables, "views": views, "queries": queries}))
}

/// `prefix/relative` with one slash between.
fn url(prefix: &str, relative: &std::path::Path) -> String {
    format!(
        "{}/{}",
        prefix.trim_end_matches('/'),
        relative.display().to_string().replace('\\', "/")
    )
}
