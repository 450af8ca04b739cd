//! Packaging the runtime so that it exports only its ABI.
//!
//! cargo builds `wpp-rt` as a Rust staticlib: its members export Rust std's, the allocator's
//! and the bundled C zstd's global symbols (`ZSTD_*`, `HUF_*`, …). Linked into a program that
//! contains zstd itself, the runtime would call the program's (instrumented) zstd while it
//! initialises and hang (issue 12). Packaging makes one relocatable object of the whole
//! staticlib (`ld -r`, keeping only what the `__wpp_*` entry points reach) in which every
//! defined symbol except the `__wpp_*` ABI and the libc functions it interposes
//! ([`wpp_abi::INTERPOSED`]) is local, zstd's weak tracing hooks are renamed
//! out of the program's namespace, and debug info and embedded bitcode are stripped
//! (69 → 3 MB for a debug build). The packaged object is cached next to the staticlib and
//! rebuilt when the staticlib changes.

use super::DriverError;
use object::{Object, ObjectSymbol};
use std::path::{Path, PathBuf};
use wpp_abi::INTERPOSED;

/// The prefix of every symbol of the runtime's ABI (see `wpp-abi`).
pub const ABI_PREFIX: &str = "__wpp_";

/// zstd's optional tracing hooks: weak references the runtime's zstd makes, which a program
/// defining them would otherwise satisfy.
const ZSTD_HOOKS: &[&str] = &[
    "ZSTD_trace_compress_begin",
    "ZSTD_trace_compress_end",
    "ZSTD_trace_decompress_begin",
    "ZSTD_trace_decompress_end",
];

/// The packaged runtime for a runtime library: `lib` itself when it is already a packaged
/// object (`.o`), else the cached `<lib>.packaged.o`, made again unless its stamp
/// (`<lib>.packaged.stamp`) says it was made from `lib` as it is now ([`stamp`]).
pub fn packaged(lib: &Path, ld: &Path, objcopy: &Path) -> Result<PathBuf, DriverError> {
    if lib.extension().is_some_and(|e| e == "o") {
        return Ok(lib.to_path_buf());
    }
    let out = cache_path(lib);
    let stamp_path = out.with_extension("stamp");
    let now = stamp(lib);
    if now.is_some() && out.exists() && std::fs::read_to_string(&stamp_path).ok() == now {
        return Ok(out);
    }
    package(lib, &out, ld, objcopy)?;
    if let Some(now) = now {
        // Through a temporary name, as the package: a build never reads half a stamp.
        let tmp = stamp_path.with_extension(format!("{}.{}", std::process::id(), unique()));
        if std::fs::write(&tmp, now).is_ok() {
            let _ = std::fs::rename(&tmp, &stamp_path);
        }
    }
    Ok(out)
}

/// What a package is made from: the library's size and modification time. Comparing the two
/// files' times trusted a stale package copied after its library (`cp` of both, an install):
/// a copy gives the library a time of its own, which no stamp has.
fn stamp(lib: &Path) -> Option<String> {
    let m = std::fs::metadata(lib).ok()?;
    let time = m
        .modified()
        .ok()?
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?;
    Some(format!("{} {}", m.len(), time.as_nanos()))
}

/// `<dir>/<name>.packaged.o` next to the library when that directory is writable, else in the
/// temporary directory (an installed runtime in a read-only prefix).
fn cache_path(lib: &Path) -> PathBuf {
    let name = format!(
        "{}.packaged.o",
        lib.file_name().unwrap_or_default().to_string_lossy()
    );
    cache_dir(lib.parent()).join(name)
}

/// `dir` when it is known and writable, else the temporary directory: where the driver keeps
/// what it makes once for many builds.
pub fn cache_dir(dir: Option<&Path>) -> PathBuf {
    let writable = |d: &&Path| {
        let probe = d.join(format!(".wpp-probe-{}", std::process::id()));
        let ok = std::fs::write(&probe, b"").is_ok();
        let _ = std::fs::remove_file(&probe);
        ok
    };
    dir.filter(writable)
        .map_or_else(std::env::temp_dir, Path::to_path_buf)
}

/// Packages `lib` into `out` (through a temporary name, so concurrent builds never see a
/// half-written object).
pub fn package(lib: &Path, out: &Path, ld: &Path, objcopy: &Path) -> Result<(), DriverError> {
    let data = std::fs::read(lib).map_err(|e| DriverError::Input {
        path: lib.display().to_string(),
        reason: e.to_string(),
    })?;
    let roots = abi_symbols(lib, &data)?;
    if roots.is_empty() {
        return Err(DriverError::Input {
            path: lib.display().to_string(),
            reason: format!("defines no {ABI_PREFIX}* symbol: not the wpp runtime"),
        });
    }
    let tag = format!("{}.{}", std::process::id(), unique());
    let merged = out.with_extension(format!("{tag}.r.o"));
    let tmp = out.with_extension(format!("{tag}.tmp.o"));
    let result = (|| {
        let mut a: Vec<String> = vec!["-r".into(), "--gc-sections".into()];
        for r in roots
            .iter()
            .map(String::as_str)
            .chain(INTERPOSED.iter().copied())
        {
            a.extend(["-u".into(), r.to_owned()]);
        }
        a.extend([
            "--whole-archive".into(),
            lib.display().to_string(),
            "-o".into(),
            merged.display().to_string(),
        ]);
        super::run_quiet(ld, &a)?;
        let mut c: Vec<String> = vec![
            "--strip-debug".into(),
            "--remove-section=.llvmbc".into(),
            "--remove-section=.llvmcmd".into(),
            "--wildcard".into(),
            format!("--keep-global-symbol={ABI_PREFIX}*"),
        ];
        c.extend(
            INTERPOSED
                .iter()
                .map(|f| format!("--keep-global-symbol={f}")),
        );
        for h in ZSTD_HOOKS {
            c.push(format!("--redefine-sym={h}={ABI_PREFIX}unset_{h}"));
            c.push(format!("--weaken-symbol={ABI_PREFIX}unset_{h}"));
        }
        c.extend([merged.display().to_string(), tmp.display().to_string()]);
        super::run_quiet(objcopy, &c)?;
        std::fs::rename(&tmp, out).map_err(|e| DriverError::Input {
            path: out.display().to_string(),
            reason: format!("cannot write the packaged runtime: {e}"),
        })
    })();
    let _ = std::fs::remove_file(&merged);
    let _ = std::fs::remove_file(&tmp);
    result
}

