//! The store on disk: a folder per table holding Parquet files, one per ingest batch, and the
//! manifest that says which batches are committed.
//!
//! ```text
//! DIR/manifest                     committed batch ids, one per line
//! DIR/lock                         locked by the writer (empty)
//! DIR/readers                      share-locked by readers (empty)
//! DIR/runs/BATCH.parquet           one file per table per batch (tables without rows have none)
//! DIR/path_counts/BATCH.parquet
//! DIR/…/.pending-….parquet.tmp     being written; never read
//! ```
//!
//! A batch is committed in three steps, each of which leaves a readable store if the process is
//! killed there: its files are written under temporary names as its runs are read (a
//! [`BatchWriter`]) and synced, renamed into place (not yet listed, so invisible), then the
//! manifest is rewritten under a temporary name and renamed over the old one. Readers take the files of the listed batches only, so a killed
//! ingest leaves the store as it was, or with whole batches added. The next writer removes
//! temporary and unlisted files. Compaction writes the merged batch the same way, swaps the
//! manifest (the old batches out, the merged one in) and only then deletes the old files.
//!
//! One writer at a time: `add` and `compact` hold an exclusive lock (`flock`) on `DIR/lock` from
//! before they read the manifest until they are done, so a second writer waits for the first
//! (a writer that collected another's garbage would delete its batch in flight). Readers do not
//! wait for writers: they see the manifest before or after a commit. But they hold a shared
//! lock on `DIR/readers` from before they read the manifest until their query ends, and files
//! of unlisted batches are deleted only under the exclusive lock: compaction waits for the
//! readers that may still read the batches it merged, and a writer that finds readers leaves
//! such files to a later one. (Without it a query racing a compaction failed on a deleted
//! file, or skipped it and answered from part of the store.) Batch and temporary file names carry
//! the writing process and time, so two writers never share a name even without the lock.
//!
//! A store is recognised by its manifest (written empty when the store is created), so a
//! folder of other files is not taken for an empty store, and a writer makes a store only of a
//! missing or empty folder.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::Int64Type;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::parquet::basic::{Compression, ZstdLevel};
use datafusion::parquet::file::properties::WriterProperties;
use datafusion::parquet::schema::types::ColumnPath;

use crate::table::{self, ColumnType, Table, TABLES};
use crate::DbError;

/// The manifest's file name.
const MANIFEST: &str = "manifest";

/// The file writers lock.
const LOCK: &str = "lock";

/// The file readers share-lock.
const READERS: &str = "readers";

/// Whether [`Store::collect_garbage`] waits for readers before deleting unlisted batches
/// (calling the function first if it must), or leaves those files.
#[derive(Clone, Copy)]
enum Readers<'a> {
    Wait(&'a dyn Fn()),
    Skip,
}

/// A store folder.
#[derive(Clone, Debug)]
pub struct Store {
    dir: PathBuf,
    /// The writer's lock on `DIR/lock`, or a reader's shared lock on `DIR/readers` (module
    /// docs), held while any clone lives.
    _lock: Option<Arc<File>>,
}

impl Store {
    /// Opens the store at `dir` for reading; fails unless `dir` is a store (a folder with a
    /// manifest). The store's files stay while it lives (module docs).
    pub fn open(dir: &Path) -> Result<Store, DbError> {
        match std::fs::metadata(dir) {
            Ok(m) if m.is_dir() && dir.join(MANIFEST).is_file() => Ok(Store {
                dir: dir.to_owned(),
                _lock: share(dir),
            }),
            Ok(m) if m.is_dir() => Err(not_a_store(dir, "a folder without a manifest")),
            Ok(_) => Err(not_a_store(dir, "a file (a store is a folder)")),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(not_a_store(
                dir,
                &format!(
                    "no such folder (create one with `wpp db add FILES --db {}`)",
                    dir.display()
                ),
            )),
            Err(e) => Err(DbError::io(dir, e)),
        }
    }

