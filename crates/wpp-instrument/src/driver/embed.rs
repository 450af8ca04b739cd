//! Objects that are native and carry their bitcode (gllvm's idea): `wpp cc -c` compiles with
//! clang's `-fembed-bitcode` and renames the section to [`SECTION`], so the system `ar`, `ranlib`
//! and linkers see an ordinary object (binutils' LLVM plugin looks for `.llvmbc` and would
//! mistake the object for an LTO module). The section is `SHF_EXCLUDE`: final links drop it,
//! relocatable links keep it. A relocatable link made by `ld -r` directly (not through
//! `wpp cc -r`) concatenates its inputs' sections, so one section may hold several bitcode
//! modules back to back; [`split_modules`] separates them.

use super::DriverError;
use object::read::archive::ArchiveFile;
use object::{Object, ObjectSection};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

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
            let bytes = member_data(path, &member, &data).map_err(|reason| DriverError::Input {
                path: full.clone(),
                reason,
            })?;
            push(full, &bytes, out)?;
        }
        return Ok(());
    }
    push(name, &data, out)
}

/// A member's bytes: in the archive, or for a thin archive's member (`ar T`, Meson's default)
/// in the file it names, relative to the archive's folder.
fn member_data<'d>(
    archive: &Path,
    member: &object::read::archive::ArchiveMember<'d>,
    data: &'d [u8],
) -> Result<std::borrow::Cow<'d, [u8]>, String> {
    if !member.is_thin() {
        return member.data(data).map(Into::into).map_err(|e| e.to_string());
    }
    let path = thin_member_path(archive, &String::from_utf8_lossy(member.name()));
    std::fs::read(&path)
        .map(Into::into)
        .map_err(|e| format!("thin archive member {}: {e}", path.display()))
}

/// The file a thin archive's member names.
fn thin_member_path(archive: &Path, member: &str) -> PathBuf {
    archive.parent().unwrap_or(Path::new("")).join(member)
}

/// The members of the thin archive at `archive` (none if it is not one): each name and the
/// file it names.
pub fn thin_members(archive: &Path) -> Vec<(String, PathBuf)> {
    use std::io::Read;
    let mut magic = [0u8; 8];
    let thin = std::fs::File::open(archive).and_then(|mut f| f.read_exact(&mut magic));
    if thin.is_err() || magic != object::archive::THIN_MAGIC {
        return Vec::new();
    }
    let Ok(data) = std::fs::read(archive) else {
        return Vec::new();
    };
    let Ok(file) = ArchiveFile::parse(&*data) else {
        return Vec::new();
    };
    if !file.is_thin() {
        return Vec::new();
    }
    file.members()
        .filter_map(Result::ok)
        .map(|m| String::from_utf8_lossy(m.name()).into_owned())
        .map(|m| (m.clone(), thin_member_path(archive, &m)))
        .collect()
}

/// Writes the members of `archive` named in `names` into `dir`, one file each (numbered, as
/// members may share a name); the paths in archive order.
pub fn extract_members(
    archive: &Path,
    names: &BTreeSet<String>,
    dir: &Path,
) -> Result<Vec<PathBuf>, DriverError> {
    let name = archive.display().to_string();
    let bad = |reason: String| DriverError::Input {
        path: name.clone(),
        reason,
    };
    let data = std::fs::read(archive).map_err(|e| bad(e.to_string()))?;
    let file = ArchiveFile::parse(&*data).map_err(|e| bad(format!("not an archive: {e}")))?;
    let mut out = Vec::new();
    for (i, member) in file.members().enumerate() {
        let member = member.map_err(|e| bad(format!("bad archive member: {e}")))?;
        let m = String::from_utf8_lossy(member.name()).into_owned();
        if !names.contains(&m) {
            continue;
        }
        let bytes = member_data(archive, &member, &data).map_err(bad)?;
        let path = dir.join(format!("member{i}-{}", m.replace('/', "_")));
        std::fs::write(&path, bytes).map_err(DriverError::Temp)?;
        out.push(path);
    }
    Ok(out)
}

