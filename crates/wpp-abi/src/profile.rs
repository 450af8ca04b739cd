//! The run-time profile file (`bl` and `ppp` modes): what an instrumented program leaves at
//! exit and `wpp profile` reads.
//!
//! # File format
//!
//! ```text
//!  0  8  magic "WPPRPROF"
//!  8  1  version (u8) = 5
//!  9  8  body_len (u64, little-endian)
//! 17  4  body_crc (u32, little-endian): CRC-32 of the run id and the body
//! 21 16  run id (u128, little-endian; 0: none, as in a merge): the process's, RunInfo::id
//! 37  body_len bytes: postcard of ProfileFile, then of the program database's trailer
//!     (its source table: each block's file); the file ends here
//! ```
//!
//! The body is the embedded program (names, CFGs with their cut points) and the Ball–Larus
//! profile (function name → path id → count), so a profile is self-contained. The length and
//! checksum make damage an error with a position rather than different counts (issue 14: 16 of
//! 40 single bit flips in counts were accepted by version 1, and a profile concatenated with
//! itself read as the first copy): a flipped bit fails the checksum, a cut file is reported as
//! truncated with the bytes expected, and anything after the body is refused.
//!
//! Version 5 added the run id to the header. Version 4 added the run ([`RunInfo`]: command
//! line, exit status) as the body's last field.
//! Version 3 (the same without it), version 2 (without the trailer, so blocks inlined from a
//! header were shown in the function's own file) and version 1 (the version byte, then the
//! postcard body directly, with no length or checksum) still read; bytes after a body are
//! refused in every version.

use crate::EmbeddedProgram;
use wpp_paths::{BlProfile, PathId, PppProfile};

/// The magic of a run-time profile file.
pub const MAGIC: &[u8; 8] = b"WPPRPROF";
/// The layout version.
pub const VERSION: u8 = 5;
/// Bytes before the body: magic, version, body length, checksum, run id.
pub const HEADER_LEN: usize = 37;
/// Bytes before the body in versions 2 to 4, which had no run id; the checksum covers
/// everything after them in every version.
const HEADER_LEN_V4: usize = 21;

/// A profile written by an instrumented program.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ProfileFile {
    /// What the program was instrumented with.
    pub program: EmbeddedProgram,
    /// Ball–Larus counts, by function name (`bl` mode).
    pub bl: BlProfile,
    /// Preferential path counts (`ppp` mode): per function, counts of the interesting paths
    /// (identified by Ball–Larus id) and the exact counts of the uninteresting ones.
    pub ppp: Option<PppProfile>,
    /// The run that left the profile; `None` in a merge of several runs and in files before
    /// version 4.
    pub run: Option<RunInfo>,
}

/// The run a profile is of: what `wpp db` stores in `runs` (issue 16).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RunInfo {
    /// The program's arguments, `argv[0]` first (from `/proc/self/cmdline`; bytes that are
    /// not UTF-8 replaced).
    pub command_line: Vec<String>,
    /// The status the process exited with (`exit`, a return from `main`, `_exit`); `None`
    /// while it runs (a snapshot), and when it died of a signal or replaced itself by `exec`.
    pub exit_status: Option<i32>,
    /// The process's run id: random, chosen when it starts (a forked child chooses its own),
    /// and the same in each of its snapshots. It tells two runs with equal counts apart, and
    /// a copy or later snapshot of one run from another run (`wpp db`). In the header, not
    /// the body; `None` before version 5.
    #[serde(skip)]
    pub id: Option<u128>,
}

impl RunInfo {
    /// The command line as one line a POSIX shell would split back into the arguments: an
    /// argument with anything but letters, digits and `_./=:,+@%-` is single-quoted.
    pub fn command_text(&self) -> String {
        let plain = |a: &str| {
            !a.is_empty()
                && a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_./=:,+@%-".contains(c))
        };
        let words: Vec<String> = self
            .command_line
            .iter()
            .map(|a| match plain(a) {
                true => a.clone(),
                false => format!("'{}'", a.replace('\'', "'\\''")),
            })
            .collect();
        words.join(" ")
    }
}

/// The counts of a version 3 profile, which had no [`RunInfo`].
#[derive(serde::Deserialize)]
struct CountsV3 {
    bl: BlProfile,
    ppp: Option<PppProfile>,
}

/// A profile file of versions 1 to 3, which had no [`RunInfo`].
#[derive(serde::Deserialize)]
struct ProfileFileV3 {
    program: EmbeddedProgram,
    bl: BlProfile,
    ppp: Option<PppProfile>,
}

