//! The commands, one folder per group as `wpp --help` lists them. Each command module exposes
//! clap `Args` (or a subcommand enum) and `run`; what several commands share lives outside the
//! groups (`crate::input` reads every file kind, `crate::util` prints), so no command imports
//! another.
//!
//! | group | commands |
//! |---|---|
//! | [`record`] | `cc`, `instrument`, `synth`: make traces |
//! | [`compress`] | `compress`, `decompress`, `verify`, `trace …`: traces to grammars and back |
//! | [`query`] | `stats`, `functions`, `cfg`, `hot`, `subpath`, `match`, `diff`, `paths`, `ppp`: questions on a recording |
//! | [`profile`] | `profile show|merge|diff`: bl/ppp path profiles |
//! | [`show`] | views of a whole run for other tools |
//! | [`db`] | `db …`, `sql …`: run the `wpp-db` binary (many runs in SQL) |

pub mod compress;
pub mod db;
pub mod profile;
pub mod query;
pub mod record;
pub mod show;