    /// Opens the store at `dir` for writing (`compact`): it must be a store. Takes the writers'
    /// lock, calling `waiting` first if another writer holds it, and removes what a killed
    /// writer left (temporary files and files of unlisted batches).
    pub fn open_for_writing(dir: &Path, waiting: impl FnOnce()) -> Result<Store, DbError> {
        drop(Store::open(dir)?);
        Store::lock(dir, waiting)?.prepare()
    }

    /// Opens the store at `dir` for writing (`add`) as [`open_for_writing`](Self::open_for_writing)
    /// does, creating it in a missing or empty folder.
    pub fn create_for_writing(dir: &Path, waiting: impl FnOnce()) -> Result<Store, DbError> {
        match std::fs::metadata(dir) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                std::fs::create_dir_all(dir).map_err(|e| DbError::io(dir, e))?
            }
            Err(e) => return Err(DbError::io(dir, e)),
            Ok(m) if !m.is_dir() => return Err(not_a_store(dir, "a file (a store is a folder)")),
            Ok(_) if dir.join(MANIFEST).exists() || dir.join(LOCK).exists() => {}
            Ok(_) if !is_empty(dir)? => {
                return Err(not_a_store(
                    dir,
                    "a folder of other files, without a manifest (give a new or empty folder)",
                ))
            }
            Ok(_) => {}
        }
        let store = Store::lock(dir, waiting)?;
        if !dir.join(MANIFEST).exists() {
            store.write_manifest(&[])?;
        }
        store.prepare()
    }

    /// The store at `dir` with the writers' lock taken (waiting for it after `waiting`).
    fn lock(dir: &Path, waiting: impl FnOnce()) -> Result<Store, DbError> {
        let file = lock_exclusive(&dir.join(LOCK), Some(waiting))?
            .expect("a lock that is waited for is taken");
        Ok(Store {
            dir: dir.to_owned(),
            _lock: Some(Arc::new(file)),
        })
    }

    /// Readies a locked store for writing: refuses an old store, creates the table folders,
    /// removes what a killed writer left.
    fn prepare(self) -> Result<Store, DbError> {
        self.require_totals()?;
        for t in TABLES {
            let folder = self.dir.join(t.name);
            std::fs::create_dir_all(&folder).map_err(|e| DbError::io(&folder, e))?;
        }
        self.collect_garbage(Readers::Skip)?;
        Ok(self)
    }

    /// The committed batch ids, in commit order.
    pub fn batches(&self) -> Result<Vec<String>, DbError> {
        let path = self.dir.join(MANIFEST);
        match std::fs::read_to_string(&path) {
            Ok(text) => Ok(text
                .lines()
                .filter(|l| !l.is_empty())
                .map(String::from)
                .collect()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
            Err(e) => Err(DbError::io(&path, e)),
        }
    }

    /// The committed Parquet files of `table`, in commit order.
    pub fn files(&self, table: Table) -> Result<Vec<PathBuf>, DbError> {
        Ok(self
            .batches()?
            .iter()
            .map(|b| self.file(table, b))
            .filter(|p| p.exists())
            .collect())
    }

    /// Fails on a store written before `path_totals` (a committed batch with path counts and
    /// no totals), whose views would silently leave its runs out and whose run ids (two XXH64
    /// then) would not recognise a file added again.
    pub fn require_totals(&self) -> Result<(), DbError> {
        for b in self.batches()? {
            let counts = self.file(table::PATH_COUNTS, &b);
            if counts.exists() && !self.file(table::PATH_TOTALS, &b).exists() {
                return Err(DbError::Query(format!(
                    "{}: batch {b} has path counts but no path totals (a store of an older \
                     wpp-db): add its profiles to a new store",
                    self.dir.display()
                )));
            }
        }
        Ok(())
    }

    /// `path` (a file of this store) relative to the store's folder.
    pub fn relative<'p>(&self, path: &'p Path) -> &'p Path {
        path.strip_prefix(&self.dir).unwrap_or(path)
    }

    fn file(&self, table: Table, batch: &str) -> PathBuf {
        self.dir.join(table.name).join(format!("{batch}.parquet"))
    }

    fn temp_file(&self, table: Table, batch: &str) -> PathBuf {
        self.dir
            .join(table.name)
            .join(format!(".{batch}.parquet.tmp"))
    }

    /// A batch to fill with rows and commit (module docs).
    pub fn batch_writer(&self) -> BatchWriter<'_> {
        BatchWriter {
            store: self,
            pending: format!("pending-{}", unique()),
            writers: TABLES.iter().map(|_| None).collect(),
        }
    }

    /// Adds `batch` to the manifest: its files are in place.
    fn list(&self, batch: &str) -> Result<(), DbError> {
        let mut listed = self.batches()?;
        listed.push(batch.to_owned());
        self.write_manifest(&listed)
    }

    /// Rewrites the manifest atomically (write, sync, rename).
    fn write_manifest(&self, batches: &[String]) -> Result<(), DbError> {
        let tmp = self.dir.join(format!(".{MANIFEST}.tmp"));
        let mut text = batches.join("\n");
        text.push('\n');
        let write = || -> std::io::Result<()> {
            let mut f = File::create(&tmp)?;
            f.write_all(text.as_bytes())?;
            f.sync_all()
        };
        write().map_err(|e| DbError::io(&tmp, e))?;
        let path = self.dir.join(MANIFEST);
        std::fs::rename(&tmp, &path).map_err(|e| DbError::io(&path, e))?;
        sync_dir(&self.dir)
    }

    /// Removes temporary files and, once no reader may read them, the files of batches the
    /// manifest does not list.
    fn collect_garbage(&self, readers: Readers) -> Result<(), DbError> {
        let _ = std::fs::remove_file(self.dir.join(format!(".{MANIFEST}.tmp")));
        let excluded = exclude_readers(&self.dir, readers)?;
        let listed: BTreeSet<String> = self.batches()?.into_iter().collect();
        for t in TABLES {
            let folder = self.dir.join(t.name);
            let entries = std::fs::read_dir(&folder).map_err(|e| DbError::io(&folder, e))?;
            for entry in entries {
                let path = entry.map_err(|e| DbError::io(&folder, e))?.path();
                let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
                let unlisted = match name.strip_suffix(".parquet") {
                    Some(b) => !listed.contains(b) && excluded.is_some(),
                    None => true,
                };
                if unlisted {
                    std::fs::remove_file(&path).map_err(|e| DbError::io(&path, e))?;
                }
            }
        }
        Ok(())
    }

    /// Reads every committed row of `table`.
    pub fn read(&self, table: Table) -> Result<Vec<RecordBatch>, DbError> {
        let mut out = Vec::new();
        for path in self.files(table)? {
            let file = File::open(&path).map_err(|e| DbError::io(&path, e))?;
            let reader = ParquetRecordBatchReaderBuilder::try_new(file)
                .and_then(|b| b.build())
                .map_err(|e| DbError::parquet(&path, e))?;
            for batch in reader {
                out.push(batch.map_err(|e| DbError::arrow(&path.display().to_string(), e))?);
            }
        }
        Ok(out)
    }

    /// The first committed file whose Parquet footer does not read (a damaged file: said by
    /// name when a query fails on it).
    pub fn first_damaged(&self) -> Result<Option<PathBuf>, DbError> {
        for t in TABLES {
            for path in self.files(t)? {
                let file = File::open(&path).map_err(|e| DbError::io(&path, e))?;
                if ParquetRecordBatchReaderBuilder::try_new(file).is_err() {
                    return Ok(Some(path));
                }
            }
        }
        Ok(None)
    }

    /// Merges every table's committed files into one file per table (module docs); calls
    /// `waiting` if it must wait for readers before it deletes the merged files.
    pub fn compact(&self, batch: &str, waiting: &dyn Fn()) -> Result<usize, DbError> {
        let old = self.batches()?;
        if old.len() <= 1 {
            return Ok(old.len());
        }
        let mut tables = Vec::new();
        for t in TABLES {
            tables.push((t, self.read(t)?));
        }
        for (table, batches) in tables.iter().filter(|(_, b)| !b.is_empty()) {
            let tmp = self.temp_file(*table, batch);
            write_parquet(&tmp, *table, batches)?;
            let dest = self.file(*table, batch);
            std::fs::rename(&tmp, &dest).map_err(|e| DbError::io(&dest, e))?;
            sync_dir(&self.dir.join(table.name))?;
        }
        self.write_manifest(&[batch.to_owned()])?;
        self.collect_garbage(Readers::Wait(waiting))?;
        Ok(old.len())
    }
}

