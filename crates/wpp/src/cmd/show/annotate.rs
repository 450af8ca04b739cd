//! `wpp annotate`: every source line with its execution count (and the hottest paths through
//! it), or an lcov tracefile.

use std::path::PathBuf;

/// Output formats of `wpp annotate`.
#[derive(Clone, Copy, clap::ValueEnum)]
pub enum Format {
    /// `LINE|COUNT|SOURCE`, laid out like `llvm-cov show` (counts by block, see the command's
    /// help).
    Text,
    /// An lcov tracefile (`genhtml`, IDE coverage plugins).
    Lcov,
}

/// Arguments of `wpp annotate`.
#[derive(clap::Args)]
pub struct Args {
    /// A recording (`.wpp`, trace) or a bl/ppp profile.
    pub file: PathBuf,
    /// Only this function's lines.
    #[arg(long)]
    pub function: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// Write here instead of standard output.
    #[arg(short, long)]
    pub output: Option<PathBuf>,
}

/// Runs `wpp annotate`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let l = super::load(&args.file, "annotate")?;
    let only = match &args.function {
        Some(name) => Some(super::function_index(&args.file, &l.db, name)?),
        None => None,
    };
    super::warn_edited_sources(&args.file, &l.map);
    let mut out = crate::output::Output::create(args.output.as_deref())?;
    match args.format {
        Format::Text => wpp_show::annotate::write_annotated(&l.db, &l.map, &l.run, only, &mut out)?,
        Format::Lcov => {
            anyhow::ensure!(only.is_none(), "--function applies to the text format only");
            wpp_show::annotate::write_lcov(&l.db, &l.map, &l.run, &mut out)?
        }
    }
    Ok(out.finish()?)
}
