//! The program database: what the ids in a trace refer to.
//!
//! Every trace, grammar and profile carries a copy so that it is self-contained. Functions are
//! indexed densely by [`FunctionId`]. Besides names and source locations, a function recorded
//! by `wpp cc` in a path mode has its control-flow graph ([`FunctionCfg`]): the blocks, edges
//! and cut points its `Path` ids are numbered on, so a path trace decodes to blocks without the
//! program (`wpp_paths::decode` does; Larus §2 keeps the same information in the executable).
//!
//! # Encoding
//!
//! The trace format (`WPPT` versions 2 and 3) and the `.wpp` format (version 3) store the
//! database as the postcard serialization of [`ProgramDb`] (names, files, lines, block lines;
//! the CFGs are not part of it) followed by the *CFG table* ([`ProgramDb::to_bytes`]). Older
//! files (`WPPT` version 1, `.wpp` versions 1 and 2) hold the postcard part only. All integers
//! of the table are unsigned LEB128 varints ([`crate::wire`]):
//!
//! ```text
//! table = count                     0: no function has a CFG; else the number of functions
//!         count × cfg               in function-id order
//! cfg   = 0:u8                      this function has none
//!       | 1:u8 blocks entry         blocks ≥ 1; entry < blocks
//!         blocks × (degree, degree × zigzag(successor − block))
//!         list(exits) list(cut_nodes) list(cut_edges)
//! list  = n, n × zigzag(item − previous item)   (the first item's previous is 0)
//! ```
//!
//! Block `i` is `BlockId(i)`, the id a block trace of the same program uses. Edges are the
//! successor lists back to back: block 0's first successor is edge 0 (the order Ball–Larus
//! numbering gives its increments in). `zigzag(d)` is `2d` for `d ≥ 0` and `−2d − 1` below, so
//! the short backward and forward jumps of real CFGs take one byte. Successors, exits and cut
//! nodes are below `blocks`; cut edges are below the number of edges.
//!
//! Example: `main` with blocks 0 → 1, 1 returning, no cut points is the table
//! `01  01 02 00  01 02  00  01 02  00  00` (one function; present, 2 blocks, entry 0; block 0
//! has 1 successor at +1; block 1 none; exits `[1]`; no cut nodes or edges).
//!
//! ## Source table
//!
//! Databases with source files per block ([`ProgramDb::files`], [`Function::block_files`]) add
//! a *source table* after the CFG table; it is versioned by its own first bytes, so files
//! without it (every file written before it existed) still read, with no block files:
//!
//! ```text
//! sources = "S" 1:u8                  tag and version of the source table
//!           nfiles, nfiles × (len, len × u8)         UTF-8 file names
//!           count                     0 or the number of functions
//!           count × (n, n × file)     per function: 0 or one file index (< nfiles) per block
//! ```
//!
//! ## Implied-block table
//!
//! A block trace recorded with elision (`wpp cc`'s default in `trace-blocks` before blocks
//! were recorded as paths, below) leaves out the events of blocks the CFG implies: block `b`
//! is not recorded when every predecessor `p` of `b` has `b` as its only successor and nothing between `p`'s event and the end of `p` can
//! emit events or leave `p` another way (no call). Such a database names, per block `p`, the
//! block `implied_next[p]` whose event follows `p`'s ([`Function::implied_next`]); readers put
//! the events back (`file::TraceReader`), so no consumer ever sees an elided trace. The table
//! follows the source table:
//!
//! ```text
//! implied = "I" 1:u8                  tag and version of the implied-block table
//!           count                     0 or the number of functions
//!           count × (2n + e, n × next)  per function: n is 0 when no block implies another,
//!                                     else its block count, then per block 0 for none, else
//!                                     its implied block + 1; e is 1 when the event of block 0
//!                                     (the entry) is implied by the function's `Enter`
//! ```
//!
//! Every implied block is below `n` (and, where the function has a CFG, `n` is the CFG's block
//! count and the implied block the block's only successor); following implied blocks from any
//! block must end, since a reader restoring a cycle of implied blocks would never stop.
//!
//! ## Blocks recorded as paths
//!
//! A block trace recorded by `wpp cc`'s default `trace-blocks` build holds `Path` events of
//! the paths mode (Larus §2: a path id names the blocks from one cut point to the next) where
//! the blocks ran, so the program appends one event per path instead of one per block. Its
//! database has the CFGs and, after the implied-block table's place, the two bytes
//! `"B" 1:u8` ([`ProgramDb::paths_are_blocks`]); readers decode the paths back to blocks
//! (`wpp_paths::trace::open`), so no consumer sees them. Such a database has no implied-block
//! table.
//!
//! ## Memory table
//!
//! An eWPP (`wpp cc --mode ewpp`) adds, last, the memory instructions its checks name
//! ([`ProgramDb::memory`]):
//!
//! ```text
//! memory = "M" 1:u8 len, len × u8
//! ```
//!
//! ## Inner-line table
//!
//! A block's code often spans several source lines: a call does not end an LLVM block, so at
//! `-O0` `y = f(x);`, `y += 2;` and `if (y > 3)` can be one block starting on the first of
//! them. Databases that know the other lines of each block ([`Function::block_inner_lines`])
//! add, after the memory table's place, the *inner-line table*; files without it still read,
//! with no inner lines:
//!
//! ```text
//! inner = "L" 1:u8                    tag and version of the inner-line table
//!         count                       0 or the number of functions
//!         count × (n, n × lines)      per function: 0, or its block count (that of its
//!                                     block lines); then per block its other lines
//! lines = k, k × zigzag(line − previous)   ascending, distinct, none 0 nor the block's own
//!                                     line; the first item's previous is the block's line
//! ```
//!
//! Example: a function whose block 0 starts on line 10 and also runs lines 11 and 12, and whose
//! block 1 runs line 13 only, is `4C 01  01  02  02 02 02  00` (one function of 2 blocks; block
//! 0: 2 lines, +1, +1; block 1: none).
//!
//! A block's lines after its first call run only when that call returns: a frame a `longjmp`
//! abandons never runs them. Path recordings know how often each call returned (a path starts
//! at the cut node's tail), so databases with CFGs name those lines
//! ([`Function::block_tail_lines`]) in the *tail-line table*, after the inner-line table, in
//! the inner-line table's layout (`"A" 1:u8`, then the same counts and lines); each is one of
//! its block's inner lines.
//!
//! Reading checks every count against the bytes left before allocating (each block, edge and
//! list item takes at least one byte) and every id against its range, and reports the first
//! problem with the function and the absolute byte offset ([`ProgramDbError`]).

