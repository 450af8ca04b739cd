//! Source locations of blocks: the program database's lines and files, numbered densely per
//! function so that the walk counts a block's line with one array index. A block's *slot* is
//! the line it starts on (where costs are charged); its inner locations are the other lines of
//! its code ([`wpp_trace::Function::block_inner_lines`]), which execution counts also count.

use rustc_hash::FxHashMap;
use wpp_trace::{FunctionId, ProgramDb};

/// No source file.
pub const NO_FILE: u32 = u32::MAX;

/// A source location: a file (an index into [`SourceMap::files`], or [`NO_FILE`]) and a line
/// (0 when unknown).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Loc {
    /// Index into [`SourceMap::files`], or [`NO_FILE`].
    pub file: u32,
    /// 1-based line, 0 when unknown.
    pub line: u32,
}

/// One function's distinct locations ("slots"); slot 0 is the function itself with no line.
#[derive(Clone, Debug, Default)]
struct FunctionLines {
    block_slot: Vec<u32>,
    /// Per block, the locations of its inner lines (empty when it has none or none are
    /// recorded). Not slots: costs are charged to the line a block starts on only.
    block_inner: Vec<Vec<Loc>>,
    /// Per block, those of its inner locations that run only after its first call
    /// ([`wpp_trace::Function::block_tail_lines`]).
    block_tail: Vec<Vec<Loc>>,
    slots: Vec<Loc>,
}

/// The locations of every block of a program, by function.
#[derive(Clone, Debug, Default)]
pub struct SourceMap {
    /// Source file names, deduplicated.
    pub files: Vec<String>,
    functions: Vec<FunctionLines>,
}

impl SourceMap {
    /// Numbers the locations of `db`'s blocks.
    pub fn new(db: &ProgramDb) -> SourceMap {
        let mut map = SourceMap::default();
        let mut file_ids: FxHashMap<String, u32> = FxHashMap::default();
        let mut intern = |name: Option<&str>, files: &mut Vec<String>| match name {
            None | Some("") => NO_FILE,
            Some(n) => *file_ids.entry(n.to_owned()).or_insert_with(|| {
                files.push(n.to_owned());
                files.len() as u32 - 1
            }),
        };
        for (i, f) in db.functions.iter().enumerate() {
            let id = FunctionId(i as u32);
            let own = intern(f.file.as_deref(), &mut map.files);
            let mut lines = FunctionLines {
                block_slot: Vec::with_capacity(f.block_lines.len()),
                block_inner: Vec::new(),
                block_tail: Vec::new(),
                slots: vec![Loc { file: own, line: 0 }],
            };
            let mut index: FxHashMap<Loc, u32> = FxHashMap::default();
            for (b, &line) in f.block_lines.iter().enumerate() {
                let file = intern(db.block_file(id, b as u32), &mut map.files);
                let loc = Loc { file, line };
                let slot = if line == 0 {
                    0
                } else {
                    *index.entry(loc).or_insert_with(|| {
                        lines.slots.push(loc);
                        lines.slots.len() as u32 - 1
                    })
                };
                lines.block_slot.push(slot);
                let locs = |of: &[Vec<u32>], into: &mut Vec<Vec<Loc>>| {
                    let listed = of.get(b).filter(|l| line != 0 && !l.is_empty());
                    if let Some(listed) = listed {
                        into.resize(b + 1, Vec::new());
                        into[b] = listed
                            .iter()
                            .filter(|&&l| l != 0 && l != line)
                            .map(|&line| Loc { file, line })
                            .collect();
                    }
                };
                locs(&f.block_inner_lines, &mut lines.block_inner);
                locs(&f.block_tail_lines, &mut lines.block_tail);
            }
            map.functions.push(lines);
        }
        map
    }

    /// The slot of block `b` of function `f` (0 when its line is unknown).
    #[inline]
    pub fn slot(&self, f: u32, b: u32) -> u32 {
        self.functions
            .get(f as usize)
            .and_then(|l| l.block_slot.get(b as usize))
            .copied()
            .unwrap_or(0)
    }

    /// The locations of block `b` of function `f`'s inner lines (other lines its code runs, in
    /// its own file); empty when none are known.
    pub fn inner_locs(&self, f: u32, b: u32) -> &[Loc] {
        self.functions
            .get(f as usize)
            .and_then(|l| l.block_inner.get(b as usize))
            .map_or(&[], Vec::as_slice)
    }

    /// Those of [`inner_locs`](Self::inner_locs) that run only after the block's first call.
    pub fn tail_locs(&self, f: u32, b: u32) -> &[Loc] {
        self.functions
            .get(f as usize)
            .and_then(|l| l.block_tail.get(b as usize))
            .map_or(&[], Vec::as_slice)
    }

    /// Every location block `b` of function `f` runs code of: the line it starts on, then its
    /// inner lines (none when its line is unknown).
    pub fn block_locs(&self, f: u32, b: u32) -> impl Iterator<Item = Loc> + '_ {
        let first = self.block_loc(f, b);
        let inner = self.inner_locs(f, b).iter().copied();
        std::iter::once(first).chain(inner).filter(|l| l.line > 0)
    }

    /// How many slots function `f` has (1 for functions the database does not know).
    pub fn slots(&self, f: u32) -> usize {
        self.functions.get(f as usize).map_or(1, |l| l.slots.len())
    }

    /// The location of slot `s` of function `f`.
    pub fn loc(&self, f: u32, s: u32) -> Loc {
        self.functions
            .get(f as usize)
            .and_then(|l| l.slots.get(s as usize))
            .copied()
            .unwrap_or(Loc {
                file: NO_FILE,
                line: 0,
            })
    }

    /// The location of block `b` of function `f`.
    pub fn block_loc(&self, f: u32, b: u32) -> Loc {
        self.loc(f, self.slot(f, b))
    }

    /// A file's name, or `""` for [`NO_FILE`].
    pub fn file_name(&self, file: u32) -> &str {
        self.files.get(file as usize).map_or("", String::as_str)
    }
}
