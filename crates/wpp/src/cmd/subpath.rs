//! `wpp subpath`.

/// Arguments of `wpp subpath`.
#[derive(clap::Args)]
pub struct Args {}

/// Runs `wpp subpath`.
pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("`wpp subpath` is not implemented yet")
}