use crate::ids::FunctionId;
use crate::wire::{write_varint, Reader, WireError};
use serde::{Deserialize, Serialize};

/// Static facts about one function.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Function {
    /// The name: the linkage name, or for Rust and C++ functions the demangled name `wpp cc`
    /// chose (its `demangle_names`), unique within the program.
    pub name: String,
    /// Source file, where debug information names one.
    pub file: Option<String>,
    /// First source line, where known.
    pub line: Option<u32>,
    /// Source line of each block (indexed by block id), where known; may be empty.
    pub block_lines: Vec<u32>,
    /// Source file of each block, as an index into [`ProgramDb::files`] (indexed by block id);
    /// empty when not recorded. A block inlined from a header has the header's file here while
    /// [`file`](Self::file) names the function's own. Stored in the source table (module docs).
    #[serde(skip)]
    pub block_files: Vec<u32>,
    /// Per block (indexed by block id): the other source lines its instructions run, in the
    /// block's own file (that of [`block_lines`](Self::block_lines)), ascending, without the
    /// block's line or 0; empty when not recorded or no block has any. Stored in the
    /// inner-line table (module docs).
    #[serde(skip)]
    pub block_inner_lines: Vec<Vec<u32>>,
    /// Per block (indexed by block id): those of its inner lines that run only after its
    /// first call, the one that cuts its paths (a Ball–Larus cut node's tail half: a path
    /// recording knows how often the call returned into it, `wpp_paths::trace`); empty when
    /// not recorded or no block has any. Stored in the tail-line table (module docs).
    #[serde(skip)]
    pub block_tail_lines: Vec<Vec<u32>>,
    /// The CFG its path ids are numbered on, where the recording has one. Not part of the
    /// postcard serialization: the file formats store it in the CFG table (module docs).
    /// Boxed: most functions of a large program database have none, and an inline CFG would
    /// make every function record five words larger (issue 14, item 4).
    #[serde(skip)]
    pub cfg: Option<Box<FunctionCfg>>,
    /// Per block (indexed by block id): the block whose event the recording left out because
    /// this block's event implies it; empty when the recording elided nothing here. Only raw
    /// traces carry it (the implied-block table, module docs): a `TraceReader` restores the
    /// events and hands out its database without the table.
    #[serde(skip)]
    pub implied_next: Vec<Option<u32>>,
    /// Whether the event of block 0, the entry, was left out because it always follows the
    /// function's `Enter` (restored like [`implied_next`](Self::implied_next), then its chain).
    #[serde(skip)]
    pub entry_implied: bool,
}

/// The qualified name of a C++ (Itanium ABI) symbol without and with its parameter list
/// (`ns::f` and `ns::f(int)`), or `None` for a name that is not one. Here because the
/// instrumenter names functions by it and the tools find a function by its linkage name with it.
pub fn cpp_names(linkage: &str) -> Option<(String, String)> {
    if !linkage.starts_with("_Z") {
        return None;
    }
    let symbol = cpp_demangle::Symbol::new(linkage).ok()?;
    let options = cpp_demangle::DemangleOptions::new().no_return_type();
    let full = symbol.demangle_with_options(&options).ok()?;
    let short = symbol.demangle_with_options(&options.no_params()).ok()?;
    Some((short, full))
}