/// Errors reading a profile file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProfileError {
    /// Not a profile file.
    #[error("not a wpp run-time profile (bad magic at byte offset 0)")]
    BadMagic,
    /// Another version.
    #[error("unsupported profile version {0} at byte offset 8 (this build reads 1 to {VERSION})")]
    Version(u8),
    /// The file ends before the length its header or its body says.
    #[error(
        "profile is truncated at byte offset {offset}: expected {expected} bytes, found {found}"
    )]
    Truncated {
        /// Where the missing bytes should start (the file's length).
        offset: u64,
        /// How long the file should be.
        expected: u64,
        /// How long it is.
        found: u64,
    },
    /// The body's checksum does not match: the file is damaged.
    #[error("checksum mismatch in the profile body at byte offset {HEADER_LEN_V4}")]
    Checksum,
    /// Bytes follow the profile (e.g. two profiles concatenated).
    #[error("{extra} bytes after the end of the profile at byte offset {offset}")]
    Trailing {
        /// Where the profile ends.
        offset: u64,
        /// How many bytes follow.
        extra: u64,
    },
    /// The body does not decode.
    #[error("malformed profile body at byte offset {offset}: {message}")]
    Malformed {
        /// Where the body starts.
        offset: u64,
        /// The deserializer's message.
        message: String,
    },
    /// Profiles that cannot be merged or compared: of different programs, modes or PPP plans.
    #[error("{0}")]
    Mismatch(String),
}

impl ProfileFile {
    /// Encodes the file in the current version.
    pub fn to_bytes(&self) -> Vec<u8> {
        let body = crate::Trailer::append_to(self, &self.program.program).expect("serializable");
        let id = self.run.as_ref().and_then(|r| r.id).unwrap_or(0);
        let mut checked = id.to_le_bytes().to_vec();
        checked.extend_from_slice(&body);
        let mut out = MAGIC.to_vec();
        out.push(VERSION);
        out.extend_from_slice(&(body.len() as u64).to_le_bytes());
        out.extend_from_slice(&crc32fast::hash(&checked).to_le_bytes());
        out.extend_from_slice(&checked);
        out
    }

    /// Decodes a file of any version. Nothing is allocated before the length is checked
    /// against the bytes present.
    pub fn from_bytes(bytes: &[u8]) -> Result<ProfileFile, ProfileError> {
        let body = checked_body(bytes)?;
        let mut file = decode_body(bytes, body.at, body.version)?;
        set_id(&mut file.run, body.id);
        Ok(file)
    }

    /// Adds `other`'s counts to this profile (saturating), e.g. the profiles the processes of
    /// one program left. Both must come from the same instrumented program (the same embedded
    /// program database, so path ids mean the same paths) and the same mode; in `ppp` mode a
    /// function's interesting set must also be the same.
    pub fn merge(&mut self, other: &ProfileFile) -> Result<(), ProfileError> {
        if self.program.mode != other.program.mode {
            return Err(ProfileError::Mismatch(format!(
                "a {} profile and a {} profile",
                self.program.mode.name(),
                other.program.mode.name()
            )));
        }
        if self.program != other.program {
            return Err(ProfileError::Mismatch(program_difference(
                &self.program,
                &other.program,
            )));
        }
        self.run = None;
        self.add(&other.bl, other.ppp.as_ref())
    }

    /// Adds the counts of a profile of this profile's build (see [`Build::counts`]): as
    /// [`merge`](Self::merge) without comparing programs, which their bytes already did.
    pub fn merge_counts(&mut self, counts: &Counts) -> Result<(), ProfileError> {
        self.run = None;
        self.add(&counts.bl, counts.ppp.as_ref())
    }

    fn add(&mut self, bl: &BlProfile, ppp: Option<&PppProfile>) -> Result<(), ProfileError> {
        self.bl.merge(bl);
        match (&mut self.ppp, ppp) {
            (Some(a), Some(b)) => a
                .merge(b)
                .map_err(|e| ProfileError::Mismatch(e.to_string())),
            (None, None) => Ok(()),
            _ => Err(ProfileError::Mismatch(
                "one profile has PPP counts and the other has not".into(),
            )),
        }
    }
}

/// A profile's counts without its program: the fields of [`ProfileFile`] after `program`.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Deserialize)]
pub struct Counts {
    /// [`ProfileFile::bl`].
    pub bl: BlProfile,
    /// [`ProfileFile::ppp`].
    pub ppp: Option<PppProfile>,
    /// [`ProfileFile::run`].
    pub run: Option<RunInfo>,
}

/// The encoding of a profile's program (the embedded program and its trailer), which tells the
/// profiles of one build apart by their bytes. The program database is most of a profile (a
/// SQLite `bl` profile is 790 KB of program around a few KB of counts), so reading thousands
/// of profiles of one program by decoding each whole and comparing programs field by field
/// spent nearly all its time on the program (issue 16 item 5).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Build {
    program: Vec<u8>,
    trailer: Vec<u8>,
}

impl Build {
    /// The build of `program`, as the current version encodes it.
    pub fn of(program: &EmbeddedProgram) -> Build {
        Build {
            program: postcard::to_allocvec(program).expect("serializable"),
            trailer: crate::Trailer::bytes(&program.program).expect("serializable"),
        }
    }

