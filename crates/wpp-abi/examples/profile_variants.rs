//! Writes N variants of one bl/ppp profile for the ingest and merge benchmarks (`bench/db.sh`,
//! `bench/merge.sh`): variant `i` has every path count of the original plus `i` on one path in
//! 16, so each file has its own content (its own run id) and the same program and paths.
//!
//! `cargo run --release -p wpp-abi --example profile_variants -- PROFILE N OUT_DIR`

use anyhow::Context;
use wpp_abi::profile::ProfileFile;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [profile, n, out] = &args[..] else {
        anyhow::bail!("usage: profile_variants PROFILE N OUT_DIR");
    };
    let bytes = std::fs::read(profile).with_context(|| format!("cannot read {profile}"))?;
    let base = ProfileFile::from_bytes(&bytes).with_context(|| format!("cannot read {profile}"))?;
    let n: u64 = n.parse().context("N must be a number")?;
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {out}"))?;
    for i in 0..n {
        let mut p = base.clone();
        for (k, count) in
            p.bl.functions
                .values_mut()
                .flat_map(|m| m.values_mut())
                .enumerate()
        {
            if k % 16 == (i % 16) as usize {
                *count += i;
            }
        }
        let path = format!("{out}/v{i:06}.blprof");
        std::fs::write(&path, p.to_bytes()).with_context(|| format!("cannot write {path}"))?;
    }
    Ok(())
}
