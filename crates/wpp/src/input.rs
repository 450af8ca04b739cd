//! The one input layer every command reads through: it recognises each kind of wpp file by its
//! first bytes and gives a command the kind it needs, or a one-line error naming the file, the
//! kind found and the command that reads it.
//!
//! | kind | recognised by | read by |
//! |---|---|---|
//! | binary trace | `WPPT` | `wpp compress`, `wpp trace`, `wpp match`, `wpp verify`, `wpp functions` |
//! | `.wpp` grammar | `WPPG` | `wpp hot`, `wpp subpath`, `wpp stats`, `wpp match`, … |
//! | chunked container | `WPPC` | `wpp match` |
//! | bl/ppp profile | `WPPRPROF` | `wpp profile`, `wpp functions`, `wpp cfg`, `wpp paths`, `wpp ppp plan` |
//! | CFG JSON | `{` or `[` first (after white space) | `wpp cfg`, `wpp paths`, `wpp ppp plan` |
//! | text trace | UTF-8 whose first line is an event (`F`, `B`, `P`, `E`, `T`, `D`) or `#` | as binary traces |
//! | address trace | `WPP-AT` | `wpp deps` |
//! | dependence report | `WPP-DEPF` | `wpp deps filter`, `wpp cc --mode ewpp` |
//!
//! Missing files, directories, empty files and anything else are errors before any reader
//! runs, so no command prints a reader's view of a file it cannot read (`line 12: not UTF-8`).

use std::fmt;
use std::io::Read;
use std::os::unix::fs::FileTypeExt;
use std::path::Path;

use anyhow::{bail, Context};
use std::collections::BTreeMap;
use wpp_abi::profile::ProfileFile;
use wpp_grammar::file::WppFile;
use wpp_grammar::StartRule;
use wpp_paths::dag::DagNodeKind;
use wpp_paths::{BallLarus, Cfg, Dag, PathId};
use wpp_trace::{ProgramDb, TraceReader};

/// What a file holds, by its first bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A binary trace (`WPPT`).
    Trace,
    /// A text trace.
    TextTrace,
    /// A `.wpp` grammar (`WPPG`).
    Wpp,
    /// A chunked grammar container (`WPPC`, `wpp trace chunk`).
    Chunked,
    /// A run-time path profile (`WPPRPROF`, recordings in `bl` or `ppp` mode).
    Profile,
    /// JSON, taken to be CFGs (`wpp paths` documents the schema).
    CfgJson,
    /// An address trace (`WPP-AT`, recordings in `trace-addr` mode).
    AddressTrace,
    /// The filtering run's report of exercised dependences (`WPP-DEPF`).
    DependenceReport,
}

