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
use wpp_query::matching::partition;
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
    /// The path's block ids, e.g. `3,4,7`. Repeat to match several paths of the function at
    /// once (schemes 1 and 3 then decompress once for all of them).
    #[arg(long = "path", required = true, value_parser = parse_path)]
    pub paths: Vec<BlockPath>,
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

/// A path given on the command line.
#[derive(Clone, Debug)]
pub struct BlockPath(Vec<u32>);

fn parse_path(s: &str) -> Result<BlockPath, String> {
    s.split(',')
        .map(|b| {
            b.trim()
                .parse::<u32>()
                .map_err(|_| format!("bad block id `{b}` in `{s}`"))
        })
        .collect::<Result<Vec<_>, _>>()
        .map(BlockPath)
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
    let mut f = File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let n = f.read(&mut magic)?;
    Ok(n == 4 && &magic == b"WPPC")
}

/// Runs `wpp match`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let mode = if args.count { Mode::Count } else { Mode::First };
    let t0 = Instant::now();
    let (scheme, answers) = if is_chunked(&args.file)? {
        match_chunked(&args, mode)?
    } else {
        match_wpp(&args, mode)?
    };
    let seconds = t0.elapsed().as_secs_f64();
    let outs: Vec<Output> = args
        .paths
        .iter()
        .zip(answers)
        .map(|(p, streams)| Output {
            scheme,
            function: args.function.clone(),
            path: p.0.clone(),
            seconds,
            streams,
        })
        .collect();
    if args.json {
        return match &outs[..] {
            [one] => crate::util::print_json(one),
            all => crate::util::print_json(&all),
        };
    }
    for out in &outs {
        print_text(out, mode)?;
    }
    Ok(())
}

fn queries(args: &Args, function: FunctionId) -> Vec<PathQuery> {
    args.paths
        .iter()
        .map(|p| PathQuery {
            function,
            path: p.0.iter().map(|&b| BlockId(b)).collect(),
        })
        .collect()
}

/// Scheme 3 on a chunked trace.
fn match_chunked(args: &Args, mode: Mode) -> anyhow::Result<(Scheme, Vec<Vec<StreamMatch>>)> {
    if !matches!(args.scheme.as_str(), "3" | "auto") {
        anyhow::bail!(
            "{} is a chunked trace: only scheme 3 applies",
            args.file.display()
        );
    }
    let f = File::open(&args.file)?;
    let mut trace = ChunkedTrace::open(BufReader::new(f))
        .with_context(|| format!("cannot read {}", args.file.display()))?;
    let function = resolve(&args.function, |n| trace.function(n))?;
    let qs = queries(args, function);
    let (answers, _) = chunked::run_many(&mut trace, &qs, mode)
        .with_context(|| format!("cannot read {}", args.file.display()))?;
    Ok((Scheme::Chunked, answers))
}

/// Schemes 1, 2 and 4 on a `.wpp` file.
fn match_wpp(args: &Args, mode: Mode) -> anyhow::Result<(Scheme, Vec<Vec<StreamMatch>>)> {
    let wpp = WppFile::read(&args.file)
        .with_context(|| format!("cannot read {}", args.file.display()))?;
    let function = resolve(&args.function, |n| wpp.program.find(n))?;
    let qs = queries(args, function);
    let index = partition::find_index(&wpp.extra, &wpp.grammar)
        .with_context(|| format!("cannot read the scheme 4 index of {}", args.file.display()))?;
    let (g, alphabet) = (&wpp.grammar, &wpp.alphabet);
    match (args.scheme.as_str(), index) {
        ("1", _) => Ok((Scheme::Expand, scheme1::run_many(g, alphabet, &qs, mode)?)),
        ("2", _) | ("auto", None) => {
            let answers = qs
                .iter()
                .map(|q| compressed::run(g, alphabet, q, mode))
                .collect::<Result<_, _>>()?;
            Ok((Scheme::Compressed, answers))
        }
        ("4" | "auto", Some(index)) => {
            let answers = qs
                .iter()
                .map(|q| partition::run(g, alphabet, &index, q, mode).map(|r| r.0))
                .collect::<Result<_, _>>()?;
            Ok((Scheme::Partitioned, answers))
        }
        ("4", None) => anyhow::bail!(
            "{} has no scheme 4 index; rebuild it with `wpp compress --index`",
            args.file.display()
        ),
        ("3", _) => anyhow::bail!("scheme 3 needs a chunked trace (`wpp trace chunk`)"),
        (s, _) => anyhow::bail!("unknown scheme `{s}` (expected 1, 2, 3, 4 or auto)"),
    }
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
