//! `wpp match`: first occurrence or number of occurrences of an intraprocedural path
//! (Zhang–Gupta §4) in a `.wpp` grammar (schemes 1, 2, 4) or a chunked trace (scheme 3).

use std::fs::File;
use std::io::{BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Context;
use serde::Serialize;
use wpp_grammar::file::WppFile;
use wpp_query::matching::chunked::{self, ChunkedTrace};
use wpp_query::matching::partition::{self, PartitionIndex, SECTION_TAG};
use wpp_query::matching::{compressed, scheme1, Mode, PathQuery, Scheme, StreamMatch};
use wpp_trace::{BlockId, FunctionId};

/// Arguments of `wpp match`.
#[derive(clap::Args)]
pub struct Args {
    /// A `.wpp` file or a chunked trace from `wpp trace chunk`.
    pub file: PathBuf,
    /// The function: a name, or `#id`.
    #[arg(long)]
    pub function: String,
    /// The path's block ids, e.g. `3,4,7`.
    #[arg(long, value_delimiter = ',', required = true)]
    pub path: Vec<u32>,
    /// The matching scheme: 1 expand, 2 compressed, 3 chunked trace, 4 partitioned (needs the
    /// index from `wpp compress --index`), auto (4 if indexed, 3 for chunked traces, else 2).
    #[arg(long, default_value = "auto")]
    pub scheme: String,
    /// Count all occurrences instead of stopping at the first.
    #[arg(long)]
    pub count: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Serialize)]
struct Output {
    scheme: Scheme,
    function: String,
    path: Vec<u32>,
    seconds: f64,
    streams: Vec<StreamMatch>,
}

fn resolve(name: &str, lookup: impl Fn(&str) -> Option<FunctionId>) -> anyhow::Result<FunctionId> {
    if let Some(id) = name.strip_prefix('#') {
        return Ok(FunctionId(
            id.parse()
                .with_context(|| format!("bad function id `{name}`"))?,
        ));
    }
    lookup(name).with_context(|| format!("no function named `{name}`"))
}

fn is_chunked(path: &Path) -> anyhow::Result<bool> {
    let mut magic = [0u8; 4];
    let mut f = File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let n = f.read(&mut magic)?;
    Ok(n == 4 && &magic == b"WPPC")
}

/// Runs `wpp match`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let mode = if args.count { Mode::Count } else { Mode::First };
    let path: Vec<BlockId> = args.path.iter().map(|&b| BlockId(b)).collect();
    let t0 = Instant::now();
    let (scheme, streams) = if is_chunked(&args.file)? {
        if !matches!(args.scheme.as_str(), "3" | "auto") {
            anyhow::bail!(
                "{} is a chunked trace: only scheme 3 applies",
                args.file.display()
            );
        }
        let f = File::open(&args.file)?;
        let mut trace = ChunkedTrace::open(BufReader::new(f))
            .with_context(|| format!("reading {}", args.file.display()))?;
        let names = trace.functions.clone();
        let function = resolve(&args.function, |n| {
            names
                .iter()
                .position(|x| x == n)
                .map(|i| FunctionId(i as u32))
        })?;
        let q = PathQuery { function, path };
        (Scheme::Chunked, chunked::run(&mut trace, &q, mode)?.0)
    } else {
        let wpp = WppFile::read(&args.file)
            .with_context(|| format!("reading {}", args.file.display()))?;
        let function = resolve(&args.function, |n| wpp.program.find(n))?;
        let q = PathQuery { function, path };
        let index = wpp
            .extra
            .iter()
            .find(|s| s.tag == SECTION_TAG)
            .map(|s| {
                let index = PartitionIndex::from_bytes(&s.data, 0)?;
                index.validate(&wpp.grammar)?;
                Ok::<_, wpp_query::QueryError>(index)
            })
            .transpose()
            .with_context(|| format!("reading the scheme 4 index of {}", args.file.display()))?;
        let scheme = match (args.scheme.as_str(), &index) {
            ("1", _) => Scheme::Expand,
            ("2", _) | ("auto", None) => Scheme::Compressed,
            ("4", Some(_)) | ("auto", Some(_)) => Scheme::Partitioned,
            ("4", None) => anyhow::bail!(
                "{} has no scheme 4 index; rebuild it with `wpp compress --index`",
                args.file.display()
            ),
            ("3", _) => anyhow::bail!("scheme 3 needs a chunked trace (`wpp trace chunk`)"),
            (s, _) => anyhow::bail!("unknown scheme `{s}` (expected 1, 2, 3, 4 or auto)"),
        };
        let g = &wpp.grammar;
        let streams = match scheme {
            Scheme::Expand => scheme1::run(g, &wpp.alphabet, &q, mode)?,
            Scheme::Partitioned => {
                let index = index.expect("scheme 4 is chosen only with an index");
                partition::run(g, &wpp.alphabet, &index, &q, mode)?.0
            }
            _ => compressed::run(g, &wpp.alphabet, &q, mode)?,
        };
        (scheme, streams)
    };
    let out = Output {
        scheme,
        function: args.function.clone(),
        path: args.path.clone(),
        seconds: t0.elapsed().as_secs_f64(),
        streams,
    };
    if args.json {
        return crate::util::print_json(&out);
    }
    Ok(print_text(&out, mode)?)
}

fn print_text(out: &Output, mode: Mode) -> std::io::Result<()> {
    let mut w = std::io::stdout().lock();
    let found: Vec<&StreamMatch> = out.streams.iter().filter(|s| s.first.is_some()).collect();
    if found.is_empty() {
        writeln!(
            w,
            "no occurrence of {:?} in {} ({:?})",
            out.path, out.function, out.scheme
        )?;
        return Ok(());
    }
    for s in found {
        match mode {
            Mode::First => writeln!(
                w,
                "thread {}: first occurrence ends at event {}",
                s.thread,
                s.first.unwrap_or(0)
            )?,
            Mode::Count => writeln!(
                w,
                "thread {}: {} occurrences, the first ending at event {}",
                s.thread,
                s.count.unwrap_or(0),
                s.first.unwrap_or(0)
            )?,
        }
    }
    eprintln!("{:?} in {:.3} s", out.scheme, out.seconds);
    Ok(())
}
