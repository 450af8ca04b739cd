//! `wpp instrument`.

/// Arguments of `wpp instrument`.
#[derive(clap::Args)]
pub struct Args {}

/// Runs `wpp instrument`.
pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("`wpp instrument` is not implemented yet")
}
