//! `wpp profile merge`: the sum of any number of profiles of one program, streaming.
//!
//! Profiles are read one at a time and added into the first, so memory is the merged profile
//! plus one file, whatever the number of inputs (issue 16 item 5: 10^4 profiles of a fleet or
//! a test suite). A profile whose program is the first one's byte for byte has only its counts
//! decoded ([`Build::counts`]); any other is read whole and compared, so a profile of another
//! build is refused with what differs.

use anyhow::Context as _;
use std::io::BufRead as _;
use std::path::{Path, PathBuf};
use wpp_abi::profile::{Build, ProfileFile};

/// Arguments of `wpp profile merge`.
#[derive(clap::Args)]
pub struct Args {
    /// The profiles to add up: files, folders (every `*.blprof` and `*.pppprof` under them, in
    /// name order) and `@LIST` files naming one input per line (`@-`: standard input), for
    /// more profiles than a command line holds (`find … | wpp profile merge @- -o OUT`).
    #[arg(required = true)]
    profiles: Vec<PathBuf>,
    /// The merged profile to write.
    #[arg(short, long)]
    output: PathBuf,
}

/// File names taken from folders (files named otherwise are taken whatever their name).
const EXTENSIONS: [&str; 2] = ["blprof", "pppprof"];

/// Runs `wpp profile merge`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let files = expand(&args.profiles)?;
    let (first, rest) = files.split_first().with_context(|| {
        let inputs: Vec<String> = args
            .profiles
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        format!(
            "wpp profile merge found no profiles (*.blprof, *.pppprof) in {}",
            inputs.join(", ")
        )
    })?;
    let mut merged = super::read(first)?;
    let build = Build::of(&merged.program);
    let bar = crate::util::progress(files.len() as u64, "merging");
    bar.inc(1);
    for p in rest {
        add(&mut merged, &build, p)
            .with_context(|| format!("cannot merge {} into {}", p.display(), first.display()))?;
        bar.inc(1);
    }
    bar.finish_and_clear();
    std::fs::write(&args.output, merged.to_bytes())
        .with_context(|| format!("cannot write {}", args.output.display()))
}

/// Adds the profile at `path` to `merged`, whose program is `build`.
fn add(merged: &mut ProfileFile, build: &Build, path: &Path) -> anyhow::Result<()> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let counts = build
        .counts(&bytes)
        .with_context(|| format!("cannot read {}", path.display()))?;
    match counts {
        Some(counts) => merged.merge_counts(&counts)?,
        None => merged.merge(&super::read(path)?)?,
    }
    Ok(())
}

/// The profiles the inputs name: files as given, folders' profiles, list files' inputs.
fn expand(inputs: &[PathBuf]) -> anyhow::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for input in inputs {
        match input.to_str().and_then(|s| s.strip_prefix('@')) {
            Some(list) => {
                let listed = read_list(list)?;
                out.extend(expand(&listed)?);
            }
            None if input.is_dir() => walk(input, &mut out)?,
            None => out.push(input.clone()),
        }
    }
    Ok(out)
}

/// The inputs a list file names, one per line (blank lines skipped); `-` is standard input.
fn read_list(list: &str) -> anyhow::Result<Vec<PathBuf>> {
    let lines: Vec<String> = if list == "-" {
        std::io::stdin().lock().lines().collect::<Result<_, _>>()
    } else {
        std::fs::read_to_string(list).map(|t| t.lines().map(String::from).collect())
    }
    .with_context(|| format!("cannot read the list of profiles {list}"))?;
    Ok(lines
        .into_iter()
        .filter(|l| !l.trim().is_empty())
        .map(PathBuf::from)
        .collect())
}

/// Every profile under `dir`, recursively, in name order.
fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> anyhow::Result<()> {
    for e in walkdir::WalkDir::new(dir)
        .follow_links(true)
        .sort_by_file_name()
    {
        let e = e.with_context(|| format!("cannot read the folder {}", dir.display()))?;
        let profile = e
            .path()
            .extension()
            .and_then(|x| x.to_str())
            .is_some_and(|x| EXTENSIONS.contains(&x));
        if e.file_type().is_file() && profile {
            out.push(e.into_path());
        }
    }
    Ok(())
}
