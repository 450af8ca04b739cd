//! `wpp synth`.

/// Arguments of `wpp synth`.
#[derive(clap::Args)]
pub struct Args {}

/// Runs `wpp synth`.
pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("`wpp synth` is not implemented yet")
}