/// The control-flow graph of one function as a trace stores it: blocks by id, each block's
/// successors in terminator order, and the cut points of Larus §2's path numbering. It is the
/// id-only form of `wpp_paths::Cfg`, which converts from and to it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FunctionCfg {
    /// Per block, its successors in order; edge ids number these lists back to back.
    pub successors: Vec<Vec<u32>>,
    /// The block where execution starts.
    pub entry: u32,
    /// Blocks that return.
    pub exits: Vec<u32>,
    /// Blocks split by a cut point (a call): a path ends at the call and the next starts after it.
    pub cut_nodes: Vec<u32>,
    /// Edges (by id) treated like loop backedges: a path ends at the source, the next starts at
    /// the target.
    pub cut_edges: Vec<u32>,
}

impl FunctionCfg {
    /// The number of edges.
    pub fn edge_count(&self) -> usize {
        self.successors.iter().map(Vec::len).sum()
    }
}

/// The functions of a program, indexed by [`FunctionId`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProgramDb {
    /// All functions, in id order.
    pub functions: Vec<Function>,
    /// The source files [`Function::block_files`] index. Stored in the source table (module
    /// docs), not in the postcard part.
    #[serde(skip)]
    pub files: Vec<String>,
    /// The memory instructions an eWPP's dependence checks name (`wpp_deps::memdb`'s
    /// encoding, which this crate, below `wpp-deps`, carries without reading); empty for
    /// other recordings. Stored in the memory table (module docs).
    #[serde(skip)]
    pub memory: Vec<u8>,
    /// Whether the trace's `Path` events stand for the blocks they decode to (module docs,
    /// *Blocks recorded as paths*); only raw traces carry it, readers hand out blocks.
    #[serde(skip)]
    pub paths_are_blocks: bool,
}

impl ProgramDb {
    /// The function with this id, if any.
    pub fn function(&self, id: FunctionId) -> Option<&Function> {
        self.functions.get(id.index())
    }

    /// The id of the function with this name, if any (linear; callers that look up many names
    /// should build their own index).
    pub fn find(&self, name: &str) -> Option<FunctionId> {
        self.functions
            .iter()
            .position(|f| f.name == name)
            .map(|i| FunctionId(i as u32))
    }

    /// The id for `name`, adding a function with that name if it is not present.
    pub fn intern(&mut self, name: &str) -> FunctionId {
        if let Some(id) = self.find(name) {
            return id;
        }
        self.functions.push(Function {
            name: name.to_owned(),
            ..Function::default()
        });
        FunctionId(self.functions.len() as u32 - 1)
    }

    /// A display name for a function id, falling back to `#id` for ids outside the database.
    pub fn name(&self, id: FunctionId) -> String {
        match self.function(id) {
            Some(f) => f.name.clone(),
            None => format!("#{}", id.0),
        }
    }
}

/// Why a stored program database could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message} (byte offset {offset})")]
pub struct ProgramDbError {
    /// Absolute byte offset of the offending item.
    pub offset: u64,
    /// What is wrong.
    pub message: String,
}

impl From<WireError> for ProgramDbError {
    fn from(e: WireError) -> Self {
        ProgramDbError {
            offset: e.offset,
            message: format!("{} while reading the {}", e.kind, e.what),
        }
    }
}

/// Which stored layout [`ProgramDb::from_bytes`] reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DbLayout {
    /// Postcard only (`WPPT` 1, `.wpp` 1 and 2).
    WithoutCfgs,
    /// Postcard, then the CFG table (`WPPT` 2 and 3, `.wpp` 3).
    WithCfgs,
}

impl ProgramDb {
    /// Whether the recording elided the events of some blocks ([`Function::implied_next`]).
    pub fn has_implied_blocks(&self) -> bool {
        self.functions
            .iter()
            .any(|f| f.entry_implied || !f.implied_next.is_empty())
    }

    /// Whether any block has inner lines ([`Function::block_inner_lines`]).
    pub fn has_inner_lines(&self) -> bool {
        self.functions
            .iter()
            .any(|f| f.block_inner_lines.iter().any(|l| !l.is_empty()))
    }

    /// Whether any function has a CFG (so path ids can be decoded to blocks).
    pub fn has_cfgs(&self) -> bool {
        self.functions.iter().any(|f| f.cfg.is_some())
    }

    /// The stored form: postcard of the names and locations, then the CFG table, then the
    /// source table when there are source files (module docs).
    pub fn to_bytes(&self) -> Result<Vec<u8>, postcard::Error> {
        let mut out = postcard::to_allocvec(self)?;
        let with = self.has_cfgs();
        write_varint(&mut out, if with { self.functions.len() as u64 } else { 0 });
        for f in self.functions.iter().filter(|_| with) {
            match &f.cfg {
                None => out.push(0),
                Some(c) => encode_cfg(&mut out, c),
            }
        }
        if !self.files.is_empty() {
            encode_sources(&mut out, self);
        }
        if self.has_implied_blocks() {
            encode_implied(&mut out, self);
        }
        if self.paths_are_blocks {
            out.extend_from_slice(&PATHS_ARE_BLOCKS_TAG);
        }
        if !self.memory.is_empty() {
            out.extend_from_slice(&MEMORY_TAG);
            write_varint(&mut out, self.memory.len() as u64);
            out.extend_from_slice(&self.memory);
        }
        if self.has_inner_lines() {
            encode_block_lines(&mut out, INNER_LINES_TAG, self, |f| &f.block_inner_lines);
        }
        let has_tails = |f: &Function| f.block_tail_lines.iter().any(|l| !l.is_empty());
        if self.functions.iter().any(has_tails) {
            encode_block_lines(&mut out, TAIL_LINES_TAG, self, |f| &f.block_tail_lines);
        }
        Ok(out)
    }

