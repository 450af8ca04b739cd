//! `wpp match`.

/// Arguments of `wpp match`.
#[derive(clap::Args)]
pub struct Args {}

/// Runs `wpp match`.
pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("`wpp match` is not implemented yet")
}