/// The strings of column `name` of `batch` (a `Utf8` column of this crate's tables).
pub fn text_column<'a>(batch: &'a RecordBatch, name: &str) -> Vec<Option<&'a str>> {
    let col = batch.column_by_name(name).map(|c| c.as_string::<i32>());
    let Some(col) = col else { return Vec::new() };
    (0..col.len())
        .map(|i| (!col.is_null(i)).then(|| col.value(i)))
        .collect()
}

/// The integers of column `name` of `batch` (an `Int64` column of this crate's tables).
pub fn int_column(batch: &RecordBatch, name: &str) -> Vec<Option<i64>> {
    let col = batch
        .column_by_name(name)
        .map(|c| c.as_primitive::<Int64Type>());
    let Some(col) = col else { return Vec::new() };
    (0..col.len())
        .map(|i| (!col.is_null(i)).then(|| col.value(i)))
        .collect()
}

/// A batch being written: each table's rows go into its Parquet file (under a temporary name)
/// as they come, so an ingest holds the writers' row groups, not the batch's rows (a batch of
/// 1,000 SQLite profiles is 5.5 M rows). Dropped without [`commit`](Self::commit), it leaves
/// temporary files that the next writer removes.
pub struct BatchWriter<'a> {
    store: &'a Store,
    /// The temporary name of the batch's files until it is committed and named.
    pending: String,
    writers: Vec<Option<ArrowWriter<File>>>,
}