    /// The source file of block `b` of function `f`: its own when recorded, else the
    /// function's.
    pub fn block_file(&self, f: FunctionId, b: u32) -> Option<&str> {
        let func = self.function(f)?;
        match func.block_files.get(b as usize) {
            Some(&i) => self.files.get(i as usize).map(String::as_str),
            None => func.file.as_deref(),
        }
    }

    /// Reads the whole of `bytes` (which start at file offset `base`) as a stored database.
    pub fn from_bytes(
        bytes: &[u8],
        base: u64,
        layout: DbLayout,
    ) -> Result<ProgramDb, ProgramDbError> {
        let (mut db, rest) =
            postcard::take_from_bytes::<ProgramDb>(bytes).map_err(|e| ProgramDbError {
                offset: base,
                message: e.to_string(),
            })?;
        let mut r = Reader::new(rest, base + (bytes.len() - rest.len()) as u64);
        if layout == DbLayout::WithCfgs {
            read_cfg_table(&mut r, &mut db)?;
            let next = |r: &Reader<'_>| bytes.get((r.offset() - base) as usize).copied();
            if next(&r) == Some(SOURCE_TAG[0]) {
                read_sources(&mut r, &mut db)?;
            }
            if next(&r) == Some(IMPLIED_TAG[0]) {
                read_implied(&mut r, &mut db)?;
            }
            if next(&r) == Some(PATHS_ARE_BLOCKS_TAG[0]) {
                read_paths_are_blocks(&mut r, &mut db)?;
            }
            if next(&r) == Some(MEMORY_TAG[0]) {
                read_tag(&mut r, MEMORY_TAG, "memory table")?;
                let len = r.count(1, "memory table length")?;
                db.memory = r.bytes(len, "memory table")?.to_vec();
            }
            if next(&r) == Some(INNER_LINES_TAG[0]) {
                read_inner_lines(&mut r, &mut db)?;
            }
            if next(&r) == Some(TAIL_LINES_TAG[0]) {
                read_tail_lines(&mut r, &mut db)?;
            }
        }
        if !r.is_empty() {
            return Err(ProgramDbError {
                offset: r.offset(),
                message: "bytes after the program database".into(),
            });
        }
        Ok(db)
    }
}

/// The first bytes of the memory table: its tag and version.
const MEMORY_TAG: [u8; 2] = [b'M', 1];

/// The first bytes of the source table: its tag and version.
const SOURCE_TAG: [u8; 2] = [b'S', 1];

/// The first bytes of the implied-block table: its tag and version.
const IMPLIED_TAG: [u8; 2] = [b'I', 1];

/// The mark of a database whose `Path` events stand for blocks: tag and version.
const PATHS_ARE_BLOCKS_TAG: [u8; 2] = [b'B', 1];

/// The first bytes of the inner-line table: its tag and version.
const INNER_LINES_TAG: [u8; 2] = [b'L', 1];

/// The first bytes of the tail-line table: its tag and version.
const TAIL_LINES_TAG: [u8; 2] = [b'A', 1];

/// Writes the inner-line table, or the tail-line table in its layout, of the lists `of` gives.
fn encode_block_lines(
    out: &mut Vec<u8>,
    tag: [u8; 2],
    db: &ProgramDb,
    of: impl Fn(&Function) -> &Vec<Vec<u32>>,
) {
    out.extend_from_slice(&tag);
    write_varint(out, db.functions.len() as u64);
    for f in &db.functions {
        let any = of(f).iter().any(|l| !l.is_empty());
        let n = if any { f.block_lines.len() } else { 0 };
        write_varint(out, n as u64);
        for b in 0..n {
            let lines = of(f).get(b).map_or(&[][..], Vec::as_slice);
            write_varint(out, lines.len() as u64);
            let mut prev = i64::from(f.block_lines[b]);
            for &line in lines {
                write_varint(out, zigzag(i64::from(line) - prev));
                prev = i64::from(line);
            }
        }
    }
}

fn read_inner_lines(r: &mut Reader<'_>, db: &mut ProgramDb) -> Result<(), ProgramDbError> {
    read_tag(r, INNER_LINES_TAG, "inner-line table")?;
    let count = read_function_count(r, db.functions.len(), "inner-line table")?;
    for (i, f) in db.functions.iter_mut().enumerate().filter(|_| count != 0) {
        f.block_inner_lines = read_inner_lines_function(r, f).map_err(|e| ProgramDbError {
            offset: e.offset,
            message: format!("inner lines of function {i} (`{}`): {}", f.name, e.message),
        })?;
    }
    Ok(())
}