    /// The counts of the profile file `bytes` if its program is this build's byte for byte
    /// (equal bytes decode to equal programs); `Ok(None)` otherwise — another build, or an
    /// older version — for [`ProfileFile::from_bytes`] and [`ProfileFile::merge`] to read
    /// and compare whole. Damage is an error, as in [`ProfileFile::from_bytes`].
    pub fn counts(&self, bytes: &[u8]) -> Result<Option<Counts>, ProfileError> {
        let CheckedBody { version, at, id } = checked_body(bytes)?;
        let Some(rest) = bytes[at..].strip_prefix(&self.program[..]) else {
            return Ok(None);
        };
        if version < 3 {
            return Ok(None);
        }
        let offset = bytes.len() - rest.len();
        let malformed = |e: postcard::Error| ProfileError::Malformed {
            offset: offset as u64,
            message: e.to_string(),
        };
        let (mut counts, rest) = match version {
            3 => {
                let (old, rest) = postcard::take_from_bytes::<CountsV3>(rest).map_err(malformed)?;
                let (bl, ppp) = (old.bl, old.ppp);
                (Counts { bl, ppp, run: None }, rest)
            }
            _ => postcard::take_from_bytes::<Counts>(rest).map_err(malformed)?,
        };
        set_id(&mut counts.run, id);
        Ok((rest == &self.trailer[..]).then_some(counts))
    }
}

impl Build {
    /// As [`counts`](Self::counts), but each `bl` count is handed to `each` (function, path
    /// id, count) as it is decoded, in file order, instead of being collected into maps:
    /// reading 10^4 profiles of one build spent a sixth of its time building them (issue 16).
    /// The rest of the counts (`ppp`, if any, and the run) are returned whole, with an empty
    /// `bl`. `Ok(None)` (another build) is known before any count is handed out.
    pub fn each_count(
        &self,
        bytes: &[u8],
        each: impl FnMut(&str, u64, u64),
    ) -> Result<Option<Counts>, ProfileError> {
        let CheckedBody { version, at, id } = checked_body(bytes)?;
        let Some(rest) = bytes[at..].strip_prefix(&self.program[..]) else {
            return Ok(None);
        };
        if version < 3 || !rest.ends_with(&self.trailer) {
            return Ok(None);
        }
        let offset = bytes.len() - rest.len();
        let malformed = |offset: usize, message: String| ProfileError::Malformed {
            offset: offset as u64,
            message,
        };
        let mut de = postcard::Deserializer::from_bytes(rest);
        let seed = stream::CountsSeed {
            each,
            with_run: version >= 4,
        };
        let mut rest = serde::de::DeserializeSeed::deserialize(seed, &mut de)
            .map_err(|e| malformed(offset, e.to_string()))?;
        set_id(&mut rest.run, id);
        let after = de
            .finalize()
            .map_err(|e| malformed(offset, e.to_string()))?;
        if after != &self.trailer[..] {
            let at = bytes.len() - after.len();
            let message = "the counts do not end where the program's trailer starts".into();
            return Err(malformed(at, message));
        }
        Ok(Some(rest))
    }
}

/// The serde seeds of [`Build::each_count`]: [`Counts`] decoded with its `bl` maps visited
/// rather than built (postcard encodes a struct as its fields in order, a map as a length and
/// its entries).
mod stream {
    use std::fmt;

    use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

    use super::Counts;

    /// [`Counts`]: `bl` visited, the rest returned (with an empty `bl`).
    pub struct CountsSeed<F> {
        /// Called with each `bl` count.
        pub each: F,
        /// Whether the counts end with the run (version 4).
        pub with_run: bool,
    }

    impl<'de, F: FnMut(&str, u64, u64)> DeserializeSeed<'de> for CountsSeed<F> {
        type Value = Counts;

        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_tuple(2 + usize::from(self.with_run), self)
        }
    }

    impl<'de, F: FnMut(&str, u64, u64)> Visitor<'de> for CountsSeed<F> {
        type Value = Counts;

        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a profile's counts")
        }

        fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<Self::Value, A::Error> {
            let missing = || serde::de::Error::custom("the counts end early");
            seq.next_element_seed(Functions(&mut self.each))?
                .ok_or_else(missing)?;
            let ppp = seq.next_element()?.ok_or_else(missing)?;
            let run = match self.with_run {
                true => seq.next_element()?.ok_or_else(missing)?,
                false => None,
            };
            Ok(Counts {
                bl: Default::default(),
                ppp,
                run,
            })
        }
    }

    /// `BlProfile::functions`: function name → its paths' counts.
    struct Functions<'a, F>(&'a mut F);

    impl<'de, F: FnMut(&str, u64, u64)> DeserializeSeed<'de> for Functions<'_, F> {
        type Value = ();

        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
            d.deserialize_map(self)
        }
    }

    impl<'de, F: FnMut(&str, u64, u64)> Visitor<'de> for Functions<'_, F> {
        type Value = ();

        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("functions' path counts")
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            while let Some(name) = map.next_key::<&str>()? {
                map.next_value_seed(Paths(name, &mut *self.0))?;
            }
            Ok(())
        }
    }

    /// One function's path id → count.
    struct Paths<'a, 'n, F>(&'n str, &'a mut F);

    impl<'de, F: FnMut(&str, u64, u64)> DeserializeSeed<'de> for Paths<'_, '_, F> {
        type Value = ();

        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
            d.deserialize_map(self)
        }
    }

    impl<'de, F: FnMut(&str, u64, u64)> Visitor<'de> for Paths<'_, '_, F> {
        type Value = ();

        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("path counts")
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            while let Some((id, count)) = map.next_entry::<u64, u64>()? {
                (self.1)(self.0, id, count);
            }
            Ok(())
        }
    }
}

