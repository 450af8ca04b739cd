//! `wpp trace chunk`: write the scheme 3 container (Zhang–Gupta §4.3) — the trace cut into
//! fixed-size chunks compressed separately, with the per-chunk function and level index.

use std::fs::File;
use std::io::BufWriter;
use std::path::PathBuf;

use anyhow::Context;
use wpp_query::matching::chunked::{ChunkWriter, Codec};

/// Arguments of `wpp trace chunk`.
#[derive(clap::Args)]
pub struct Args {
    /// The trace (binary or text).
    pub trace: PathBuf,
    /// The chunked container to write.
    #[arg(short, long)]
    pub output: PathBuf,
    /// Uncompressed chunk size, e.g. `4MiB`, `64KiB`, `100000`.
    #[arg(long, default_value = "4MiB", value_parser = parse_size)]
    pub chunk_size: usize,
    /// Chunk compression.
    #[arg(long, value_enum, default_value = "zstd")]
    pub codec: CodecName,
    /// Compression level (zstd 1–22, default 3; gzip 0–9, default 6).
    #[arg(long)]
    pub level: Option<i32>,
}

/// Chunk codecs.
#[derive(Clone, Copy, clap::ValueEnum)]
pub enum CodecName {
    /// zstd (default).
    Zstd,
    /// gzip, as in the paper.
    Gzip,
}

/// Parses `4MiB`, `4M`, `64KiB`, `64k`, `1GiB` or a plain number of bytes.
pub fn parse_size(s: &str) -> Result<usize, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: usize = num.parse().map_err(|_| format!("bad size `{s}`"))?;
    let mult = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        _ => return Err(format!("bad size unit in `{s}`")),
    };
    n.checked_mul(mult)
        .filter(|&v| v > 0)
        .ok_or_else(|| format!("size `{s}` out of range"))
}

/// Runs `wpp trace chunk`.
pub fn run(args: Args) -> anyhow::Result<()> {
    // A recording cut short is chunked up to its last whole chunk, with a warning.
    let mut reader = crate::input::open_trace(&args.trace, "trace chunk")?;
    let codec = match args.codec {
        CodecName::Zstd => Codec::Zstd(args.level.unwrap_or(3)),
        CodecName::Gzip => Codec::Gzip(args.level.unwrap_or(6).clamp(0, 9) as u32),
    };
    let out = File::create(&args.output)
        .with_context(|| format!("cannot create {}", args.output.display()))?;
    let mut w = ChunkWriter::new(
        BufWriter::new(out),
        reader.program(),
        codec,
        args.chunk_size,
    )?;
    let mut failed = None;
    reader
        .for_each_batch(|events| {
            for &e in events {
                if let Err(err) = w.push(e) {
                    failed.get_or_insert(err);
                    return;
                }
            }
        })
        .with_context(|| format!("cannot read {}", args.trace.display()))?;
    if let Some(err) = failed {
        return Err(err).with_context(|| format!("cannot write {}", args.output.display()));
    }
    crate::input::warn_truncated(&args.trace, reader.truncation());
    let (_, index_bytes) = w
        .finish()
        .with_context(|| format!("cannot write {}", args.output.display()))?;
    eprintln!(
        "wrote {} (index {} bytes)",
        args.output.display(),
        index_bytes
    );
    Ok(())
}
