//! `wpp decompress`.

/// Arguments of `wpp decompress`.
#[derive(clap::Args)]
pub struct Args {}

/// Runs `wpp decompress`.
pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("`wpp decompress` is not implemented yet")
}
