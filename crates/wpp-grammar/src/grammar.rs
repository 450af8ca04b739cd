//! The finished grammar: the common currency of compressors, files and queries.

use serde::{Deserialize, Serialize};
use wpp_trace::{Terminal, ThreadId};

use crate::symbol::{Symbol, SymbolKind};

/// A rule of a [`Grammar`], numbered bottom-up: the body of rule `r` refers only to rules `< r`.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct RuleId(pub u32);

impl RuleId {
    /// The id as an index into a dense table.
    #[inline]
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// The start rule of one thread's trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StartRule {
    /// The thread whose events the rule expands to.
    pub thread: ThreadId,
    /// The rule; start rules are ordinary rules that no other rule refers to.
    pub rule: RuleId,
}

/// A straight-line grammar in bottom-up order with one start rule per thread.
///
/// Bodies are stored contiguously (`symbols[offsets[r]..offsets[r + 1]]`), so walking a rule is a
/// slice iteration and the whole grammar is three allocations. Expanded lengths are computed once
/// at construction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grammar {
    num_terminals: u32,
    symbols: Vec<Symbol>,
    offsets: Vec<u32>,
    lengths: Vec<u64>,
    starts: Vec<StartRule>,
}

/// Why a set of rule bodies is not a valid bottom-up grammar.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum GrammarError {
    /// A body refers to a rule that is not strictly below it (a cycle or a forward reference).
    #[error("rule {rule} refers to rule {target}, which is not below it")]
    ForwardReference {
        /// The referring rule.
        rule: u32,
        /// The referenced rule.
        target: u32,
    },
    /// A terminal is outside the alphabet.
    #[error("rule {rule} uses terminal {terminal}, but the alphabet has {alphabet} terminals")]
    TerminalOutOfRange {
        /// The rule.
        rule: u32,
        /// The terminal.
        terminal: u32,
        /// The alphabet's size.
        alphabet: u32,
    },
    /// A rule's expansion is longer than 2^64 − 1 symbols.
    #[error("rule {rule} expands to more than 2^64 symbols")]
    LengthOverflow {
        /// The rule.
        rule: u32,
    },
    /// A start rule names a rule that does not exist.
    #[error("start rule for thread {thread} names rule {rule}, but there are {rules} rules")]
    BadStart {
        /// The thread.
        thread: u32,
        /// The rule.
        rule: u32,
        /// The number of rules.
        rules: u32,
    },
    /// Too many rules or symbols for 32-bit ids.
    #[error("the grammar has more than 2^31 rules or 2^32 symbols")]
    TooLarge,
}

impl Grammar {
    /// Builds a grammar from rule bodies in bottom-up order, checking every reference and
    /// computing expanded lengths. `starts` name the start rule of each thread.
    pub fn new(
        num_terminals: u32,
        bodies: impl IntoIterator<Item = impl IntoIterator<Item = Symbol>>,
        starts: Vec<StartRule>,
    ) -> Result<Grammar, GrammarError> {
        let mut g = Grammar {
            num_terminals,
            symbols: Vec::new(),
            offsets: vec![0],
            lengths: Vec::new(),
            starts: Vec::new(),
        };
        for body in bodies {
            g.push_rule(body)?;
        }
        for s in &starts {
            if s.rule.index() >= g.num_rules() {
                return Err(GrammarError::BadStart {
                    thread: s.thread.0,
                    rule: s.rule.0,
                    rules: g.num_rules() as u32,
                });
            }
        }
        g.starts = starts;
        Ok(g)
    }

    fn push_rule(&mut self, body: impl IntoIterator<Item = Symbol>) -> Result<(), GrammarError> {
        let rule = self.lengths.len() as u32;
        if rule >= 1 << 31 {
            return Err(GrammarError::TooLarge);
        }
        let mut len: u64 = 0;
        for s in body {
            let add = match s.kind() {
                SymbolKind::Terminal(t) if t.0 < self.num_terminals => 1,
                SymbolKind::Terminal(t) => {
                    return Err(GrammarError::TerminalOutOfRange {
                        rule,
                        terminal: t.0,
                        alphabet: self.num_terminals,
                    })
                }
                SymbolKind::Rule(r) if r.0 < rule => self.lengths[r.index()],
                SymbolKind::Rule(r) => {
                    return Err(GrammarError::ForwardReference { rule, target: r.0 })
                }
            };
            len = len
                .checked_add(add)
                .ok_or(GrammarError::LengthOverflow { rule })?;
            self.symbols.push(s);
        }
        let end = u32::try_from(self.symbols.len()).map_err(|_| GrammarError::TooLarge)?;
        self.offsets.push(end);
        self.lengths.push(len);
        Ok(())
    }

    /// Number of terminals in the alphabet the grammar is over.
    pub fn num_terminals(&self) -> u32 {
        self.num_terminals
    }

    /// Number of rules, start rules included.
    pub fn num_rules(&self) -> usize {
        self.lengths.len()
    }

    /// Total number of symbols on right-hand sides (Larus Table 1's "grammar symbols").
    pub fn num_symbols(&self) -> usize {
        self.symbols.len()
    }

    /// The body of rule `r`.
    #[inline]
    pub fn body(&self, r: RuleId) -> &[Symbol] {
        &self.symbols[self.offsets[r.index()] as usize..self.offsets[r.index() + 1] as usize]
    }

    /// The length of rule `r`'s expansion.
    #[inline]
    pub fn expanded_len(&self, r: RuleId) -> u64 {
        self.lengths[r.index()]
    }

    /// The length of a symbol's expansion (1 for a terminal).
    #[inline]
    pub fn symbol_len(&self, s: Symbol) -> u64 {
        match s.kind() {
            SymbolKind::Terminal(_) => 1,
            SymbolKind::Rule(r) => self.lengths[r.index()],
        }
    }

    /// The start rules, one per thread.
    pub fn starts(&self) -> &[StartRule] {
        &self.starts
    }

    /// All rule ids, bottom-up.
    pub fn rules(&self) -> impl DoubleEndedIterator<Item = RuleId> + ExactSizeIterator {
        (0..self.lengths.len() as u32).map(RuleId)
    }

    /// How many times each rule is referenced from other rules' bodies (SEQUITUR's rule
    /// utility: every non-start rule of a SEQUITUR grammar has at least two).
    pub fn reference_counts(&self) -> Vec<u32> {
        let mut counts = vec![0u32; self.num_rules()];
        for s in &self.symbols {
            if let SymbolKind::Rule(r) = s.kind() {
                counts[r.index()] += 1;
            }
        }
        counts
    }

    /// Whether terminal `t` is in range.
    pub fn has_terminal(&self, t: Terminal) -> bool {
        t.0 < self.num_terminals
    }
}
