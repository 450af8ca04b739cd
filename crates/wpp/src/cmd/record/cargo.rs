//! `wpp cargo ARGS…`: cargo with `wpp cc` as the linker of the crate's binaries and tests, so
//! that Rust programs record as C ones do (issue 12, item 4).
//!
//! rustc (here on LLVM 22, the instrumenter's LLVM) hands the linker LLVM bitcode instead of
//! machine code under `-C linker-plugin-lto`; `wpp cc` gathers it like a C program's,
//! instruments it and links. The precompiled standard library is linked as it is. wpp's
//! options are those of `wpp cc` (`--wpp-mode=M` anywhere on the line, or `WPP_MODE`). They
//! reach the linker as `-C link-arg=--wpp-…` flags rather than through the environment, so
//! they are part of the flags cargo fingerprints: another mode or report path rebuilds the
//! binaries (cargo does not see a report's contents change in place).
//!
//! Host artifacts — build scripts and procedural macros, which run inside the build (a proc
//! macro inside rustc itself) — must not be instrumented, so unless the command names a
//! `--target`, the host's triple is given: cargo then applies `RUSTFLAGS` to the target's
//! artifacts only, and they land in `target/TRIPLE/…`.

use super::cc::{from_env, split_args, CcOptions};
use anyhow::Context;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Runs `wpp cargo ARGS…`; cargo's exit status becomes wpp's.
pub fn run(args: &[String]) -> anyhow::Result<()> {
    let (o, mut cargo_args) = split_args(args)?;
    let linker = linker()?;
    let mut flags = vec![
        "-C".to_owned(),
        format!("linker={}", linker.display()),
        "-C".to_owned(),
        "linker-plugin-lto".to_owned(),
    ];
    for option in link_options(&from_env(o))? {
        flags.extend(["-C".to_owned(), format!("link-arg={option}")]);
    }
    let mut c = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    if !cargo_args
        .iter()
        .any(|a| a == "--target" || a.starts_with("--target="))
    {
        // After the subcommand: `cargo build --target T …`.
        let at = cargo_args.len().min(1);
        cargo_args.insert(at, format!("--target={}", host_triple()?));
    }
    c.args(&cargo_args);
    // Encoded (0x1f-separated), so paths with spaces survive; cargo splits `RUSTFLAGS` on
    // whitespace, and the encoded form takes precedence over it.
    let user: Vec<String> = match std::env::var("CARGO_ENCODED_RUSTFLAGS") {
        Ok(encoded) if !encoded.is_empty() => encoded.split('\x1f').map(str::to_owned).collect(),
        _ => std::env::var("RUSTFLAGS")
            .unwrap_or_default()
            .split_whitespace()
            .map(str::to_owned)
            .collect(),
    };
    c.env(
        "CARGO_ENCODED_RUSTFLAGS",
        [user, flags].concat().join("\x1f"),
    )
    .env_remove("RUSTFLAGS");
    let status = c.status().context("cannot run cargo")?;
    if !status.success() {
        std::process::exit(status.code().unwrap_or(1));
    }
    Ok(())
}

/// wpp's options as `wpp cc` flags. Paths are made absolute: rustc runs the linker from a
/// directory of its own choosing.
fn link_options(o: &CcOptions) -> anyhow::Result<Vec<String>> {
    let absolute = |p: &Option<PathBuf>| {
        p.as_ref()
            .map(|p| std::path::absolute(p).map(|p| p.display().to_string()))
            .transpose()
            .context("cannot resolve a path given to wpp")
    };
    let values = [
        ("mode", o.mode.clone()),
        ("interesting", absolute(&o.interesting)?),
        ("exercised", absolute(&o.exercised)?),
        ("counters", o.counters.clone()),
        ("keep", absolute(&o.keep)?),
    ];
    let mut flags: Vec<String> = values
        .into_iter()
        .filter_map(|(k, v)| Some(format!("--wpp-{k}={}", v?)))
        .collect();
    let switches = [("verbose", o.verbose), ("no-elide", o.no_elide)];
    flags.extend(
        switches
            .into_iter()
            .filter(|&(_, on)| on)
            .map(|(k, _)| format!("--wpp-{k}")),
    );
    Ok(flags)
}

/// A `wpp-cc` that runs this `wpp`: the one beside it when it is a link to it, else a link made
/// in the temporary directory (rustc runs its linker by path, with no way to add `cc`).
fn linker() -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe().context("cannot find the wpp executable")?;
    let beside = exe.with_file_name("wpp-cc");
    if links_to(&beside, &exe) {
        return Ok(beside);
    }
    // Per user: `/proc/self` belongs to the process's user.
    let uid =
        std::fs::metadata("/proc/self").map_or(0, |m| std::os::unix::fs::MetadataExt::uid(&m));
    let dir = std::env::temp_dir().join(format!("wpp-cargo-{uid}"));
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let link = dir.join("wpp-cc");
    if !links_to(&link, &exe) {
        let tmp = dir.join(format!("wpp-cc.{}", std::process::id()));
        std::os::unix::fs::symlink(&exe, &tmp)
            .and_then(|()| std::fs::rename(&tmp, &link))
            .with_context(|| format!("cannot link {} to {}", link.display(), exe.display()))?;
    }
    Ok(link)
}

fn links_to(link: &Path, exe: &Path) -> bool {
    std::fs::canonicalize(link).is_ok_and(|l| std::fs::canonicalize(exe).is_ok_and(|e| e == l))
}

/// The host's target triple, from `rustc -vV`.
fn host_triple() -> anyhow::Result<String> {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let out = Command::new(&rustc)
        .arg("-vV")
        .output()
        .with_context(|| format!("cannot run {rustc} -vV"))?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .map(str::to_owned)
        .with_context(|| format!("{rustc} -vV names no host"))
}
