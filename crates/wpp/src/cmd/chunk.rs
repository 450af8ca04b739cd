//! `wpp trace chunk`.

/// Arguments of `wpp trace chunk`.
#[derive(clap::Args)]
pub struct Args {}

/// Runs `wpp trace chunk`.
pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("`wpp trace chunk` is not implemented yet")
}