impl ProfileFile {
    /// Checks that `other`'s path ids mean the same paths as this profile's: the same program
    /// database and CFGs. The modes may differ: a `bl` and a `ppp` profile of one program
    /// compare (see [`path_counts`](Self::path_counts)).
    pub fn check_same_paths(&self, other: &ProfileFile) -> Result<(), ProfileError> {
        let (a, b) = (&self.program, &other.program);
        if a.program != b.program || a.cfgs != b.cfgs {
            return Err(ProfileError::Mismatch(program_difference(a, b)));
        }
        Ok(())
    }

    /// Every executed path's count by Ball–Larus id, whatever the mode: a `ppp` profile's
    /// interesting and uninteresting executions together (the counts a `bl` run of the same
    /// input gives, PPP §5).
    pub fn path_counts(&self) -> BlProfile {
        with_ppp_counts(self.bl.clone(), self.ppp.as_ref())
    }
}

impl Counts {
    /// Every executed path's count by Ball–Larus id, as [`ProfileFile::path_counts`], without
    /// copying the `bl` counts.
    pub fn into_path_counts(self) -> BlProfile {
        with_ppp_counts(self.bl, self.ppp.as_ref())
    }
}

/// A profile's `bl` counts with its `ppp` ones added by Ball–Larus id.
fn with_ppp_counts(mut all: BlProfile, ppp: Option<&PppProfile>) -> BlProfile {
    for (name, id, c) in ppp.into_iter().flat_map(ppp_path_counts) {
        all.record(name, PathId(id), c);
    }
    all
}

/// Every executed path of a `ppp` profile as (function, Ball–Larus id, count): its interesting
/// paths' counts and its uninteresting ones, which [`ProfileFile::path_counts`] adds to the
/// `bl` counts.
pub fn ppp_path_counts(ppp: &PppProfile) -> impl Iterator<Item = (&str, u64, u64)> {
    ppp.functions.iter().flat_map(|(name, fp)| {
        let interesting = fp.interesting.iter().zip(&fp.counts);
        let all = interesting.chain(&fp.uninteresting);
        all.filter(|(_, &c)| c > 0)
            .map(move |(&id, &c)| (name.as_str(), id, c))
    })
}

/// A checked file's version, where its body starts, and its run id.
struct CheckedBody {
    version: u8,
    at: usize,
    id: Option<u128>,
}

/// The run id of a file of version 5 or later that has one, read from its header without
/// checking the file (for a quick lookup; readers check it).
pub fn peek_run_id(bytes: &[u8]) -> Option<u128> {
    if bytes.len() < HEADER_LEN || &bytes[..8] != MAGIC || bytes[8] < 5 {
        return None;
    }
    let id = u128::from_le_bytes(
        bytes[HEADER_LEN_V4..HEADER_LEN]
            .try_into()
            .expect("16 bytes"),
    );
    (id != 0).then_some(id)
}

/// Puts the header's run id into the run decoded from the body.
fn set_id(run: &mut Option<RunInfo>, id: Option<u128>) {
    if let Some(run) = run {
        run.id = id;
    }
}

/// Checks a file's magic, version, length and checksum.
fn checked_body(bytes: &[u8]) -> Result<CheckedBody, ProfileError> {
    if bytes.len() < 9 || &bytes[..8] != MAGIC {
        return Err(ProfileError::BadMagic);
    }
    match bytes[8] {
        1 => Ok(CheckedBody {
            version: 1,
            at: 9,
            id: None,
        }),
        v @ (2..=VERSION) => {
            let truncated = |expected: u64| ProfileError::Truncated {
                offset: bytes.len() as u64,
                expected,
                found: bytes.len() as u64,
            };
            let header = if v >= 5 { HEADER_LEN } else { HEADER_LEN_V4 };
            if bytes.len() < header {
                return Err(truncated(header as u64));
            }
            let len = u64::from_le_bytes(bytes[9..17].try_into().expect("8 bytes"));
            let crc = u32::from_le_bytes(bytes[17..21].try_into().expect("4 bytes"));
            let end = (header as u64).saturating_add(len);
            if (bytes.len() as u64) < end {
                return Err(truncated(end));
            }
            let end = end as usize;
            if bytes.len() > end {
                return Err(ProfileError::Trailing {
                    offset: end as u64,
                    extra: (bytes.len() - end) as u64,
                });
            }
            if crc32fast::hash(&bytes[HEADER_LEN_V4..]) != crc {
                return Err(ProfileError::Checksum);
            }
            Ok(CheckedBody {
                version: v,
                at: header,
                id: peek_run_id(bytes),
            })
        }
        v => Err(ProfileError::Version(v)),
    }
}

