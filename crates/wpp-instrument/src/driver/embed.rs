//! Objects that are native and carry their bitcode (gllvm's idea): `wpp cc -c` compiles with
//! clang's `-fembed-bitcode` and renames the section to [`SECTION`], so the system `ar`, `ranlib`
//! and linkers see an ordinary object (binutils' LLVM plugin looks for `.llvmbc` and would
//! mistake the object for an LTO module). The section is `SHF_EXCLUDE`: final links drop it,
//! relocatable links keep it.

use super::DriverError;
use object::read::archive::ArchiveFile;
use object::{Object, ObjectSection};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The ELF section holding an object's pre-instrumentation bitcode.
pub const SECTION: &str = ".wpp.bc";

/// LLVM bitcode magic: raw, and the wrapper header.
const MAGIC: [[u8; 4]; 2] = [*b"BC\xC0\xDE", [0xDE, 0xC0, 0x17, 0x0B]];

/// Whether bytes start with LLVM bitcode magic.
pub fn is_bitcode(data: &[u8]) -> bool {
    data.len() >= 4 && MAGIC.iter().any(|m| data[..4] == *m)
}

/// Whether a file starts with LLVM bitcode magic.
pub fn is_bitcode_file(p: &Path) -> bool {
    use std::io::Read;
    let mut magic = [0u8; 4];
    std::fs::File::open(p)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok()
        && is_bitcode(&magic)
}

/// What an input of a link contributes.
#[derive(Debug, Default)]
pub struct Bitcode {
    /// `(name, bitcode)` of each object (or archive member) that carries bitcode.
    pub modules: Vec<(String, Vec<u8>)>,
    /// Objects and archive members the link uses that carry none (assembly, other compilers).
    pub native: Vec<String>,
}

/// The embedded bitcode of an object, if any (none for files that are not objects, such as
/// linker scripts: the linker judges those). Errors name the object.
pub fn object_bitcode(name: &str, data: &[u8]) -> Result<Option<Vec<u8>>, DriverError> {
    let Ok(file) = object::File::parse(data) else {
        return Ok(None);
    };
    let Some(section) = file.section_by_name(SECTION) else {
        return Ok(None);
    };
    let bytes = section.data().map_err(|e| DriverError::Input {
        path: name.to_owned(),
        reason: format!("section {SECTION} unreadable: {e}"),
    })?;
    if !is_bitcode(bytes) {
        return Err(DriverError::Input {
            path: name.to_owned(),
            reason: format!(
                "section {SECTION} (at byte {}) does not start with LLVM bitcode",
                section.file_range().map_or(0, |r| r.0)
            ),
        });
    }
    Ok(Some(bytes.to_vec()))
}

/// Reads a file the link uses: an object (its bitcode, if any) or an archive (the bitcode of
/// the members named in `members`; every member when `members` is `None`).
pub fn gather(
    path: &Path,
    members: Option<&BTreeSet<String>>,
    out: &mut Bitcode,
) -> Result<(), DriverError> {
    let name = path.display().to_string();
    let data = std::fs::read(path).map_err(|e| DriverError::Input {
        path: name.clone(),
        reason: e.to_string(),
    })?;
    if let Ok(archive) = ArchiveFile::parse(&*data) {
        for member in archive.members() {
            let member = member.map_err(|e| DriverError::Input {
                path: name.clone(),
                reason: format!("bad archive member: {e}"),
            })?;
            let m = String::from_utf8_lossy(member.name()).into_owned();
            if members.is_some_and(|set| !set.contains(&m)) {
                continue;
            }
            let full = format!("{name}({m})");
            let bytes = member.data(&*data).map_err(|e| DriverError::Input {
                path: full.clone(),
                reason: e.to_string(),
            })?;
            push(full, bytes, out)?;
        }
        return Ok(());
    }
    push(name, &data, out)
}

fn push(name: String, data: &[u8], out: &mut Bitcode) -> Result<(), DriverError> {
    if is_bitcode(data) {
        out.modules.push((name, data.to_vec()));
        return Ok(());
    }
    match object_bitcode(&name, data)? {
        Some(bc) => out.modules.push((name, bc)),
        None => out.native.push(name),
    }
    Ok(())
}

/// The archive members a link used, by archive path, from the linker's `-t -t` trace: GNU ld
/// prints `(libz.a)deflate.o`, lld prints `libz.a(deflate.o)`.
pub fn traced_members(trace: &str) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for line in trace.lines().map(str::trim) {
        let parsed = if let Some(rest) = line.strip_prefix('(') {
            rest.split_once(')')
        } else if let Some(body) = line.strip_suffix(')') {
            body.rsplit_once('(')
        } else {
            None
        };
        if let Some((archive, member)) = parsed {
            if !archive.is_empty() && !member.is_empty() {
                out.entry(archive.to_owned())
                    .or_default()
                    .insert(member.to_owned());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_gnu_and_lld_traces() {
        let t = "/lib/x86_64-linux-gnu/Scrt1.o\nm.o\n(liba.a)a.o\n(liba.a)b.o\n\
                 ./libz.a(deflate.o)\n/usr/lib/libc.so.6\n(/x/lib c.a)c d.o\n";
        let m = traced_members(t);
        assert_eq!(m.len(), 3, "{m:?}");
        assert_eq!(m["liba.a"].iter().collect::<Vec<_>>(), ["a.o", "b.o"]);
        assert_eq!(m["./libz.a"].iter().collect::<Vec<_>>(), ["deflate.o"]);
        assert_eq!(m["/x/lib c.a"].iter().collect::<Vec<_>>(), ["c d.o"]);
    }

    #[test]
    fn magic_and_bad_objects() {
        assert!(is_bitcode(b"BC\xC0\xDE\x01"));
        assert!(!is_bitcode(b"\x7fELF"));
        assert_eq!(
            object_bitcode("script.so", b"GROUP ( libc.so.6 )").unwrap(),
            None
        );
    }
}