/// The thread-locals `libwpp_rt.so` defines for processes whose executable is not
/// instrumented (an instrumented executable's definitions interpose them; `wpp_abi`, *Shared
/// libraries*).
const SHARED_THREAD_LOCALS: &str = "#include <stdint.h>
#define TLS __attribute__((tls_model(\"initial-exec\"))) __thread
TLS uint64_t *__wpp_buf = 0;
TLS uint32_t __wpp_idx = BUF_CAP;
TLS uint32_t __wpp_depth = 0;
TLS uint64_t *__wpp_abuf = 0;
TLS uint32_t __wpp_aidx = AT_BUF_CAP;
";

/// `libwpp_rt.so`, the runtime instrumented shared libraries need, in a directory of its own
/// next to the packaged runtime `packaged` (made when missing or older). Its soname is
/// `libwpp_rt.so`, and it exports what the packaged object does plus the thread-locals.
pub fn shared(packaged: &Path, clang: &Path) -> Result<PathBuf, DriverError> {
    let dir = packaged.with_extension("shared");
    let out = dir.join("libwpp_rt.so");
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    if let (Some(o), Some(p)) = (modified(&out), modified(packaged)) {
        if o >= p {
            return Ok(out);
        }
    }
    let err = |e: std::io::Error| DriverError::Input {
        path: out.display().to_string(),
        reason: format!("cannot write the shared runtime: {e}"),
    };
    std::fs::create_dir_all(&dir).map_err(err)?;
    let tag = format!("{}.{}", std::process::id(), unique());
    let source = dir.join(format!("tls.{tag}.c"));
    let tmp = dir.join(format!("libwpp_rt.{tag}.so"));
    let result = (|| {
        std::fs::write(&source, SHARED_THREAD_LOCALS).map_err(err)?;
        let mut a: Vec<String> = vec![
            "-shared".into(),
            "-fPIC".into(),
            format!("-DBUF_CAP={}", wpp_abi::BUF_CAP),
            format!("-DAT_BUF_CAP={}", wpp_abi::AT_BUF_CAP),
            "-Wl,-soname,libwpp_rt.so".into(),
            // Its threads and thread-local destructors outlive any `dlclose`.
            "-Wl,-z,nodelete".into(),
            "-o".into(),
            tmp.display().to_string(),
            source.display().to_string(),
            packaged.display().to_string(),
        ];
        a.extend(super::RUNTIME_SYSTEM_LIBS.iter().map(|s| s.to_string()));
        super::run_quiet(clang, &a)?;
        std::fs::rename(&tmp, &out).map_err(err)
    })();
    let _ = std::fs::remove_file(&source);
    let _ = std::fs::remove_file(&tmp);
    result.map(|()| out)
}

/// A number no other call in this process gets (with the pid: a temporary name of its own).
pub(super) fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

/// The `__wpp_*` symbols the staticlib defines: the roots of the packaged object.
fn abi_symbols(lib: &Path, data: &[u8]) -> Result<Vec<String>, DriverError> {
    let archive =
        object::read::archive::ArchiveFile::parse(data).map_err(|e| DriverError::Input {
            path: lib.display().to_string(),
            reason: format!("not a static library: {e}"),
        })?;
    let mut roots = std::collections::BTreeSet::new();
    for member in archive.members().flatten() {
        let Ok(bytes) = member.data(data) else {
            continue;
        };
        let Ok(obj) = object::File::parse(bytes) else {
            continue;
        };
        for s in obj.symbols() {
            if s.is_definition() && s.is_global() {
                if let Ok(n) = s.name() {
                    if n.starts_with(ABI_PREFIX) {
                        roots.insert(n.to_owned());
                    }
                }
            }
        }
    }
    Ok(roots.into_iter().collect())
}

/// Global symbols an object defines that are neither the ABI nor interposed libc functions, and zstd/HUF/FSE symbols it
/// leaves undefined (either would let a program's symbol and the runtime's meet).
pub fn foreign_globals(obj: &Path) -> Result<Vec<String>, DriverError> {
    let data = std::fs::read(obj).map_err(|e| DriverError::Input {
        path: obj.display().to_string(),
        reason: e.to_string(),
    })?;
    let file = object::File::parse(&*data).map_err(|e| DriverError::Input {
        path: obj.display().to_string(),
        reason: e.to_string(),
    })?;
    let mut out = Vec::new();
    for s in file.symbols() {
        let Ok(n) = s.name() else { continue };
        let exported = s.is_definition()
            && s.is_global()
            && !n.starts_with(ABI_PREFIX)
            && !INTERPOSED.contains(&n);
        let zstd = s.is_undefined()
            && ["ZSTD_", "HUF_", "FSE_", "ZDICT_"]
                .iter()
                .any(|p| n.starts_with(p));
        if exported || zstd {
            out.push(n.to_owned());
        }
    }
    Ok(out)
}