fn read_tail_lines(r: &mut Reader<'_>, db: &mut ProgramDb) -> Result<(), ProgramDbError> {
    read_tag(r, TAIL_LINES_TAG, "tail-line table")?;
    let count = read_function_count(r, db.functions.len(), "tail-line table")?;
    for (i, f) in db.functions.iter_mut().enumerate().filter(|_| count != 0) {
        let at = r.offset();
        let named = |offset, message: String| ProgramDbError {
            offset,
            message: format!("tail lines of function {i} (`{}`): {message}", f.name),
        };
        let tails = read_inner_lines_function(r, f).map_err(|e| named(e.offset, e.message))?;
        for (b, lines) in tails.iter().enumerate() {
            let inner = f.block_inner_lines.get(b).map_or(&[][..], Vec::as_slice);
            if let Some(x) = lines.iter().find(|x| !inner.contains(x)) {
                return Err(named(
                    at,
                    format!("block {b}: tail line {x} is no inner line"),
                ));
            }
        }
        f.block_tail_lines = tails;
    }
    Ok(())
}

/// One function's entry of the inner-line table (or the tail-line table), checked: as many blocks as it has block
/// lines, and per block distinct ascending lines in `1 ..= 2^32 − 1` other than its own.
fn read_inner_lines_function(
    r: &mut Reader<'_>,
    f: &Function,
) -> Result<Vec<Vec<u32>>, ProgramDbError> {
    let at = r.offset();
    // Each block and each line takes at least one byte, so no count sizes more than the input.
    let blocks = r.count(1, "inner-line block count")?;
    if blocks != 0 && blocks != f.block_lines.len() {
        return Err(ProgramDbError {
            offset: at,
            message: format!(
                "{blocks} blocks, but the function has {} block lines",
                f.block_lines.len()
            ),
        });
    }
    let mut out = Vec::with_capacity(blocks);
    for b in 0..blocks {
        let own = i64::from(f.block_lines[b]);
        let k = r.count(1, "inner-line count")?;
        let mut lines = Vec::with_capacity(k);
        let mut prev = own;
        for _ in 0..k {
            let at = r.offset();
            let d = unzigzag(r.varint("inner line")?);
            let line = prev
                .checked_add(d)
                .filter(|&x| (1..=i64::from(u32::MAX)).contains(&x));
            let problem = match line {
                None => format!("block {b}: an inner line is not in 1 ..= 2^32 - 1"),
                Some(x) if x == own => format!("block {b}: inner line {x} is the block's own"),
                Some(x) if !lines.is_empty() && x <= prev => {
                    format!("block {b}: inner line {x} does not follow {prev}")
                }
                Some(x) => {
                    lines.push(x as u32);
                    prev = x;
                    continue;
                }
            };
            return Err(ProgramDbError {
                offset: at,
                message: problem,
            });
        }
        out.push(lines);
    }
    // A function whose blocks have none stores none (as the writer leaves them out).
    if out.iter().all(Vec::is_empty) {
        out.clear();
    }
    Ok(out)
}

/// Reads the mark of *Blocks recorded as paths*, which needs CFGs to decode with and excludes
/// an implied-block table (a reader restores one or the other).
fn read_paths_are_blocks(r: &mut Reader<'_>, db: &mut ProgramDb) -> Result<(), ProgramDbError> {
    let at = r.offset();
    let tag = [
        r.u8("paths-as-blocks tag")?,
        r.u8("paths-as-blocks version")?,
    ];
    let problem = if tag != PATHS_ARE_BLOCKS_TAG {
        format!(
            "paths-as-blocks version {} is not {}",
            tag[1], PATHS_ARE_BLOCKS_TAG[1]
        )
    } else if !db.has_cfgs() {
        "paths stand for blocks, but no function has a CFG to decode them with".to_owned()
    } else if db.has_implied_blocks() {
        "paths stand for blocks, and an implied-block table is present too".to_owned()
    } else {
        db.paths_are_blocks = true;
        return Ok(());
    };
    Err(ProgramDbError {
        offset: at,
        message: problem,
    })
}

fn encode_implied(out: &mut Vec<u8>, db: &ProgramDb) {
    out.extend_from_slice(&IMPLIED_TAG);
    write_varint(out, db.functions.len() as u64);
    for f in &db.functions {
        write_varint(
            out,
            2 * f.implied_next.len() as u64 + u64::from(f.entry_implied),
        );
        for next in &f.implied_next {
            write_varint(out, next.map_or(0, |b| u64::from(b) + 1));
        }
    }
}

fn read_implied(r: &mut Reader<'_>, db: &mut ProgramDb) -> Result<(), ProgramDbError> {
    read_tag(r, IMPLIED_TAG, "implied-block table")?;
    let count = read_function_count(r, db.functions.len(), "implied-block table")?;
    for (i, f) in db.functions.iter_mut().enumerate().filter(|_| count != 0) {
        (f.implied_next, f.entry_implied) =
            read_implied_function(r, f).map_err(|e| ProgramDbError {
                offset: e.offset,
                message: format!(
                    "implied blocks of function {i} (`{}`): {}",
                    f.name, e.message
                ),
            })?;
    }
    Ok(())
}