impl Kind {
    /// The kind's name in messages.
    fn name(self) -> &'static str {
        match self {
            Kind::Trace => "binary trace",
            Kind::TextTrace => "text trace",
            Kind::Wpp => ".wpp grammar",
            Kind::Chunked => "chunked grammar container",
            Kind::Profile => "bl/ppp path profile",
            Kind::CfgJson => "CFG JSON file",
            Kind::AddressTrace => "address trace",
            Kind::DependenceReport => "dependence report",
        }
    }

    /// The kind's name with its article, as a message's sentence needs it.
    pub fn with_article(self) -> String {
        let name = self.name();
        match name.starts_with(['a', 'e', 'i', 'o', 'u']) {
            true => format!("an {name}"),
            false => format!("a {name}"),
        }
    }

    /// What a user can run on a file of this kind.
    pub fn readers(self) -> &'static str {
        match self {
            Kind::Trace | Kind::TextTrace => {
                "`wpp compress FILE -o FILE.wpp` makes a grammar of it; \
                 `wpp match`, `wpp functions` and `wpp trace` read it as it is"
            }
            Kind::Wpp => {
                "`wpp hot`, `wpp subpath`, `wpp stats`, `wpp match` and `wpp functions` read it"
            }
            Kind::Chunked => "`wpp match` reads it",
            Kind::Profile => {
                "`wpp profile show`, `wpp functions`, `wpp cfg` and `wpp paths` read it"
            }
            Kind::CfgJson => "`wpp cfg`, `wpp paths` and `wpp ppp plan` read it",
            Kind::AddressTrace => {
                "`wpp deps list`, `wpp deps stats`, `wpp deps chain`, `wpp deps filter` and \
                 `wpp deps ecf` read it"
            }
            Kind::DependenceReport => {
                "`wpp deps filter` shows its classes; `wpp cc --wpp-mode=ewpp \
                 --wpp-exercised=FILE` builds with it"
            }
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Bytes read to recognise a file: enough for every magic and a text trace's first line.
const SNIFF_BYTES: u64 = 4096;

/// Recognises the file at `path`; missing files, directories, empty files and unknown contents
/// are errors naming the file.
pub fn sniff(path: &Path) -> anyhow::Result<Kind> {
    let shown = path.display();
    let meta = std::fs::metadata(path).with_context(|| unwritten(path))?;
    if meta.is_dir() {
        bail!("{shown} is a directory, not a wpp file");
    }
    // What is sniffed here is gone from a pipe when the command opens it again.
    if meta.file_type().is_fifo() || meta.file_type().is_socket() {
        bail!("{shown} is a pipe: wpp reads its inputs from files; write it to a file first");
    }
    if wpp_trace::output::is_staged_wpp(path) {
        bail!(
            "{shown} is a .wpp still being written (a temporary file, renamed into place when \
             whole): read the .wpp once it is there, or meanwhile its recording's raw trace \
             (PROGRAM.PID.trace)"
        );
    }
    let mut head = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(SNIFF_BYTES).read_to_end(&mut head))
        .with_context(|| format!("cannot read {shown}"))?;
    if head.is_empty() {
        bail!("{shown} is empty (a recording that was cut short before it wrote anything?)");
    }
    kind_of(&head).with_context(|| {
        format!(
            "{shown} is not a wpp file: it starts with {:?}; wpp reads traces, .wpp grammars, \
             chunked containers, bl/ppp profiles, CFG JSON, address traces and dependence \
             reports",
            String::from_utf8_lossy(&head[..head.len().min(8)])
        )
    })
}

/// Why `path` cannot be read: a `.wpp` whose recording left its raw trace beside it is still
/// being finished, or its run ended before the finisher (a fatal signal, a kill).
fn unwritten(path: &Path) -> String {
    let spool = path.with_extension("trace");
    let is_wpp = path.extension().is_some_and(|e| e == "wpp");
    if is_wpp && spool.is_file() {
        return format!(
            "cannot read {}: it is not written yet, but its recording's raw trace {} is: the \
             program may still be running (the .wpp comes after it exits), the finisher may \
             still be writing it in the background, or the run ended before it (`wpp compress \
             {} -o {} --algorithm phrase` makes it now)",
            path.display(),
            spool.display(),
            spool.display(),
            path.display()
        );
    }
    format!("cannot read {}", path.display())
}

/// The kind whose magic or syntax `head` (the file's first bytes) starts with.
fn kind_of(head: &[u8]) -> Option<Kind> {
    let magics: [(&[u8], Kind); 6] = [
        (&wpp_trace::file::binary::MAGIC, Kind::Trace),
        (&wpp_grammar::file::MAGIC, Kind::Wpp),
        (b"WPPC", Kind::Chunked),
        (wpp_abi::profile::MAGIC, Kind::Profile),
        (wpp_deps::at::MAGIC, Kind::AddressTrace),
        (wpp_deps::filter::MAGIC, Kind::DependenceReport),
    ];
    if let Some(&(_, k)) = magics.iter().find(|(m, _)| head.starts_with(m)) {
        return Some(k);
    }
    // A multi-byte character may be cut at the end of the sniffed bytes.
    let text = match std::str::from_utf8(head) {
        Ok(t) => t,
        Err(e) if e.error_len().is_none() => std::str::from_utf8(&head[..e.valid_up_to()]).ok()?,
        Err(_) => return None,
    };
    let trimmed = text.trim_start();
    if trimmed.starts_with(['{', '[']) {
        return Some(Kind::CfgJson);
    }
    // The first line that is not a comment is an event (a C file's `#include` is followed
    // by C); comments alone, as far as the sniffed bytes go, may be a long header.
    let mut lines = trimmed.lines().map(str::trim).filter(|l| !l.is_empty());
    match lines.find(|l| !l.starts_with('#')) {
        Some(l) => matches!(
            l.split_whitespace().next(),
            Some("F" | "B" | "P" | "E" | "T" | "D")
        )
        .then_some(Kind::TextTrace),
        None => trimmed.starts_with('#').then_some(Kind::TextTrace),
    }
}

