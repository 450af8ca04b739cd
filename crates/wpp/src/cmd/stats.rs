//! `wpp stats`.

/// Arguments of `wpp stats`.
#[derive(clap::Args)]
pub struct Args {}

/// Runs `wpp stats`.
pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("`wpp stats` is not implemented yet")
}