/// One function's entry of the implied-block table, checked: ids in range, only successors
/// where the function has a CFG, no cycle; and whether `Enter` implies the entry block.
fn read_implied_function(
    r: &mut Reader<'_>,
    f: &Function,
) -> Result<(Vec<Option<u32>>, bool), ProgramDbError> {
    let at = r.offset();
    let head = r.varint("implied-block count")?;
    let (blocks, entry_implied) = (head >> 1, head & 1 == 1);
    // Each entry takes at least one byte, so the count never sizes more than the input.
    if blocks > r.remaining() as u64 {
        return Err(ProgramDbError {
            offset: at,
            message: format!(
                "{blocks} blocks, but only {} bytes are left for them",
                r.remaining()
            ),
        });
    }
    let blocks = blocks as usize;
    if let Some(cfg) = f.cfg.as_deref() {
        if blocks != 0 && blocks != cfg.successors.len() {
            return Err(ProgramDbError {
                offset: at,
                message: format!("{blocks} blocks, but its CFG has {}", cfg.successors.len()),
            });
        }
    }
    let mut next = Vec::with_capacity(blocks);
    for b in 0..blocks {
        let at = r.offset();
        let implied = r
            .varint_max(blocks as u64, "implied block")?
            .checked_sub(1)
            .map(|x| x as u32);
        let successors = f.cfg.as_deref().map(|c| &c.successors[b]);
        if let (Some(x), Some(succ)) = (implied, successors) {
            if succ.is_empty() || succ.iter().any(|&s| s != x) {
                return Err(ProgramDbError {
                    offset: at,
                    message: format!(
                        "block {x} is implied by block {b}, whose successors are {succ:?}"
                    ),
                });
            }
        }
        next.push(implied);
    }
    if let Some(b) = implied_cycle(&next) {
        return Err(ProgramDbError {
            offset: r.offset(),
            message: format!(
                "block {b} is on a cycle of implied blocks (restoring it would never end)"
            ),
        });
    }
    Ok((next, entry_implied))
}

/// A block on a cycle of `next` (each block's implied block, [`Function::implied_next`]), if
/// there is one: a table a reader must refuse, and the instrumenter must never write.
pub fn implied_cycle(next: &[Option<u32>]) -> Option<u32> {
    // 0: not visited, 1: on the walk in progress, 2: known to end.
    let mut state = vec![0u8; next.len()];
    for start in 0..next.len() {
        let mut b = start;
        while state.get(b) == Some(&0) {
            state[b] = 1;
            match next[b] {
                Some(x) => b = x as usize,
                None => break,
            }
        }
        if state.get(b) == Some(&1) && next[b].is_some() {
            return Some(b as u32);
        }
        let mut b = start;
        while state.get(b) == Some(&1) {
            state[b] = 2;
            match next[b] {
                Some(x) => b = x as usize,
                None => break,
            }
        }
    }
    None
}

fn encode_sources(out: &mut Vec<u8>, db: &ProgramDb) {
    out.extend_from_slice(&SOURCE_TAG);
    write_varint(out, db.files.len() as u64);
    for name in &db.files {
        write_varint(out, name.len() as u64);
        out.extend_from_slice(name.as_bytes());
    }
    let any = db.functions.iter().any(|f| !f.block_files.is_empty());
    write_varint(out, if any { db.functions.len() as u64 } else { 0 });
    for f in db.functions.iter().filter(|_| any) {
        write_varint(out, f.block_files.len() as u64);
        for &i in &f.block_files {
            write_varint(out, u64::from(i));
        }
    }
}

/// Reads an optional table's tag and version, which must be `tag`; `table` names it in errors
/// (`"source table"`).
fn read_tag(r: &mut Reader<'_>, tag: [u8; 2], table: &'static str) -> Result<(), ProgramDbError> {
    let at = r.offset();
    let got = [r.u8(table)?, r.u8(table)?];
    if got != tag {
        return Err(ProgramDbError {
            offset: at,
            message: format!("{table} version {} is not {}", got[1], tag[1]),
        });
    }
    Ok(())
}

/// Reads an optional table's function count: 0 (no function has the table's data) or the
/// database's number of functions.
fn read_function_count(
    r: &mut Reader<'_>,
    functions: usize,
    table: &'static str,
) -> Result<u64, ProgramDbError> {
    let at = r.offset();
    let count = r.varint(table)?;
    if count != 0 && count != functions as u64 {
        return Err(ProgramDbError {
            offset: at,
            message: format!("the {table} has {count} functions but the database {functions}"),
        });
    }
    Ok(count)
}

fn read_sources(r: &mut Reader<'_>, db: &mut ProgramDb) -> Result<(), ProgramDbError> {
    read_tag(r, SOURCE_TAG, "source table")?;
    let n = r.count(1, "source file count")?;
    db.files = Vec::with_capacity(n);
    for _ in 0..n {
        let at = r.offset();
        let len = r.count(1, "source file name length")?;
        let bytes = r.bytes(len, "source file name")?;
        let name = std::str::from_utf8(bytes).map_err(|_| ProgramDbError {
            offset: at,
            message: "source file name is not UTF-8".into(),
        })?;
        db.files.push(name.to_owned());
    }
    let count = read_function_count(r, db.functions.len(), "source table")?;
    for f in db.functions.iter_mut().filter(|_| count != 0) {
        let at = r.offset();
        let blocks = r.count(1, "block file count")?;
        if blocks > 0 && n == 0 {
            return Err(ProgramDbError {
                offset: at,
                message: format!("`{}` has block files but there are no source files", f.name),
            });
        }
        f.block_files = Vec::with_capacity(blocks);
        for _ in 0..blocks {
            f.block_files
                .push(r.varint_max(n as u64 - 1, "block file index")? as u32);
        }
    }
    Ok(())
}

