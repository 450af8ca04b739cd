//! The memory instructions of an instrumented program (the "program database" of an address
//! trace): the instrumenter numbers every load, store and modelled library write of the
//! instrumented functions in module order (function by function, blocks in layout order,
//! instructions in block order), so an id is stable for a given bitcode file.

use serde::{Deserialize, Serialize};
use wpp_trace::ProgramDb;

/// Version of [`MemoryDb`]'s postcard layout. 2: each instruction's source file
/// ([`MemInstr::file`]).
pub const MEMORY_DB_VERSION: u32 = 2;

/// [`MemInstr::file`] of an instruction without a source location of its own: its function's
/// file stands for it.
pub const NO_FILE: u32 = u32::MAX;

/// What a memory instruction does to the bytes it touches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum AccessKind {
    /// Reads them (a `load`, the source of `memcpy`/`memmove`, the read half of an atomic
    /// read-modify-write).
    Load,
    /// Writes them (a `store`, the destination of `memcpy`/`memmove`/`memset`, the write half
    /// of an atomic read-modify-write).
    Store,
    /// Code outside the instrumented program wrote them (a fresh `malloc`/`calloc`/`realloc`
    /// block, the buffer `read(2)` filled): later loads of these bytes depend on no store of
    /// the program, and are reported as external.
    Clobber,
}

/// One memory instruction.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemInstr {
    /// Its function's id (the block trace's function id).
    pub function: u32,
    /// Its block's id within the function (the block trace's block id).
    pub block: u32,
    /// Source line, 0 when unknown (compile with `-g`).
    pub line: u32,
    /// Source column, 0 when unknown.
    pub column: u32,
    /// Its source file, an index into [`MemoryDb::files`], or [`NO_FILE`]: the file of the
    /// code it comes from, which for code inlined from another file (a lambda run by a
    /// header's template, a header's inline function) is not its function's.
    pub file: u32,
    /// What it does.
    pub kind: AccessKind,
    /// A short description (`load i32`, `memcpy dst`, `malloc`).
    pub what: String,
}

/// The memory instructions of a program, with the functions they belong to.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryDb {
    /// [`MEMORY_DB_VERSION`] when written.
    pub version: u32,
    /// The program's functions (names, source locations), as in its block trace.
    pub program: ProgramDb,
    /// Memory instructions by id.
    pub instructions: Vec<MemInstr>,
    /// The source files [`MemInstr::file`] indexes.
    pub files: Vec<String>,
}

impl MemoryDb {
    /// The version of an encoded database, read before the rest, whose layout depends on it.
    pub fn version_of(bytes: &[u8]) -> Option<u32> {
        postcard::take_from_bytes::<u32>(bytes).ok().map(|(v, _)| v)
    }

    /// The instruction with this id.
    pub fn get(&self, id: u32) -> Option<&MemInstr> {
        self.instructions.get(id as usize)
    }

    /// `function:line:column` of an instruction, for messages and listings ([`position`]).
    pub fn location(&self, id: u32) -> String {
        let Some(i) = self.get(id) else {
            return format!("#{id}");
        };
        let name = self
            .program
            .functions
            .get(i.function as usize)
            .map_or("?", |f| f.name.as_str());
        position(name, self.inlined_from(id), i.line, i.column)
    }

    /// The source file of instruction `id` when it is not its function's: code inlined from
    /// another file, whose line is that file's.
    pub fn inlined_from(&self, id: u32) -> Option<&str> {
        let i = self.get(id)?;
        let own = self.files.get(i.file as usize)?;
        let function = self.program.functions.get(i.function as usize)?;
        (function.file.as_deref() != Some(own.as_str())).then_some(own.as_str())
    }

    /// The ids of the instructions whose source line is `line` (in a file whose name ends with
    /// `file`, or in any file when `file` is empty) and whose kind is `kind`.
    pub fn at_line(&self, file: &str, line: u32, kind: AccessKind) -> Vec<u32> {
        self.of_kind_in(file, kind)
            .filter(|&id| self.instructions[id as usize].line == line)
            .collect()
    }

    /// The source lines of the instructions of `kind` in files whose path ends with `file`
    /// (any file if empty), in order.
    pub fn lines(&self, file: &str, kind: AccessKind) -> Vec<u32> {
        let mut lines: Vec<u32> = self
            .of_kind_in(file, kind)
            .map(|id| self.instructions[id as usize].line)
            .filter(|&line| line != 0)
            .collect();
        lines.sort_unstable();
        lines.dedup();
        lines
    }

    fn of_kind_in<'s>(&'s self, file: &'s str, kind: AccessKind) -> impl Iterator<Item = u32> + 's {
        (0..self.instructions.len() as u32).filter(move |&id| {
            self.instructions[id as usize].kind == kind
                && (file.is_empty() || self.file(id).is_some_and(|f| f.ends_with(file)))
        })
    }

    /// The source file of instruction `id`: its own, or its function's.
    pub fn file(&self, id: u32) -> Option<&str> {
        let i = self.get(id)?;
        match self.files.get(i.file as usize) {
            Some(f) => Some(f),
            None => self
                .program
                .functions
                .get(i.function as usize)?
                .file
                .as_deref(),
        }
    }
}

/// `function:line:column`; `function (file:line:column)` for a line of another file than the
/// function's (`inlined_from`, shown by its name without directories); or `function (no source
/// line)` where debug information gives the instruction none (line 0: a parameter's spill at
/// -O0, code built without `-g`), which a listing must not show as a line.
pub fn position(function: &str, inlined_from: Option<&str>, line: u32, column: u32) -> String {
    match (line, inlined_from) {
        (0, _) => format!("{function} (no source line)"),
        (_, Some(file)) => {
            let name = file.rsplit('/').next().unwrap_or(file);
            format!("{function} ({name}:{line}:{column})")
        }
        (_, None) => format!("{function}:{line}:{column}"),
    }
}
