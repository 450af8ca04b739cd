//! Choosing a compressor: the [`Algorithm`] enum and the one-call [`compress`] entry point.
//!
//! * [`Algorithm::Sequitur`] — online SEQUITUR (Larus §3.1), see [`crate::sequitur`].
//! * [`Algorithm::Sequitur1`] — SEQUITUR(1), one symbol of look-ahead (Larus §3.2).
//! * [`Algorithm::Frequency`] — most-frequent-digram-first (Tallam–Gupta §4.2, Re-Pair style),
//!   an offline compressor that needs whole streams.
//! * [`Algorithm::Phrase`] — content-defined phrases, deduplicated, then SEQUITUR over phrase
//!   ids ([`crate::phrase`]); online and several times faster than SEQUITUR, the runtime's
//!   default. Its grammars keep rule utility but not digram uniqueness.

use std::fmt;
use std::str::FromStr;

use wpp_trace::{Terminal, ThreadId};

use crate::grammar::Grammar;
use crate::sequitur::{Sequitur, SequiturError, Variant};

/// A grammar compressor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Algorithm {
    /// SEQUITUR (Nevill-Manning and Witten; Larus §3.1).
    Sequitur,
    /// SEQUITUR(1) (Larus §3.2).
    Sequitur1,
    /// Most frequent digram first (Tallam–Gupta §4.2).
    Frequency,
    /// Content-defined phrases, then SEQUITUR over phrase ids ([`crate::phrase`]).
    Phrase,
}

impl Algorithm {
    /// Every algorithm, in [`code`](Self::code) order.
    pub const ALL: [Algorithm; 4] = [
        Algorithm::Sequitur,
        Algorithm::Sequitur1,
        Algorithm::Frequency,
        Algorithm::Phrase,
    ];

    /// The name used on the command line and in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Algorithm::Sequitur => "sequitur",
            Algorithm::Sequitur1 => "sequitur1",
            Algorithm::Frequency => "frequency",
            Algorithm::Phrase => "phrase",
        }
    }

    /// Whether the algorithm's grammars satisfy digram uniqueness (Larus §3.1). Every algorithm
    /// guarantees rule utility; phrase grammars may repeat a digram inside two phrases.
    pub fn has_unique_digrams(self) -> bool {
        self != Algorithm::Phrase
    }

    /// The byte stored in `.wpp` files.
    pub fn code(self) -> u8 {
        self as u8
    }

    /// The algorithm with this `.wpp` code.
    pub fn from_code(code: u8) -> Option<Algorithm> {
        Algorithm::ALL.get(usize::from(code)).copied()
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An unknown algorithm name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown algorithm `{0}` (expected sequitur, sequitur1, frequency or phrase)")]
pub struct UnknownAlgorithm(pub String);

impl FromStr for Algorithm {
    type Err = UnknownAlgorithm;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Algorithm::ALL
            .into_iter()
            .find(|a| a.as_str() == s)
            .ok_or_else(|| UnknownAlgorithm(s.to_owned()))
    }
}

/// Why [`compress`] failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CompressError {
    /// SEQUITUR rejected the input.
    #[error(transparent)]
    Sequitur(#[from] SequiturError),
    /// The frequency compressor rejected the input.
    #[error(transparent)]
    Frequency(#[from] crate::repair::RePairError),
    /// The phrase compressor rejected the input.
    #[error(transparent)]
    Phrase(#[from] crate::phrase::PhraseError),
}

/// Compresses one stream per thread; stream `i` is thread `i`.
pub fn compress(algorithm: Algorithm, streams: &[&[Terminal]]) -> Result<Grammar, CompressError> {
    let threads: Vec<_> = streams
        .iter()
        .enumerate()
        .map(|(i, s)| (ThreadId(i as u32), *s))
        .collect();
    compress_threads(algorithm, &threads)
}

/// Compresses one stream per thread, each labelled with its thread id.
pub fn compress_threads(
    algorithm: Algorithm,
    streams: &[(ThreadId, &[Terminal])],
) -> Result<Grammar, CompressError> {
    let variant = match algorithm {
        Algorithm::Sequitur => Variant::Sequitur,
        Algorithm::Sequitur1 => Variant::Sequitur1,
        Algorithm::Frequency => {
            let mut c = crate::repair::RePair::new();
            for &(thread, ts) in streams {
                c.add_stream(thread, ts.iter().copied())?;
            }
            return Ok(c.finish()?);
        }
        Algorithm::Phrase => {
            let mut c = crate::phrase::PhraseCompressor::new();
            for &(thread, ts) in streams {
                let id = c.add_stream(thread)?;
                c.push_slice(id, ts)?;
            }
            return Ok(c.finish(0)?);
        }
    };
    let mut s = Sequitur::new(variant);
    for &(thread, ts) in streams {
        let id = s.add_stream(thread)?;
        s.push_slice(id, ts)?;
    }
    Ok(s.finish())
}