/// Decodes the body of a file of `version` starting at `at`, which must end the file (after
/// the program database's trailer, from version 3).
fn decode_body(bytes: &[u8], at: usize, version: u8) -> Result<ProfileFile, ProfileError> {
    let malformed = |offset: usize, e: postcard::Error| ProfileError::Malformed {
        offset: offset as u64,
        message: e.to_string(),
    };
    let (mut file, mut rest) = if version >= 4 {
        postcard::take_from_bytes::<ProfileFile>(&bytes[at..]).map_err(|e| malformed(at, e))?
    } else {
        let (old, rest) = postcard::take_from_bytes::<ProfileFileV3>(&bytes[at..])
            .map_err(|e| malformed(at, e))?;
        let (program, bl, ppp) = (old.program, old.bl, old.ppp);
        let file = ProfileFile {
            program,
            bl,
            ppp,
            run: None,
        };
        (file, rest)
    };
    if version >= 3 {
        let offset = bytes.len() - rest.len();
        rest = crate::Trailer::take(rest, &mut file.program.program)
            .map_err(|e| malformed(offset, e))?;
    }
    if !rest.is_empty() {
        return Err(ProfileError::Trailing {
            offset: (bytes.len() - rest.len()) as u64,
            extra: rest.len() as u64,
        });
    }
    Ok(file)
}

