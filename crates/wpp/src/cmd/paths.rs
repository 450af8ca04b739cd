//! `wpp paths …`.

/// Subcommands of `wpp paths`.
#[derive(clap::Subcommand)]
pub enum Command {
    /// Not implemented yet.
    Todo,
}

/// Runs a `wpp paths` subcommand.
pub fn run(_command: Command) -> anyhow::Result<()> {
    anyhow::bail!("`wpp paths` is not implemented yet")
}