impl BatchWriter<'_> {
    /// Appends `rows` to `table`'s file.
    pub fn write(&mut self, table: Table, rows: &RecordBatch) -> Result<(), DbError> {
        let i = TABLES
            .iter()
            .position(|t| t.name == table.name)
            .expect("a table");
        let writer = match &mut self.writers[i] {
            Some(w) => w,
            slot => slot.insert(new_writer(
                &self.store.temp_file(table, &self.pending),
                table,
            )?),
        };
        let path = || self.store.temp_file(table, &self.pending);
        writer.write(rows).map_err(|e| DbError::parquet(&path(), e))
    }

    /// Finishes the files, names them `batch` and lists it in the manifest (module docs).
    pub fn commit(self, batch: &str) -> Result<(), DbError> {
        let store = self.store;
        for (table, writer) in TABLES.iter().zip(self.writers) {
            let Some(writer) = writer else { continue };
            let tmp = store.temp_file(*table, &self.pending);
            finish(&tmp, writer)?;
            let dest = store.file(*table, batch);
            std::fs::rename(&tmp, &dest).map_err(|e| DbError::io(&dest, e))?;
            sync_dir(&store.dir.join(table.name))?;
        }
        store.list(batch)
    }
}

/// A Parquet writer of `table`'s rows into a new file at `path` (zstd; integers without a
/// dictionary).
fn new_writer(path: &Path, table: Table) -> Result<ArrowWriter<File>, DbError> {
    let file = File::create(path).map_err(|e| DbError::io(path, e))?;
    let mut props =
        WriterProperties::builder().set_compression(Compression::ZSTD(ZstdLevel::default()));
    // Integers plain (zstd still compresses them): a dictionary looked each one up in a hash
    // table, a fifth of an ingest's time, and the files came out no smaller (10^3 SQLite runs:
    // `path_counts` 6.5 MB with dictionaries, 6.3 MB plain).
    for &(name, ty, _) in table.columns {
        if ty == ColumnType::Int {
            props = props.set_column_dictionary_enabled(ColumnPath::from(name), false);
        }
    }
    let props = props.build();
    ArrowWriter::try_new(file, table.schema(), Some(props)).map_err(|e| DbError::parquet(path, e))
}

