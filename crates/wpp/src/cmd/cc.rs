//! `wpp cc`.

/// Arguments of `wpp cc`.
#[derive(clap::Args)]
pub struct Args {}

/// Runs `wpp cc`.
pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("`wpp cc` is not implemented yet")
}
