//! Questions on one recording, answered on its grammar or trace without expanding it where the
//! papers allow: `wpp stats`, `wpp functions`, `wpp cfg`, `wpp hot`, `wpp subpath`, `wpp match`, `wpp diff` (two recordings), and the path-numbering
//! views `wpp paths` and `wpp ppp`, and memory dependences (`wpp deps`).

pub mod cfg;
pub mod deps;
pub mod diff;
pub mod functions;
pub mod hot;
pub mod matching;
pub mod paths;
pub mod ppp;
pub mod stats;
pub mod subpath;