/// Recognises the file at `path` and checks that it is one of `wanted`, which `command` reads;
/// otherwise an error naming the file, the kind found and what reads it.
pub fn expect(path: &Path, wanted: &[Kind], command: &str) -> anyhow::Result<Kind> {
    let kind = sniff(path)?;
    if wanted.contains(&kind) {
        return Ok(kind);
    }
    let names: Vec<&str> = wanted.iter().map(|k| k.name()).collect();
    bail!(
        "{} is {}, but `wpp {command}` reads a {}; {}",
        path.display(),
        kind.with_article(),
        names.join(" or "),
        kind.readers()
    )
}

/// Traces of either format.
pub const TRACES: [Kind; 2] = [Kind::Trace, Kind::TextTrace];

/// Reads a JSON input file as text. Invalid UTF-8 is an error naming the file and the byte
/// offset of the first bad byte (issue 14: `read_to_string`'s error said neither).
pub fn read_text(path: &Path) -> anyhow::Result<String> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    String::from_utf8(bytes).map_err(|e| {
        anyhow::anyhow!(
            "cannot read {}: not UTF-8 at byte offset {}",
            path.display(),
            e.utf8_error().valid_up_to()
        )
    })
}

/// Reads and validates a `.wpp` file for `command`.
pub fn read_wpp(path: &Path, command: &str) -> anyhow::Result<WppFile> {
    expect(path, &[Kind::Wpp], command)?;
    WppFile::read(path).with_context(|| format!("cannot read {}", path.display()))
}

/// Opens a trace (binary or text) for `command`; a trace cut short ends cleanly, and
/// [`warn_truncated`] says where.
pub fn open_trace(path: &Path, command: &str) -> anyhow::Result<TraceReader> {
    expect(path, &TRACES, command)?;
    let reader =
        wpp_paths::trace::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    Ok(reader.allow_truncated(true))
}

/// Warns that the trace at `path` was cut short at `t`.
pub fn warn_truncated(path: &Path, t: Option<wpp_trace::file::Truncation>) {
    if let Some(t) = t {
        eprintln!(
            "wpp: warning: {} is truncated at byte offset {} (a recording cut short?); \
             using the {} events before it",
            path.display(),
            t.offset,
            t.events
        );
    }
}

/// Numberings of every function of a profile, by name.
pub fn numberings(file: &ProfileFile) -> BTreeMap<String, (Dag, BallLarus)> {
    let mut out = BTreeMap::new();
    for cfg in &file.program.cfgs {
        let mut cfg = cfg.clone();
        if let Ok(n) = wpp_paths::ball_larus::number_with_limit(&mut cfg, wpp_abi::PATH_LIMIT) {
            out.insert(cfg.name.clone(), n);
        }
    }
    out
}

/// The blocks of path `id` under numbering `n`, as `wpp profile show` names them.
pub fn blocks_of(n: Option<&(Dag, BallLarus)>, id: u64) -> Vec<String> {
    let Some((dag, bl)) = n else {
        return Vec::new();
    };
    bl.block_names(dag, PathId(id))
        .unwrap_or_else(|_| vec!["?".into()])
}

/// A function's calls from its path counts (id → runs) under numbering `n`: the runs of the
/// paths that start at its entry block, before any call in it. `None` where those are not its
/// calls: an entry block some edge enters (a loop's paths start there too), or an id the
/// numbering does not have.
pub fn calls_from_paths(
    n: &(Dag, BallLarus),
    cfg: &Cfg,
    counts: &BTreeMap<u64, u64>,
) -> Option<u64> {
    let (dag, bl) = n;
    if cfg.edges.iter().any(|e| e.dst == cfg.entry) {
        return None;
    }
    counts.iter().try_fold(0, |calls, (&id, &runs)| {
        let first = *bl.decode(dag, PathId(id)).ok()?.edges.first()?;
        let at_entry = dag.node(dag.edge(first).dst) == DagNodeKind::Block(cfg.entry);
        Some(calls + runs * u64::from(at_entry))
    })
}

/// Reads a bl/ppp run-time profile for `command`.
pub fn read_profile(path: &Path, command: &str) -> anyhow::Result<ProfileFile> {
    expect(path, &[Kind::Profile], command)?;
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    ProfileFile::from_bytes(&bytes).with_context(|| format!("cannot read {}", path.display()))
}