/// What differs between two embedded programs, for the merge error.
fn program_difference(a: &EmbeddedProgram, b: &EmbeddedProgram) -> String {
    let (fa, fb) = (&a.program.functions, &b.program.functions);
    if fa.len() != fb.len() {
        return format!(
            "profiles of different programs ({} and {} functions)",
            fa.len(),
            fb.len()
        );
    }
    match fa.iter().zip(fb).position(|(x, y)| x.name != y.name) {
        Some(i) => format!(
            "profiles of different programs (function {i} is `{}` in one, `{}` in the other)",
            fa[i].name, fb[i].name
        ),
        None => "profiles of different builds of a program (their CFGs or source locations differ)"
            .into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Mode, EMBEDDED_VERSION};
    use proptest::prelude::*;
    use std::collections::BTreeMap;
    use wpp_paths::profile::PppFunctionProfile;
    use wpp_paths::PathId;

    const NAMES: [&str; 3] = ["main", "f", "g"];

    fn program(mode: Mode, names: &[&str]) -> EmbeddedProgram {
        EmbeddedProgram {
            version: EMBEDDED_VERSION,
            mode,
            program: wpp_trace::ProgramDb {
                functions: names
                    .iter()
                    .map(|n| wpp_trace::Function {
                        name: (*n).into(),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            },
            cfgs: Vec::new(),
            ewpp: None,
        }
    }

    /// A `bl` profile of `records` (function index, path id, count).
    fn bl_file(records: &[(usize, u64, u64)]) -> ProfileFile {
        let mut bl = BlProfile::default();
        for &(f, id, c) in records {
            bl.record(NAMES[f], PathId(id), c);
        }
        ProfileFile {
            program: program(Mode::Bl, &NAMES),
            bl,
            ppp: None,
            run: Some(RunInfo {
                command_line: vec!["./prog".into(), "a b".into()],
                exit_status: Some(3),
                id: Some(0x0123_4567_89ab_cdef_0011_2233_4455_6677),
            }),
        }
    }

    /// A `ppp` profile with interesting paths 0..4 of `f` and the given counts.
    fn ppp_file(counts: &[u64], uninteresting: &[(u64, u64)]) -> ProfileFile {
        let mut ppp = PppProfile::default();
        ppp.functions.insert(
            "f".into(),
            PppFunctionProfile {
                interesting: (0..counts.len() as u64).collect(),
                counts: counts.to_vec(),
                uninteresting: uninteresting.iter().copied().collect(),
            },
        );
        ProfileFile {
            program: program(Mode::Ppp, &NAMES),
            bl: BlProfile::default(),
            ppp: Some(ppp),
            run: None,
        }
    }

    proptest! {
        /// Merged counts equal the per-path sums over every input (a map built by hand), and
        /// the merged file survives its encoding.
        #[test]
        fn bl_merge_sums_counts(
            files in prop::collection::vec(
                prop::collection::vec((0..3usize, 0..20u64, 1..1000u64), 0..30), 1..6)
        ) {
            let mut sum: BTreeMap<(usize, u64), u64> = BTreeMap::new();
            for &(f, id, c) in files.iter().flatten() {
                *sum.entry((f, id)).or_default() += c;
            }
            let mut merged = bl_file(&files[0]);
            for r in &files[1..] {
                merged.merge(&bl_file(r)).unwrap();
            }
            let mut got = BTreeMap::new();
            for (f, paths) in &merged.bl.functions {
                let fi = NAMES.iter().position(|n| n == f).unwrap();
                for (&id, &c) in paths {
                    got.insert((fi, id), c);
                }
            }
            prop_assert_eq!(got, sum);
            prop_assert_eq!(ProfileFile::from_bytes(&merged.to_bytes()).unwrap(), merged);
        }

        #[test]
        fn ppp_merge_sums_counts(
            a in prop::collection::vec(0..100u64, 4),
            b in prop::collection::vec(0..100u64, 4),
            ua in prop::collection::vec((10..15u64, 1..9u64), 0..4),
            ub in prop::collection::vec((10..15u64, 1..9u64), 0..4),
        ) {
            let ua: BTreeMap<u64, u64> = ua.into_iter().collect();
            let ub: BTreeMap<u64, u64> = ub.into_iter().collect();
            let mut merged = ppp_file(&a, &ua.iter().map(|(&k, &v)| (k, v)).collect::<Vec<_>>());
            merged
                .merge(&ppp_file(&b, &ub.iter().map(|(&k, &v)| (k, v)).collect::<Vec<_>>()))
                .unwrap();
            let f = &merged.ppp.as_ref().unwrap().functions["f"];
            let want: Vec<u64> = a.iter().zip(&b).map(|(x, y)| x + y).collect();
            prop_assert_eq!(&f.counts, &want);
            for id in 10..15 {
                let w = ua.get(&id).copied().unwrap_or(0) + ub.get(&id).copied().unwrap_or(0);
                prop_assert_eq!(f.uninteresting.get(&id).copied().unwrap_or(0), w);
            }
        }
    }

    proptest! {
        /// Oracle: a `ppp` profile's path counts are, path by path, its interesting count plus
        /// its uninteresting count (a map built by hand), with zero counts absent.
        #[test]
        fn path_counts_fold_ppp_counts_by_bl_id(
            counts in prop::collection::vec(0..5u64, 4),
            uninteresting in prop::collection::vec((2..8u64, 1..9u64), 0..5),
        ) {
            let file = ppp_file(&counts, &uninteresting);
            let mut want: BTreeMap<u64, u64> = BTreeMap::new();
            for (id, &c) in counts.iter().enumerate() {
                *want.entry(id as u64).or_default() += c;
            }
            let dedup: BTreeMap<u64, u64> = uninteresting.iter().copied().collect();
            for (id, c) in dedup {
                *want.entry(id).or_default() += c;
            }
            want.retain(|_, c| *c > 0);
            let got = file.path_counts();
            prop_assert_eq!(got.functions.get("f").cloned().unwrap_or_default(), want);
            prop_assert!(got.functions.keys().all(|f| f == "f"));
        }
    }

    /// Issue 14 item 3: a profile concatenated with itself, any single flipped bit and any
    /// truncation are errors that say where; nothing reads as different counts.
    #[test]
    fn damaged_profiles_are_refused_with_a_position() {
        let file = ppp_file(&[3, 1, 4, 1], &[(9, 2), (11, 5)]);
        let bytes = file.to_bytes();
        assert_eq!(ProfileFile::from_bytes(&bytes).unwrap(), file);
        let twice = [&bytes[..], &bytes[..]].concat();
        let e = ProfileFile::from_bytes(&twice).unwrap_err();
        let at = bytes.len();
        assert_eq!(
            e.to_string(),
            format!("{at} bytes after the end of the profile at byte offset {at}")
        );
        for bit in 0..bytes.len() * 8 {
            let mut flipped = bytes.clone();
            flipped[bit / 8] ^= 1 << (bit % 8);
            let e = ProfileFile::from_bytes(&flipped).unwrap_err();
            assert!(e.to_string().contains("byte offset"), "bit {bit}: {e}");
        }
        for cut in 0..bytes.len() {
            let e = ProfileFile::from_bytes(&bytes[..cut]).unwrap_err();
            let want = if cut < 9 { "bad magic" } else { "truncated" };
            assert!(e.to_string().contains(want), "cut at {cut}: {e}");
            assert!(e.to_string().contains("byte offset"), "cut at {cut}: {e}");
        }
        let e = ProfileFile::from_bytes(&bytes[..bytes.len() - 1]).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "profile is truncated at byte offset {}: expected {} bytes, found {}",
                at - 1,
                at,
                at - 1
            )
        );
    }

    /// The body of `file` as versions 1 to 3 encoded it (no run), and what they read as.
    fn before_v4(file: &ProfileFile) -> (Vec<u8>, ProfileFile) {
        let body = postcard::to_allocvec(&(&file.program, &file.bl, &file.ppp)).unwrap();
        (
            body,
            ProfileFile {
                run: None,
                ..file.clone()
            },
        )
    }

    /// `body` in the layout of versions 2 and later.
    fn with_header(version: u8, body: &[u8]) -> Vec<u8> {
        let len = (body.len() as u64).to_le_bytes();
        let crc = crc32fast::hash(body).to_le_bytes();
        [&MAGIC[..], &[version], &len, &crc, body].concat()
    }

    /// Version 5 keeps the run id (in the header, under the checksum), and each reader gives
    /// it; version 4 (the same body, no id) still reads, with the run but no id.
    #[test]
    fn the_run_id_round_trips_and_version_4_still_reads() {
        let file = bl_file(&[(0, 1, 7), (2, 5, 1)]);
        let id = file.run.as_ref().and_then(|r| r.id).expect("an id");
        let bytes = file.to_bytes();
        assert_eq!(peek_run_id(&bytes), Some(id));
        assert_eq!(ProfileFile::from_bytes(&bytes).unwrap(), file);
        let build = Build::of(&file.program);
        let counts = build
            .counts(&bytes)
            .unwrap()
            .expect("a profile of the build");
        assert_eq!(counts.run.and_then(|r| r.id), Some(id));
        let rest = build.each_count(&bytes, |_, _, _| {}).unwrap().unwrap();
        assert_eq!(rest.run.and_then(|r| r.id), Some(id));
        // A flipped bit in the id is damage, as in the body.
        let mut flipped = bytes.clone();
        flipped[HEADER_LEN_V4 + 3] ^= 4;
        assert!(matches!(
            ProfileFile::from_bytes(&flipped),
            Err(ProfileError::Checksum)
        ));
        let v4 = with_header(4, &bytes[HEADER_LEN..]);
        assert_eq!(peek_run_id(&v4), None);
        let mut without_id = file.clone();
        without_id.run.as_mut().unwrap().id = None;
        assert_eq!(ProfileFile::from_bytes(&v4).unwrap(), without_id);
        let counts = build.counts(&v4).unwrap().expect("a profile of the build");
        assert_eq!(counts.run, without_id.run);
    }

    /// Version 4 keeps the run; version 3 (a profile of every build before it) still reads,
    /// without it, and its counts are read by its build without decoding its program.
    #[test]
    fn the_run_round_trips_and_version_3_still_reads() {
        let file = bl_file(&[(0, 1, 7), (2, 5, 1)]);
        assert!(file.run.as_ref().is_some_and(|r| r.exit_status == Some(3)));
        assert_eq!(ProfileFile::from_bytes(&file.to_bytes()).unwrap(), file);
        let (_, without) = before_v4(&file);
        let tuple = (&file.program, &file.bl, &file.ppp);
        let body = crate::Trailer::append_to(&tuple, &file.program.program).unwrap();
        let v3 = with_header(3, &body);
        assert_eq!(ProfileFile::from_bytes(&v3).unwrap(), without);
        let build = Build::of(&file.program);
        let counts = build.counts(&v3).unwrap().expect("a profile of the build");
        assert_eq!(
            (&counts.bl, &counts.ppp, &counts.run),
            (&file.bl, &file.ppp, &None)
        );
        let mut each = BlProfile::default();
        let rest = build.each_count(&v3, |f, id, c| each.record(f, PathId(id), c));
        assert_eq!(rest.unwrap().map(|r| r.run), Some(None));
        assert_eq!(each, file.bl);
        let mut merged = file.clone();
        merged.merge(&file).unwrap();
        assert_eq!(merged.run, None);
    }

    #[test]
    fn command_text_quotes_what_a_shell_would_split() {
        let run = |args: &[&str]| RunInfo {
            command_line: args.iter().map(|a| a.to_string()).collect(),
            exit_status: None,
            id: None,
        };
        assert_eq!(run(&["./p", "-n", "a=1"]).command_text(), "./p -n a=1");
        let odd = run(&["./p", "a b", "it's", ""]).command_text();
        assert_eq!(odd, r"./p 'a b' 'it'\''s' ''");
    }

    /// Version 1 (no length, no checksum) still reads, and refuses a second copy after it.
    #[test]
    fn version_1_profiles_still_read() {
        let (body, file) = before_v4(&bl_file(&[(0, 1, 7), (2, 5, 1)]));
        let v1 = [&MAGIC[..], &[1], &body].concat();
        assert_eq!(ProfileFile::from_bytes(&v1).unwrap(), file);
        let e = ProfileFile::from_bytes(&[&v1[..], &v1[..]].concat()).unwrap_err();
        assert!(matches!(e, ProfileError::Trailing { offset, .. } if offset == v1.len() as u64));
    }

    /// Version 3 keeps each block's source file (version 2 lost it); version 2 still reads.
    #[test]
    fn the_source_table_round_trips_and_version_2_still_reads() {
        let mut file = bl_file(&[(0, 1, 7)]);
        file.program.program.files = vec!["m.c".into(), "h.h".into()];
        file.program.program.functions[0].block_files = vec![0, 1];
        assert_eq!(ProfileFile::from_bytes(&file.to_bytes()).unwrap(), file);
        let mut lines = file.clone();
        lines.program.program.functions[0].block_lines = vec![3, 7];
        lines.program.program.functions[0].block_inner_lines = vec![vec![4], vec![]];
        assert_eq!(ProfileFile::from_bytes(&lines.to_bytes()).unwrap(), lines);
        let build = Build::of(&lines.program);
        assert!(build.counts(&lines.to_bytes()).unwrap().is_some());
        assert!(build.counts(&file.to_bytes()).unwrap().is_none());
        let (body, mut without) = before_v4(&file);
        let v2 = with_header(2, &body);
        without.program.program.files.clear();
        without.program.program.functions[0].block_files.clear();
        assert_eq!(ProfileFile::from_bytes(&v2).unwrap(), without);
    }

    #[test]
    fn same_paths_ignores_the_mode_but_not_the_program() {
        let bl = bl_file(&[(0, 1, 1)]);
        assert!(bl.check_same_paths(&ppp_file(&[1], &[])).is_ok());
        let mut other = bl.clone();
        other.program = program(Mode::Bl, &["main", "f", "h"]);
        assert!(matches!(
            bl.check_same_paths(&other),
            Err(ProfileError::Mismatch(m)) if m.contains("`g` in one, `h` in the other")
        ));
    }

    proptest! {
        /// The counts handed out one by one are those [`Build::counts`] collects, in the same
        /// order, with the same `ppp` part; another build gets `None` and hears nothing.
        #[test]
        fn each_count_hands_out_what_counts_collects(
            records in prop::collection::vec((0..3usize, 0..50u64, 0..1000u64), 0..60),
            ppp in prop::option::of(prop::collection::vec(0..9u64, 1..4)),
        ) {
            let file = match &ppp {
                Some(counts) => ppp_file(counts, &[(7, 2)]),
                None => bl_file(&records),
            };
            let bytes = file.to_bytes();
            let build = Build::of(&file.program);
            let want = build.counts(&bytes).unwrap().unwrap();
            let mut got = Vec::new();
            let rest = build.each_count(&bytes, |f, id, c| got.push((f.to_owned(), id, c)));
            let want_bl: Vec<_> = want.bl.functions.iter()
                .flat_map(|(f, p)| p.iter().map(move |(&id, &c)| (f.clone(), id, c)))
                .collect();
            let want_rest = Counts { bl: BlProfile::default(), ..want };
            prop_assert_eq!(rest.unwrap(), Some(want_rest));
            prop_assert_eq!(got, want_bl);
            let mut other = file.program.clone();
            other.program.functions[2].line = Some(3);
            let mut heard = 0;
            let answer = Build::of(&other).each_count(&bytes, |_, _, _| heard += 1).unwrap();
            prop_assert_eq!((answer, heard), (None, 0));
        }
    }

    /// A profile of the same build gives its counts without decoding its program; another
    /// build, another mode and an older version give none (they are read whole); damage is
    /// still an error.
    #[test]
    fn a_build_reads_the_counts_of_its_own_profiles_only() {
        let a = bl_file(&[(0, 1, 7), (2, 5, 1)]);
        let build = Build::of(&a.program);
        let counts = build.counts(&a.to_bytes()).unwrap().unwrap();
        assert_eq!((counts.bl, counts.ppp), (a.bl.clone(), None));
        let ppp = ppp_file(&[3, 1], &[(9, 2)]);
        let same = Build::of(&ppp.program).counts(&ppp.to_bytes()).unwrap();
        assert_eq!(same.unwrap().ppp, ppp.ppp);
        assert_eq!(build.counts(&ppp.to_bytes()).unwrap(), None);
        let mut other = a.clone();
        other.program.program.functions[2].line = Some(3);
        assert_eq!(build.counts(&other.to_bytes()).unwrap(), None);
        let mut moved = a.clone();
        moved.program.program.files = vec!["m.c".into()];
        assert_eq!(build.counts(&moved.to_bytes()).unwrap(), None);
        let v1 = [&MAGIC[..], &[1], &before_v4(&a).0].concat();
        assert_eq!(build.counts(&v1).unwrap(), None);
        let mut flipped = a.to_bytes();
        let last = flipped.len() - 1;
        flipped[last] ^= 1;
        assert!(matches!(
            build.counts(&flipped),
            Err(ProfileError::Checksum)
        ));
    }

    fn mismatch(a: &ProfileFile, b: &ProfileFile) -> String {
        match a.clone().merge(b) {
            Err(ProfileError::Mismatch(m)) => m,
            other => panic!("expected a mismatch, got {other:?}"),
        }
    }

    #[test]
    fn merge_rejects_other_programs_modes_and_plans() {
        let a = bl_file(&[(0, 1, 1)]);
        let mut other = a.clone();
        other.program = program(Mode::Bl, &["main", "f", "h"]);
        assert!(mismatch(&a, &other).contains("function 2 is `g` in one, `h` in the other"));
        other.program = program(Mode::Bl, &["main"]);
        assert!(mismatch(&a, &other).contains("(3 and 1 functions)"));
        assert!(mismatch(&a, &ppp_file(&[1], &[])).contains("a bl profile and a ppp profile"));
        let mut plan = ppp_file(&[1, 2], &[]);
        plan.ppp
            .as_mut()
            .unwrap()
            .functions
            .get_mut("f")
            .unwrap()
            .interesting = vec![0, 7];
        assert!(mismatch(&ppp_file(&[1, 2], &[]), &plan).contains("different plans"));
    }
}
