//! `wpp compress`.

/// Arguments of `wpp compress`.
#[derive(clap::Args)]
pub struct Args {}

/// Runs `wpp compress`.
pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("`wpp compress` is not implemented yet")
}
