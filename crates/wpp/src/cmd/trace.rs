//! `wpp trace …`: convert, print and chunk trace files.

/// Subcommands of `wpp trace`.
#[derive(clap::Subcommand)]
pub enum Command {
    /// Write the scheme 3 chunked container (Zhang–Gupta §4.3).
    Chunk(super::chunk::Args),
}

/// Runs a `wpp trace` subcommand.
pub fn run(command: Command) -> anyhow::Result<()> {
    match command {
        Command::Chunk(a) => super::chunk::run(a),
    }
}