/// The program database of a recording: a trace's header, a `.wpp`'s, or a profile's embedded
/// program with its CFGs.
pub fn read_program(path: &Path, command: &str) -> anyhow::Result<ProgramDb> {
    let kinds = [Kind::Trace, Kind::TextTrace, Kind::Wpp, Kind::Profile];
    Ok(match expect(path, &kinds, command)? {
        Kind::Wpp => read_wpp(path, command)?.program,
        Kind::Profile => {
            let mut p = read_profile(path, command)?.program;
            p.attach_cfgs();
            p.program
        }
        _ => open_trace(path, command)?.program().clone(),
    })
}

/// The CFGs of every function of `path`: a CFG JSON document, or the CFGs a recording or profile
/// embeds (functions without one are left out).
pub fn read_cfgs(path: &Path, command: &str) -> anyhow::Result<Vec<Cfg>> {
    let kinds = [
        Kind::CfgJson,
        Kind::Trace,
        Kind::TextTrace,
        Kind::Wpp,
        Kind::Profile,
    ];
    match expect(path, &kinds, command)? {
        Kind::CfgJson => {
            let text = read_text(path)?;
            wpp_paths::CfgFile::parse(&text).with_context(|| format!("in {}", path.display()))
        }
        Kind::Profile => Ok(read_profile(path, command)?.program.cfgs),
        _ => {
            let program = read_program(path, command)?;
            let cfgs: Vec<Cfg> = program
                .functions
                .iter()
                .filter_map(|f| Some(Cfg::from_record(&f.name, f.cfg.as_ref()?)))
                .collect();
            match cfgs.is_empty() {
                true => Err(no_cfgs(path, &program)),
                false => Ok(cfgs),
            }
        }
    }
}

/// Why the recording at `path` has no CFGs: which recordings embed them, and which this is
/// (the instrumenter embeds them for the path probes and the path profiles only).
fn no_cfgs(path: &Path, program: &ProgramDb) -> anyhow::Error {
    let what = match program.memory.is_empty() {
        true => {
            "a block trace without path probes (`--mode trace-addr`, or trace-blocks \
                 with `--wpp-no-elide`)"
        }
        false => "an eWPP (`--mode ewpp`)",
    };
    anyhow::anyhow!(
        "{} carries no CFGs: it is {what}; recordings in --mode trace-paths, trace-blocks \
         (by default), bl and ppp embed them: record the program so, or give a CFG JSON file",
        path.display()
    )
}

/// The start rules of a `.wpp` in the order its threads are written out: ascending thread id.
pub fn starts_by_thread(wpp: &WppFile) -> Vec<StartRule> {
    let mut starts = wpp.grammar.starts().to_vec();
    starts.sort_by_key(|s| s.thread);
    starts
}

/// Whether the `i`-th thread written (in [`starts_by_thread`] order) needs a `T` event: all but
/// thread 0 written first, since events before any `T` belong to thread 0.
pub fn needs_switch(i: usize, s: &StartRule) -> bool {
    i > 0 || s.thread.0 != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_by_first_bytes() {
        let cases: [(&[u8], Option<Kind>); 10] = [
            (b"WPPT\x03rest", Some(Kind::Trace)),
            (b"WPPG\x03", Some(Kind::Wpp)),
            (b"WPPC", Some(Kind::Chunked)),
            (b"WPPRPROF\x01", Some(Kind::Profile)),
            (b"  {\"functions\": []}", Some(Kind::CfgJson)),
            (b"# a trace\nF main\n", Some(Kind::TextTrace)),
            (b"\nF main\nB 0\n", Some(Kind::TextTrace)),
            (b"E", Some(Kind::TextTrace)),
            (b"hello world\n", None),
            (b"\x7fELF\x02\x01", None),
        ];
        for (head, want) in cases {
            assert_eq!(kind_of(head), want, "{:?}", String::from_utf8_lossy(head));
        }
    }

    #[test]
    fn a_character_cut_by_the_sniff_window_is_still_text() {
        let mut head = b"F caf".to_vec();
        head.extend_from_slice(&"é".as_bytes()[..1]);
        assert_eq!(kind_of(&head), Some(Kind::TextTrace));
    }
}
