//! `wpp db …` and `wpp sql …`: the store of many runs (issue 16) lives in the `wpp-db` binary,
//! the only one built on DataFusion, so `wpp` stays light. Like git's subcommands, these run
//! `wpp-db` (found next to the `wpp` executable, else on `PATH`) with the same arguments.

use std::path::PathBuf;
use std::process::Command;

use anyhow::Context;

/// The name of the binary that implements `wpp db` and `wpp sql`.
const BINARY: &str = "wpp-db";

/// Arguments passed through to `wpp-db` as they are.
#[derive(clap::Args)]
#[command(disable_help_flag = true)]
pub struct Args {
    /// `wpp-db`'s arguments (`wpp db --help` lists them).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub args: Vec<String>,
}

/// `wpp-db` next to the running `wpp`, or the name alone to be found on `PATH`.
fn binary() -> PathBuf {
    let beside = std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.join(BINARY)))
        .filter(|p| p.is_file());
    beside.unwrap_or_else(|| PathBuf::from(BINARY))
}

/// Runs `wpp-db SUBCOMMAND ARGS…` (`wpp sql …` is `wpp-db sql …`; `wpp db X …` is `wpp-db X
/// …`) and exits with its status.
pub fn run(subcommand: Option<&str>, args: Args) -> anyhow::Result<()> {
    let bin = binary();
    let status = Command::new(&bin)
        .args(subcommand)
        .args(&args.args)
        .status()
        .with_context(|| {
            format!(
                "cannot run {}: `wpp db` and `wpp sql` need the wpp-db binary next to wpp or \
                 on PATH (build it with `cargo build --release -p wpp-db`)",
                bin.display()
            )
        })?;
    std::process::exit(status.code().unwrap_or(1))
}
