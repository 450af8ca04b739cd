//! Grammar symbols: a terminal or a reference to a rule, packed into 32 bits.

use wpp_trace::Terminal;

use crate::grammar::RuleId;

/// A terminal (top bit clear) or a rule reference (top bit set), in one `u32`.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Symbol(u32);

const RULE_BIT: u32 = 1 << 31;

/// What a [`Symbol`] stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SymbolKind {
    /// A terminal of the alphabet.
    Terminal(Terminal),
    /// A reference to a rule.
    Rule(RuleId),
}

impl Symbol {
    /// A terminal symbol. `t` must be below [`Terminal::LIMIT`].
    #[inline]
    pub fn terminal(t: Terminal) -> Symbol {
        debug_assert!(t.0 < Terminal::LIMIT);
        Symbol(t.0)
    }

    /// A reference to rule `r`. `r` must be below 2^31.
    #[inline]
    pub fn rule(r: RuleId) -> Symbol {
        debug_assert!(r.0 < RULE_BIT);
        Symbol(r.0 | RULE_BIT)
    }

    /// Whether this is a rule reference.
    #[inline]
    pub fn is_rule(self) -> bool {
        self.0 & RULE_BIT != 0
    }

    /// What the symbol stands for.
    #[inline]
    pub fn kind(self) -> SymbolKind {
        if self.is_rule() {
            SymbolKind::Rule(RuleId(self.0 & !RULE_BIT))
        } else {
            SymbolKind::Terminal(Terminal(self.0))
        }
    }

    /// The packed representation (as stored in `.wpp` files).
    #[inline]
    pub fn to_bits(self) -> u32 {
        self.0
    }

    /// The symbol with this packed representation.
    #[inline]
    pub fn from_bits(bits: u32) -> Symbol {
        Symbol(bits)
    }
}

impl std::fmt::Debug for Symbol {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.kind() {
            SymbolKind::Terminal(t) => write!(f, "t{}", t.0),
            SymbolKind::Rule(r) => write!(f, "R{}", r.0),
        }
    }
}
