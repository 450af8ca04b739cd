//! How every wpp output file reaches its path: written in full beside it, then renamed over
//! it, so that a reader (or a crash) never sees half a file. Unless the path is not a regular
//! file: `-o /dev/null`, a FIFO or a terminal must be written to, since a rename would replace
//! the device node itself (as root, `wpp compress -o /dev/null` once left a regular file in
//! its place, and every program that then read `/dev/null` read wpp's output).

use std::io;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Whether `dest` exists and is a device, FIFO or socket (symbolic links followed).
pub fn is_special(dest: &Path) -> bool {
    std::fs::metadata(dest).is_ok_and(|m| {
        let t = m.file_type();
        t.is_char_device() || t.is_block_device() || t.is_fifo() || t.is_socket()
    })
}

/// Whether `path` is where a `.wpp` is written before it is renamed into place
/// ([`staging_path`]): a recording's finisher's `X.wpp.tmp`, `wpp compress`'s
/// `X.wpp.ALGORITHM.tmp`.
pub fn is_staged_wpp(path: &Path) -> bool {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    name.ends_with(".tmp") && name.contains(".wpp.")
}

/// Where to write what becomes `dest`: beside it (`dest` + `suffix`), so that [`replace`] is
/// one atomic rename; in the temporary directory when `dest` is not a regular file.
pub fn staging_path(dest: &Path, suffix: &str) -> PathBuf {
    if !is_special(dest) {
        let mut p = dest.as_os_str().to_owned();
        p.push(suffix);
        return p.into();
    }
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let name = dest
        .file_name()
        .unwrap_or(dest.as_os_str())
        .to_string_lossy();
    std::env::temp_dir().join(format!(
        "wpp-{}-{}-{name}{suffix}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ))
}

/// Makes the file at `staged` (from [`staging_path`]) the content of `dest`: renamed over it,
/// or, where `dest` is not a regular file, copied into it and removed.
pub fn replace(staged: &Path, dest: &Path) -> io::Result<()> {
    if !is_special(dest) {
        return std::fs::rename(staged, dest);
    }
    let copied = std::fs::File::open(staged).and_then(|mut from| {
        let mut to = std::fs::OpenOptions::new().write(true).open(dest)?;
        io::copy(&mut from, &mut to)
    });
    let removed = std::fs::remove_file(staged);
    copied.and(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_regular_path_is_renamed_over() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("out.wpp");
        std::fs::write(&dest, b"old").unwrap();
        let staged = staging_path(&dest, ".tmp");
        assert_eq!(staged, dir.path().join("out.wpp.tmp"));
        std::fs::write(&staged, b"new").unwrap();
        replace(&staged, &dest).unwrap();
        assert_eq!(std::fs::read(&dest).unwrap(), b"new");
        assert!(!staged.exists());
    }

    /// A FIFO stays a FIFO, and its reader gets the bytes.
    #[test]
    fn a_fifo_is_written_to_not_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.unwrap().success());
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::read(fifo).unwrap())
        };
        let staged = staging_path(&fifo, ".tmp");
        assert!(!staged.starts_with(dir.path()), "{}", staged.display());
        std::fs::write(&staged, b"grammar").unwrap();
        replace(&staged, &fifo).unwrap();
        assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
        assert_eq!(reader.join().unwrap(), b"grammar");
        assert!(!staged.exists());
    }
}
