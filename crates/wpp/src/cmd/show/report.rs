//! `wpp report`: one self-contained HTML page about a recording or profile.

use std::path::PathBuf;

use anyhow::Context;
use wpp_show::report::{report_html, ReportInput};

/// Arguments of `wpp report`.
#[derive(clap::Args)]
pub struct Args {
    /// A recording (`.wpp`, trace) or a bl/ppp profile.
    pub file: PathBuf,
    /// Directory to write `index.html` into (created if missing).
    #[arg(short, long)]
    pub output: PathBuf,
}

/// Runs `wpp report`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let l = super::load(&args.file, "report")?;
    super::warn_edited_sources(&args.file, &l.map);
    let name = args.file.display().to_string();
    let flame_svg = if l.run.has_stacks && l.run.samples > 0 {
        let mut svg = Vec::new();
        wpp_show::stacks::write_svg(&l.db, &l.map, &l.run, &name, &mut svg)?;
        Some(svg)
    } else {
        None
    };
    let input = ReportInput {
        title: &name,
        stats: vec![
            ("file".into(), name.clone()),
            ("kind".into(), l.kind.clone()),
        ],
        flame_svg,
    };
    let html = report_html(&l.db, &l.map, &l.run, &input)?;
    std::fs::create_dir_all(&args.output)
        .with_context(|| format!("cannot create {}", args.output.display()))?;
    let page = args.output.join("index.html");
    std::fs::write(&page, html).with_context(|| format!("cannot write {}", page.display()))?;
    eprintln!("wpp report: wrote {}", page.display());
    Ok(())
}
