//! `wpp verify`.

/// Arguments of `wpp verify`.
#[derive(clap::Args)]
pub struct Args {}

/// Runs `wpp verify`.
pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("`wpp verify` is not implemented yet")
}
