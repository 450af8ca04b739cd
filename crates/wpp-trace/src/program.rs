//! The program database: what the ids in a trace refer to.
//!
//! Every trace, grammar and profile carries a copy so that it is self-contained. Functions are
//! indexed densely by [`FunctionId`].

use crate::ids::FunctionId;
use serde::{Deserialize, Serialize};

/// Static facts about one function.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Function {
    /// The (linkage) name.
    pub name: String,
    /// Source file, where debug information names one.
    pub file: Option<String>,
    /// First source line, where known.
    pub line: Option<u32>,
    /// Source line of each block (indexed by block id), where known; may be empty.
    pub block_lines: Vec<u32>,
}

/// The functions of a program, indexed by [`FunctionId`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProgramDb {
    /// All functions, in id order.
    pub functions: Vec<Function>,
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
