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
//!
//! As `wpp cc` adds line tables when no `-g` is given, a release build gets
//! `debug = "line-tables-only"` unless the manifest or the environment sets its `debug`, so
//! `wpp annotate` has lines; and symbols are mangled v0, so that generic instances are named by
//! their types.

use super::cc::{settings, split_args, CcOptions};
use anyhow::Context;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Runs `wpp cargo ARGS…`; cargo's exit status becomes wpp's, and a signal that ended it ends
/// wpp too (`cargo run` replaces itself with the program, so an aborted program's shell sees
/// the abort).
pub fn run(args: &[String]) -> anyhow::Result<()> {
    let (o, mut cargo_args) = split_args(args)?;
    let (_, _, o) = settings(o)?;
    let mut c = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    // `wpp cargo --help`, `--version`, `--list`: cargo's own, with nothing to build.
    if cargo_args.first().is_none_or(|a| a.starts_with('-')) {
        return finish(c.args(&cargo_args).status().context("cannot run cargo")?);
    }
    if !cargo_args
        .iter()
        .any(|a| a == "--target" || a.starts_with("--target="))
    {
        // After the subcommand: `cargo build --target T …`.
        cargo_args.insert(1, format!("--target={}", host_triple()?));
    }
    if builds_release(&cargo_args) && !release_sets_debug(&cargo_args)? {
        // As `wpp cc` adds `-gline-tables-only` when no `-g` is given: lines for `annotate`.
        c.env("CARGO_PROFILE_RELEASE_DEBUG", "line-tables-only");
    }
    c.args(&cargo_args);
    c.env("CARGO_ENCODED_RUSTFLAGS", rustflags(&o)?.join("\x1f"))
        .env_remove("RUSTFLAGS");
    finish(c.status().context("cannot run cargo")?)
}

/// The user's rustflags, then wpp's: `wpp cc` as the linker over the crate's bitcode, and
/// v0 symbol names, which name each generic instance by its types (`largest::<i32>`, not
/// `largest::h01d1…`), unless the user chose a mangling.
fn rustflags(o: &CcOptions) -> anyhow::Result<Vec<String>> {
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
    let mut flags = vec![
        "-C".to_owned(),
        format!("linker={}", linker()?.display()),
        "-C".to_owned(),
        "linker-plugin-lto".to_owned(),
    ];
    if !user.iter().any(|f| f.contains("symbol-mangling-version")) {
        flags.push("-Csymbol-mangling-version=v0".to_owned());
    }
    for option in link_options(o)? {
        flags.extend(["-C".to_owned(), format!("link-arg={option}")]);
    }
    Ok([user, flags].concat())
}

/// Exits as cargo did: its status, or the signal that ended it, raised again.
fn finish(status: std::process::ExitStatus) -> anyhow::Result<()> {
    if let Some(signal) = status.signal() {
        // SAFETY: restoring the default action and raising a signal have no preconditions.
        unsafe {
            libc::signal(signal, libc::SIG_DFL);
            libc::raise(signal);
        }
        std::process::exit(128 + signal);
    }
    if !status.success() {
        std::process::exit(status.code().unwrap_or(1));
    }
    Ok(())
}

/// Whether the cargo command builds the `release` profile.
fn builds_release(args: &[String]) -> bool {
    args.iter().enumerate().any(|(i, a)| {
        a == "--release"
            || a == "-r"
            || a == "--profile=release"
            || (a == "--profile" && args.get(i + 1).is_some_and(|p| p == "release"))
    })
}

/// Whether the user set the release profile's debug information: in the environment, in a
/// `--config` of the command, or in the manifest of the workspace it builds (`--manifest-path`'s,
/// else the current directory's) as `[profile.release] debug`.
fn release_sets_debug(args: &[String]) -> anyhow::Result<bool> {
    if std::env::var_os("CARGO_PROFILE_RELEASE_DEBUG").is_some()
        || args.iter().any(|a| a.contains("profile.release.debug"))
    {
        return Ok(true);
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut locate = Command::new(&cargo);
    locate.args(["locate-project", "--workspace", "--message-format", "plain"]);
    if let Some(manifest) = option_value(args, "--manifest-path") {
        locate.args(["--manifest-path", manifest]);
    }
    let out = locate
        .output()
        .with_context(|| format!("cannot run {cargo} locate-project"))?;
    if !out.status.success() {
        // No manifest here: cargo itself will say so.
        return Ok(false);
    }
    let manifest = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    let text = std::fs::read_to_string(&manifest)
        .with_context(|| format!("cannot read {}", manifest.display()))?;
    let doc: toml_edit::DocumentMut = text
        .parse()
        .with_context(|| format!("cannot read {}", manifest.display()))?;
    Ok(doc
        .get("profile")
        .and_then(|p| p.get("release"))
        .is_some_and(|r| r.get("debug").is_some()))
}

/// The value of a cargo option given as `NAME VALUE` or `NAME=VALUE`.
fn option_value<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    args.iter()
        .enumerate()
        .find_map(|(i, a)| match a.strip_prefix(name) {
            Some("") => args.get(i + 1).map(String::as_str),
            Some(rest) => rest.strip_prefix('='),
            None => None,
        })
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

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| w.to_string()).collect()
    }

    /// The manifest read is the one cargo builds: `--manifest-path`'s, not the current
    /// directory's (which here has none).
    #[test]
    fn the_debug_setting_is_read_from_the_manifest_cargo_builds() {
        let dir = tempfile::tempdir().unwrap();
        let manifest = |name: &str, profile: &str| {
            let root = dir.path().join(name);
            std::fs::create_dir_all(root.join("src")).unwrap();
            std::fs::write(root.join("src/main.rs"), "fn main() {}\n").unwrap();
            let text = format!("[package]\nname = \"{name}\"\nversion = \"0.1.0\"\n{profile}");
            std::fs::write(root.join("Cargo.toml"), text).unwrap();
            root.join("Cargo.toml").display().to_string()
        };
        let full = manifest("full", "[profile.release]\ndebug = true\n");
        let plain = manifest("plain", "");
        let sets = |a: &[&str]| release_sets_debug(&args(a)).unwrap();
        assert!(sets(&["build", "-r", "--manifest-path", &full]));
        assert!(sets(&["build", "-r", &format!("--manifest-path={full}")]));
        assert!(!sets(&["build", "-r", "--manifest-path", &plain]));
        assert!(sets(&[
            "build",
            "-r",
            "--manifest-path",
            &plain,
            "--config",
            "profile.release.debug=2"
        ]));
    }
}