fn push(name: String, data: &[u8], out: &mut Bitcode) -> Result<(), DriverError> {
    if is_bitcode(data) {
        out.modules.push((name, data.to_vec()));
        return Ok(());
    }
    let Some(bc) = object_bitcode(&name, data)? else {
        out.native.push(name);
        return Ok(());
    };
    let modules = split_modules(&bc).map_err(|reason| DriverError::Input {
        path: name.clone(),
        reason: format!("section {SECTION}: {reason}"),
    })?;
    if modules.len() == 1 {
        out.modules.push((name, bc));
    } else {
        for (k, m) in modules.into_iter().enumerate() {
            out.modules
                .push((format!("{name}[bitcode module {}]", k + 1), m.to_vec()));
        }
    }
    Ok(())
}

/// The bitcode modules in `bytes`, which starts with bitcode magic: one, or several back to
/// back (an `ld -r` output's section). A raw module is its magic then top-level blocks, each an
/// `ENTER_SUBBLOCK` of LLVM's bitstream format (abbreviation id 1 in 2 bits, block id vbr8,
/// abbreviation width vbr4, alignment to 32 bits, the block's length in 32-bit words); a module
/// ends where its last block does and the next word is the magic again (a top-level item can
/// never look like it: its low 2 bits are 2, not `ENTER_SUBBLOCK`'s 1). Zero bytes after the
/// last module (section alignment) are ignored. A wrapped module (`0x0B17C0DE` header, which
/// Darwin uses) is taken whole.
pub fn split_modules(bytes: &[u8]) -> Result<Vec<&[u8]>, String> {
    if bytes.starts_with(&MAGIC[1]) {
        return Ok(vec![bytes]);
    }
    let mut modules = Vec::new();
    let mut start = 0;
    while start < bytes.len() && bytes[start..].iter().any(|&b| b != 0) {
        if !bytes[start..].starts_with(&MAGIC[0]) {
            return Err(format!(
                "byte {start} starts neither a bitcode module nor padding"
            ));
        }
        let end = module_end(bytes, start)?;
        modules.push(&bytes[start..end]);
        start = end;
    }
    Ok(modules)
}

/// Where the raw bitcode module starting at byte `start` ends (see [`split_modules`]).
fn module_end(bytes: &[u8], start: usize) -> Result<usize, String> {
    let mut bits = Bits {
        bytes,
        pos: (start + 4) * 8,
    };
    loop {
        let at = bits.pos / 8;
        if at >= bytes.len() || bytes[at..].starts_with(&MAGIC[0]) {
            return Ok(at.min(bytes.len()));
        }
        if bytes[at..].iter().all(|&b| b == 0) {
            return Ok(at);
        }
        let block = (|| {
            (bits.read(2)? == 1).then_some(())?;
            bits.vbr(8)?;
            bits.vbr(4)?;
            bits.pos = bits.pos.next_multiple_of(32);
            let words = bits.read(32)? as usize;
            bits.pos = bits.pos.checked_add(words.checked_mul(32)?)?;
            (bits.pos <= bytes.len() * 8).then_some(())
        })();
        if block.is_none() {
            return Err(format!(
                "the top-level bitcode block at byte {at} is not a block or runs past the end"
            ));
        }
    }
}

/// A reader of LLVM's bitstream: fields are read least significant bit first.
struct Bits<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl Bits<'_> {
    /// The next `n` (≤ 64) bits, `None` past the end.
    fn read(&mut self, n: usize) -> Option<u64> {
        let mut v = 0;
        for i in 0..n {
            let byte = *self.bytes.get((self.pos + i) / 8)?;
            v |= u64::from((byte >> ((self.pos + i) % 8)) & 1) << i;
        }
        self.pos += n;
        Some(v)
    }

    /// A variable-width integer in chunks of `n` bits (the top bit of each says "more").
    fn vbr(&mut self, n: usize) -> Option<u64> {
        let mut v = 0;
        for shift in (0..64).step_by(n - 1) {
            let chunk = self.read(n)?;
            v |= (chunk & ((1 << (n - 1)) - 1)) << shift;
            if chunk >> (n - 1) == 0 {
                return Some(v);
            }
        }
        None
    }
}

