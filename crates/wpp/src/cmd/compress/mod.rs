//! Traces to grammars and back: `wpp compress`, `wpp decompress`, `wpp verify`, and the trace
//! utilities `wpp trace convert|cat|blocks|chunk`.

pub mod chunk;
pub mod decompress;
pub mod grammar;
pub mod trace;
pub mod verify;
