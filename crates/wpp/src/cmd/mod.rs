//! One module per command family. Each exposes clap `Args` (or a subcommand enum) and `run`.

pub mod cc;
pub mod chunk;
pub mod compress;
pub mod decompress;
pub mod hot;
pub mod instrument;
pub mod matching;
pub mod paths;
pub mod ppp;
pub mod profile;
pub mod show;
pub mod stats;
pub mod subpath;
pub mod synth;
pub mod trace;
pub mod verify;