/// Closes the Parquet file at `path` that `writer` wrote and syncs it.
fn finish(path: &Path, writer: ArrowWriter<File>) -> Result<(), DbError> {
    let file = writer.into_inner().map_err(|e| DbError::parquet(path, e))?;
    file.sync_all().map_err(|e| DbError::io(path, e))
}

/// Writes `batches` to a new Parquet file at `path` (zstd, synced).
fn write_parquet(path: &Path, table: Table, batches: &[RecordBatch]) -> Result<(), DbError> {
    let mut writer = new_writer(path, table)?;
    for b in batches {
        writer.write(b).map_err(|e| DbError::parquet(path, e))?;
    }
    finish(path, writer)
}

/// A name no other batch of this store has or will have: the process, the time and a count
/// within the process (batch names hash their runs with it: two writers adding the same runs
/// must not write the same files).
pub fn unique() -> String {
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let n = COUNT.fetch_add(1, Ordering::Relaxed);
    format!("{}-{nanos}-{n}", std::process::id())
}

/// A reader's shared lock on `DIR/readers`, created if missing. None where it cannot be
/// opened (a read-only store made before readers locked): the reader then reads unprotected.
fn share(dir: &Path) -> Option<Arc<File>> {
    use rustix::fs::{flock, FlockOperation};
    let path = dir.join(READERS);
    let file = File::open(&path)
        .or_else(|_| File::options().create(true).append(true).open(&path))
        .ok()?;
    flock(&file, FlockOperation::LockShared).ok()?;
    Some(Arc::new(file))
}

/// The exclusive lock on `DIR/readers`: waited for, or None at once if a reader holds it.
fn exclude_readers(dir: &Path, readers: Readers) -> Result<Option<File>, DbError> {
    let path = dir.join(READERS);
    match readers {
        Readers::Wait(waiting) => lock_exclusive(&path, Some(waiting)),
        Readers::Skip => lock_exclusive(&path, None::<fn()>),
    }
}

/// An exclusive `flock` on `path`, created if missing: at once, or if another process holds
/// it, after `busy` says so, or None at once without `busy`.
fn lock_exclusive(path: &Path, busy: Option<impl FnOnce()>) -> Result<Option<File>, DbError> {
    use rustix::fs::{flock, FlockOperation};
    let file = File::options()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| DbError::io(path, e))?;
    let io = |e: rustix::io::Errno| DbError::io(path, e.into());
    match (flock(&file, FlockOperation::NonBlockingLockExclusive), busy) {
        (Ok(()), _) => Ok(Some(file)),
        (Err(rustix::io::Errno::WOULDBLOCK), None) => Ok(None),
        (Err(rustix::io::Errno::WOULDBLOCK), Some(waiting)) => {
            waiting();
            flock(&file, FlockOperation::LockExclusive).map_err(io)?;
            Ok(Some(file))
        }
        (Err(e), _) => Err(io(e)),
    }
}

/// The error for `dir`, which is not a store: `what` it is.
fn not_a_store(dir: &Path, what: &str) -> DbError {
    DbError::NotAStore {
        path: dir.to_owned(),
        why: what.to_owned(),
    }
}

/// Whether the folder `dir` has no entries.
fn is_empty(dir: &Path) -> Result<bool, DbError> {
    let mut entries = std::fs::read_dir(dir).map_err(|e| DbError::io(dir, e))?;
    Ok(entries.next().is_none())
}

/// Syncs a folder, so the renames in it survive a crash.
fn sync_dir(dir: &Path) -> Result<(), DbError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| DbError::io(dir, e))
}
