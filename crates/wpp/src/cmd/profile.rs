//! `wpp profile …`.

/// Subcommands of `wpp profile`.
#[derive(clap::Subcommand)]
pub enum Command {
    /// Not implemented yet.
    Todo,
}

/// Runs a `wpp profile` subcommand.
pub fn run(_command: Command) -> anyhow::Result<()> {
    anyhow::bail!("`wpp profile` is not implemented yet")
}