/// The archive members a link used, by archive path, from the linker's `-t -t` trace: GNU ld
/// prints `(libz.a)deflate.o`, lld prints `libz.a(deflate.o)`. GNU ld prints a thin archive's
/// used member as the file it names (`./c.o`, after the archive's own line; a file named before
/// it is an input of its own): the members of each thin archive whose files follow it.
pub fn traced_members(trace: &str) -> BTreeMap<String, BTreeSet<String>> {
    let mut out = traced_archive_members(trace);
    let lines: Vec<&str> = trace.lines().map(str::trim).collect();
    for (i, archive) in lines.iter().enumerate() {
        let members = thin_members(Path::new(archive));
        if members.is_empty() {
            continue;
        }
        let after: BTreeSet<PathBuf> = lines[i + 1..]
            .iter()
            .filter_map(|l| std::fs::canonicalize(l).ok())
            .collect();
        for (name, file) in members {
            if std::fs::canonicalize(&file).is_ok_and(|f| after.contains(&f)) {
                out.entry((*archive).to_owned()).or_default().insert(name);
            }
        }
    }
    out
}

/// The `archive(member)` lines of a `-t -t` trace, in either linker's form.
fn traced_archive_members(trace: &str) -> BTreeMap<String, BTreeSet<String>> {
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
        let m = traced_archive_members(t);
        assert_eq!(m.len(), 3, "{m:?}");
        assert_eq!(m["liba.a"].iter().collect::<Vec<_>>(), ["a.o", "b.o"]);
        assert_eq!(m["./libz.a"].iter().collect::<Vec<_>>(), ["deflate.o"]);
        assert_eq!(m["/x/lib c.a"].iter().collect::<Vec<_>>(), ["c d.o"]);
    }

    /// A raw module: magic, then one top-level block per entry of `blocks` (its body's length
    /// in words), as LLVM writes them (block id 8 in vbr8, abbreviation width 3 in vbr4).
    fn module(blocks: &[u32]) -> Vec<u8> {
        let mut m = MAGIC[0].to_vec();
        for &words in blocks {
            // abbrev 1 (2 bits), block id 8 (8 bits), width 3 (4 bits): 14 bits, then padding.
            let header: u32 = 1 | (8 << 2) | (3 << 10);
            m.extend(header.to_le_bytes());
            m.extend(words.to_le_bytes());
            m.extend(std::iter::repeat_n(0xAB, 4 * words as usize));
        }
        m
    }

    #[test]
    fn splits_concatenated_modules_at_their_top_level_blocks() {
        let (a, b) = (module(&[2, 0, 5]), module(&[1]));
        let mut both = [a.clone(), b.clone(), vec![0; 3]].concat();
        assert_eq!(split_modules(&a).unwrap(), [&a[..]]);
        assert_eq!(split_modules(&both).unwrap(), [&a[..], &b[..]]);
        // A body that contains the magic is skipped over by its length, not split there.
        let mut c = module(&[1]);
        let n = c.len();
        c[n - 4..].copy_from_slice(&MAGIC[0]);
        let cb = [c.clone(), b.clone()].concat();
        assert_eq!(split_modules(&cb).unwrap(), [&c[..], &b[..]]);
        // A block longer than the bytes left, and garbage between modules, are errors.
        both.truncate(a.len() - 4);
        assert!(split_modules(&both)
            .unwrap_err()
            .contains("runs past the end"));
        let junk = [a.clone(), b"junk".to_vec()].concat();
        assert!(split_modules(&junk).is_err());
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
