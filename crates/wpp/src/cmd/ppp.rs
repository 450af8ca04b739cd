//! `wpp ppp …`.

/// Subcommands of `wpp ppp`.
#[derive(clap::Subcommand)]
pub enum Command {
    /// Not implemented yet.
    Todo,
}

/// Runs a `wpp ppp` subcommand.
pub fn run(_command: Command) -> anyhow::Result<()> {
    anyhow::bail!("`wpp ppp` is not implemented yet")
}