fn zigzag(d: i64) -> u64 {
    ((d << 1) ^ (d >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    (v >> 1) as i64 ^ -((v & 1) as i64)
}

fn encode_list(out: &mut Vec<u8>, items: &[u32]) {
    write_varint(out, items.len() as u64);
    let mut prev = 0i64;
    for &x in items {
        write_varint(out, zigzag(i64::from(x) - prev));
        prev = i64::from(x);
    }
}

fn encode_cfg(out: &mut Vec<u8>, c: &FunctionCfg) {
    out.push(1);
    write_varint(out, c.successors.len() as u64);
    write_varint(out, u64::from(c.entry));
    for (b, succ) in c.successors.iter().enumerate() {
        write_varint(out, succ.len() as u64);
        for &s in succ {
            write_varint(out, zigzag(i64::from(s) - b as i64));
        }
    }
    encode_list(out, &c.exits);
    encode_list(out, &c.cut_nodes);
    encode_list(out, &c.cut_edges);
}

fn read_cfg_table(r: &mut Reader<'_>, db: &mut ProgramDb) -> Result<(), ProgramDbError> {
    let at = r.offset();
    let n = r.varint("CFG count")?;
    if n == 0 {
        return Ok(());
    }
    if n != db.functions.len() as u64 {
        return Err(ProgramDbError {
            offset: at,
            message: format!(
                "the CFG table has {n} entries but the database {} functions",
                db.functions.len()
            ),
        });
    }
    for (i, f) in db.functions.iter_mut().enumerate() {
        let at = r.offset();
        f.cfg = match r.u8("CFG presence byte")? {
            0 => None,
            1 => Some(Box::new(read_cfg(r).map_err(|e| ProgramDbError {
                offset: e.offset,
                message: format!("CFG of function {i} (`{}`): {}", f.name, e.message),
            })?)),
            b => {
                return Err(ProgramDbError {
                    offset: at,
                    message: format!(
                        "CFG of function {i} (`{}`): presence byte {b} is not 0 or 1",
                        f.name
                    ),
                })
            }
        };
    }
    Ok(())
}

/// Reads an id stored as a zigzag delta from `prev`, checking it is below `limit`.
fn read_id(
    r: &mut Reader<'_>,
    prev: i64,
    limit: usize,
    what: &'static str,
) -> Result<u32, ProgramDbError> {
    let at = r.offset();
    let d = unzigzag(r.varint(what)?);
    match prev.checked_add(d) {
        Some(x) if (0..limit as i64).contains(&x) => Ok(x as u32),
        x => Err(ProgramDbError {
            offset: at,
            message: match x {
                Some(x) => format!("{what} {x} is out of range (there are {limit})"),
                None => format!("{what} overflows"),
            },
        }),
    }
}

fn read_list(
    r: &mut Reader<'_>,
    limit: usize,
    what: &'static str,
) -> Result<Vec<u32>, ProgramDbError> {
    let n = r.count(1, what)?;
    let mut out = Vec::with_capacity(n);
    let mut prev = 0i64;
    for _ in 0..n {
        let x = read_id(r, prev, limit, what)?;
        prev = i64::from(x);
        out.push(x);
    }
    Ok(out)
}

fn read_cfg(r: &mut Reader<'_>) -> Result<FunctionCfg, ProgramDbError> {
    let at = r.offset();
    // Each block takes at least its degree byte, so the count never sizes more than the input.
    let blocks = r.count(1, "block count")?;
    if blocks == 0 || blocks > u32::MAX as usize {
        return Err(ProgramDbError {
            offset: at,
            message: format!("block count {blocks} is not in 1 ..= 2^32 - 1"),
        });
    }
    let entry = r.varint_max(blocks as u64 - 1, "entry block")? as u32;
    let mut successors = Vec::with_capacity(blocks);
    for b in 0..blocks {
        let degree = r.count(1, "successor count")?;
        let mut succ = Vec::with_capacity(degree);
        for _ in 0..degree {
            succ.push(read_id(r, b as i64, blocks, "successor block")?);
        }
        successors.push(succ);
    }
    let edges = successors.iter().map(Vec::len).sum();
    Ok(FunctionCfg {
        successors,
        entry,
        exits: read_list(r, blocks, "exit block")?,
        cut_nodes: read_list(r, blocks, "cut block")?,
        cut_edges: read_list(r, edges, "cut edge")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A database of two functions with block lines, source files and, when `inner`, inner
    /// lines (the module docs' example for `f`).
    fn db(inner: bool) -> ProgramDb {
        let mut db = ProgramDb {
            files: vec!["m.c".into()],
            ..ProgramDb::default()
        };
        db.intern("f");
        db.intern("g");
        db.functions[0].block_lines = vec![10, 13];
        db.functions[0].block_files = vec![0, 0];
        db.functions[1].block_lines = vec![20, 5, 30];
        db.functions[1].block_files = vec![0, 0, 0];
        if inner {
            db.functions[0].block_inner_lines = vec![vec![11, 12], vec![]];
            db.functions[1].block_inner_lines = vec![vec![], vec![2, 7, 300], vec![1]];
        }
        db
    }

    fn read(bytes: &[u8]) -> Result<ProgramDb, ProgramDbError> {
        ProgramDb::from_bytes(bytes, 0, DbLayout::WithCfgs)
    }

    #[test]
    fn the_inner_line_table_round_trips_and_is_optional() {
        let without = db(false);
        let plain = without.to_bytes().unwrap();
        assert_eq!(read(&plain).unwrap(), without);
        assert!(!plain.contains(&b'L'));
        let with = db(true);
        let bytes = with.to_bytes().unwrap();
        assert_eq!(bytes[..plain.len()], plain[..], "the table is appended");
        assert_eq!(read(&bytes).unwrap(), with);
        // The module docs' example is `f`'s entry.
        let table = &bytes[plain.len()..];
        assert_eq!(table[..9], [b'L', 1, 2, 2, 2, 2, 2, 0, 3]);
        // After every other table too.
        let mut all = db(true);
        all.memory = vec![1, 2, 3];
        assert_eq!(read(&all.to_bytes().unwrap()).unwrap(), all);
        // Functions without inner lines store none, and read back with none.
        let mut some = db(true);
        some.functions[1].block_inner_lines.clear();
        assert_eq!(read(&some.to_bytes().unwrap()).unwrap(), some);
        let empty = [&plain[..], &[b'L', 1, 2, 2, 0, 0, 3, 0, 0, 0]].concat();
        assert_eq!(read(&empty).unwrap(), without);
    }

    #[test]
    fn every_truncation_of_the_inner_line_table_is_an_error() {
        let plain = db(false).to_bytes().unwrap();
        let bytes = db(true).to_bytes().unwrap();
        for cut in plain.len() + 1..bytes.len() {
            let e = read(&bytes[..cut]).unwrap_err();
            assert!(e.offset <= cut as u64, "cut {cut}: {e}");
        }
    }

    #[test]
    fn bad_inner_line_tables_are_errors() {
        let plain = db(false).to_bytes().unwrap();
        let with = |table: &[u8]| read(&[&plain[..], table].concat());
        let cases: &[(&[u8], &str)] = &[
            (&[b'L', 2, 0], "version 2 is not 1"),
            (&[b'L', 1, 3], "has 3 functions but the database 2"),
            (
                &[b'L', 1, 2, 3, 0, 0, 0],
                "3 blocks, but the function has 2 block lines",
            ),
            (&[b'L', 1, 2, 0x80, 0x80, 0x80, 0x80, 0x08], "truncated"),
            (&[b'L', 1, 2, 2, 0xFF, 0xFF, 0xFF, 0x0F], "truncated"),
            (&[b'L', 1, 2, 2, 1, 0], "is the block's own"),
            (&[b'L', 1, 2, 2, 1, 19], "not in 1 ..= 2^32 - 1"),
            (
                &[b'L', 1, 2, 2, 2, 4, 1],
                "inner line 11 does not follow 12",
            ),
            (
                &[b'L', 1, 2, 2, 2, 2, 0],
                "inner line 11 does not follow 11",
            ),
            (&[b'L', 1, 0, 0], "bytes after the program database"),
        ];
        for (table, message) in cases {
            let e = with(table).unwrap_err();
            assert!(e.to_string().contains(message), "{table:?}: {e}");
        }
        assert!(with(&[b'L', 1, 0]).is_ok());
    }

    /// The tail-line table follows the inner-line table, and names only inner lines.
    #[test]
    fn the_tail_line_table_round_trips_and_names_only_inner_lines() {
        let inner = db(true).to_bytes().unwrap();
        let mut with = db(true);
        with.functions[1].block_tail_lines = vec![vec![], vec![7, 300], vec![]];
        let bytes = with.to_bytes().unwrap();
        assert_eq!(bytes[..inner.len()], inner[..], "the table is appended");
        assert_eq!(read(&bytes).unwrap(), with);
        // Function 1 (blocks on lines 20, 5, 30): block 1 names 7 (+2) and 300 (+293).
        let table = &bytes[inner.len()..];
        assert_eq!(table, [b'A', 1, 2, 0, 3, 0, 2, 4, 0xCA, 0x04, 0]);
        for cut in inner.len() + 1..bytes.len() {
            assert!(read(&bytes[..cut]).is_err(), "cut {cut}");
        }
        let not_inner = [&inner[..], &[b'A', 1, 2, 0, 3, 0, 1, 6, 0]].concat();
        let e = read(&not_inner).unwrap_err();
        assert!(
            e.to_string().contains("tail line 8 is no inner line"),
            "{e}"
        );
        assert!(e.to_string().contains("function 1"), "{e}");
    }
}
