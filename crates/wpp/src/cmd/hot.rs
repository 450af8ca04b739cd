//! `wpp hot`.

/// Arguments of `wpp hot`.
#[derive(clap::Args)]
pub struct Args {}

/// Runs `wpp hot`.
pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("`wpp hot` is not implemented yet")
}
