//! One self-contained HTML page about a recording or profile: statistics, the flame graph of
//! the run, the hot paths (or lines) linked to the annotated source, the function table, the
//! path table of a profile, and the annotated source itself. Nothing is loaded from elsewhere:
//! the flame graph is embedded as a `data:` image, styles and the one script are inline.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use wpp_trace::{FunctionId, PathId, ProgramDb};

use crate::annotate::{function_calls, function_start, line_counts, LineInfo};
use crate::source::{Loc, SourceMap, NO_FILE};
use crate::walk::Run;
use crate::ShowError;

/// Rows of the hot and path tables.
pub const TOP_ROWS: usize = 25;
/// Rows of the path table of a profile.
pub const PATH_ROWS: usize = 500;

/// What the page shows besides the run itself.
pub struct ReportInput<'a> {
    /// Page title (the file's name).
    pub title: &'a str,
    /// Extra statistics rows (kind, mode, grammar size, …).
    pub stats: Vec<(String, String)>,
    /// The flame graph, when the run has stacks.
    pub flame_svg: Option<Vec<u8>>,
}

/// Escapes text for HTML.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Standard base64 (RFC 4648 §4) for the `data:` URI.
fn base64(bytes: &[u8]) -> String {
    const ABC: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ABC[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn anchor(loc: Loc) -> String {
    format!("L{}-{}", loc.file, loc.line)
}

fn loc_text(map: &SourceMap, loc: Loc) -> String {
    match (loc.file, loc.line) {
        (NO_FILE, 0) => "?".into(),
        (NO_FILE, l) => format!("?:{l}"),
        (f, 0) => map.file_name(f).to_owned(),
        (f, l) => format!("{}:{l}", map.file_name(f)),
    }
}

const STYLE: &str = "body{font-family:sans-serif;margin:1.5em;max-width:1400px}\
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:2px 8px;\
text-align:left}td.n{text-align:right;font-family:monospace}pre{margin:0}\
.src td{border:none;padding:0 6px;font-family:monospace;white-space:pre}\
.src tr.hit{background:#e6ffe6}.src tr.miss{background:#ffe6e6}.src tr:target{outline:2px solid #f80}\
img.flame{width:100%;border:1px solid #ccc}";

/// Builds the page.
pub fn report_html(
    db: &ProgramDb,
    map: &SourceMap,
    run: &Run,
    input: &ReportInput<'_>,
) -> Result<String, ShowError> {
    let lines = line_counts(db, map, run, None)?;
    let mut h = String::new();
    let title = escape(input.title);
    let _ = write!(
        h,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>wpp report: \
         {title}</title><style>{STYLE}</style></head><body><h1>wpp report: {title}</h1>\
         <nav><a href=\"#stats\">statistics</a> · <a href=\"#flame\">flame graph</a> · \
         <a href=\"#hot\">hot paths</a> · <a href=\"#functions\">functions</a> · \
         <a href=\"#paths\">paths</a> · <a href=\"#source\">source</a></nav>"
    );
    stats_section(&mut h, db, map, run, input);
    flame_section(&mut h, input);
    hot_section(&mut h, db, map, run, &lines)?;
    functions_section(&mut h, db, map, run);
    paths_section(&mut h, db, map, run)?;
    source_section(&mut h, db, map, &lines);
    h.push_str(
        "<script>document.body.dataset.loaded = document.querySelectorAll('section').length;\
         </script></body></html>\n",
    );
    Ok(h)
}

fn stats_section(h: &mut String, db: &ProgramDb, map: &SourceMap, run: &Run, input: &ReportInput) {
    let executed = run
        .block_counts
        .iter()
        .filter(|c| c.iter().any(|&n| n > 0))
        .count();
    let mut rows = input.stats.clone();
    rows.extend([
        ("events".into(), run.events.to_string()),
        (
            "block/path events (samples)".into(),
            run.samples.to_string(),
        ),
        ("threads".into(), run.threads.to_string()),
        (
            "functions executed".into(),
            format!("{executed} of {}", db.functions.len()),
        ),
        ("distinct paths".into(), run.path_counts.len().to_string()),
        (
            "calling contexts".into(),
            (run.contexts.len() - 1).to_string(),
        ),
        ("source files".into(), map.files.len().to_string()),
    ]);
    h.push_str("<section id=\"stats\"><h2>Statistics</h2><table>");
    for (k, v) in rows {
        let _ = write!(
            h,
            "<tr><th>{}</th><td class=\"n\">{}</td></tr>",
            escape(&k),
            escape(&v)
        );
    }
    h.push_str("</table></section>");
}

fn flame_section(h: &mut String, input: &ReportInput) {
    h.push_str("<section id=\"flame\"><h2>Flame graph of the whole run</h2>");
    match &input.flame_svg {
        Some(svg) => {
            let _ = write!(
                h,
                "<p>Every block or path event of the run, by call stack (frames \
                 <code>function:line</code>).</p><img class=\"flame\" alt=\"flame graph\" \
                 src=\"data:image/svg+xml;base64,{}\">",
                base64(svg)
            );
        }
        None => h.push_str("<p>A profile has no call stacks: see the path table.</p>"),
    }
    h.push_str("</section>");
}

/// The hottest paths (path recordings, profiles) or lines (block recordings), each linked to
/// its first source line.
fn hot_section(
    h: &mut String,
    db: &ProgramDb,
    map: &SourceMap,
    run: &Run,
    lines: &BTreeMap<Loc, LineInfo>,
) -> Result<(), ShowError> {
    h.push_str(
        "<section id=\"hot\"><h2>Hot paths</h2><table><tr><th>count</th><th>where</th></tr>",
    );
    if run.path_counts.is_empty() {
        let mut hot: Vec<_> = lines.iter().filter(|(_, i)| i.count > 0).collect();
        hot.sort_by_key(|(_, info)| std::cmp::Reverse(info.count));
        for (loc, info) in hot.into_iter().take(TOP_ROWS) {
            let _ = write!(
                h,
                "<tr><td class=\"n\">{}</td><td><a href=\"#{}\">line {}</a></td></tr>",
                info.count,
                anchor(*loc),
                escape(&loc_text(map, *loc))
            );
        }
    } else {
        for (f, p, n, locs) in top_paths(db, map, run, TOP_ROWS)? {
            let link = locs.first().map_or(String::new(), |l| {
                format!(
                    " <a href=\"#{}\">{}</a>",
                    anchor(*l),
                    escape(&loc_text(map, *l))
                )
            });
            let _ = write!(
                h,
                "<tr><td class=\"n\">{n}</td><td>path {p} of {}{link} (lines {})</td></tr>",
                escape(&db.name(FunctionId(f))),
                line_list(&locs)
            );
        }
    }
    h.push_str("</table></section>");
    Ok(())
}

fn line_list(locs: &[Loc]) -> String {
    let v: Vec<String> = locs.iter().map(|l| l.line.to_string()).collect();
    v.join(", ")
}

/// A path `(function, path id, count, the lines it runs)`.
type HotPath = (u32, u64, u64, Vec<Loc>);

/// The `n` most executed paths with the lines they run, in order of first execution.
fn top_paths(
    db: &ProgramDb,
    map: &SourceMap,
    run: &Run,
    n: usize,
) -> Result<Vec<HotPath>, ShowError> {
    let mut paths: Vec<_> = run
        .path_counts
        .iter()
        .map(|(&(f, p), &c)| (c, f, p))
        .collect();
    paths.sort_unstable_by(|a, b| b.cmp(a));
    let mut decoder = wpp_paths::trace::PathDecoder::new(db).ok();
    let mut out = Vec::new();
    for (c, f, p) in paths.into_iter().take(n) {
        let mut locs = Vec::new();
        if let Some(d) = decoder
            .as_mut()
            .filter(|_| (f as usize) < db.functions.len())
        {
            for b in d.blocks(FunctionId(f), PathId(p), 0)? {
                let l = map.block_loc(f, b.0);
                if l.line > 0 && locs.last() != Some(&l) {
                    locs.push(l);
                }
            }
        }
        out.push((f, p, c, locs));
    }
    Ok(out)
}

/// Per function: calls, self events, and inclusive events (each activation counted once even
/// under recursion: a context adds to its function only when no ancestor is the same function).
fn function_costs(run: &Run) -> (Vec<u64>, Vec<u64>) {
    let n = run.block_counts.len();
    let (mut own, mut inc) = (vec![0u64; n], vec![0u64; n]);
    let inclusive = run.inclusive();
    let mut children: Vec<Vec<u32>> = vec![Vec::new(); run.contexts.len()];
    for (i, c) in run.contexts.iter().enumerate().skip(1) {
        children[c.parent as usize].push(i as u32);
    }
    let mut open = vec![0u32; n];
    // Depth-first with an explicit stack: (context, leaving?).
    let mut stack = vec![(0u32, false)];
    while let Some((i, leaving)) = stack.pop() {
        let c = &run.contexts[i as usize];
        let f = c.function as usize;
        if leaving {
            if f < n {
                open[f] -= 1;
            }
            continue;
        }
        if f < n {
            own[f] += c.counts.iter().sum::<u64>();
            if open[f] == 0 {
                inc[f] += inclusive[i as usize];
            }
            open[f] += 1;
        }
        stack.push((i, true));
        stack.extend(children[i as usize].iter().map(|&k| (k, false)));
    }
    (own, inc)
}

fn functions_section(h: &mut String, db: &ProgramDb, map: &SourceMap, run: &Run) {
    let calls = function_calls(db, run);
    let (own, inc) = if run.has_stacks {
        function_costs(run)
    } else {
        let blocks = run.block_counts.iter().map(|c| c.iter().sum()).collect();
        (blocks, Vec::new())
    };
    let mut order: Vec<usize> = (0..db.functions.len())
        .filter(|&f| calls[f] > 0 || own[f] > 0)
        .collect();
    order.sort_by_key(|&f| std::cmp::Reverse((inc.get(f).copied().unwrap_or(own[f]), own[f])));
    let unit = if run.has_stacks {
        "events"
    } else {
        "block executions"
    };
    let _ =
        write!(
        h,
        "<section id=\"functions\"><h2>Functions</h2><table><tr><th>function</th><th>source</th>\
         <th>calls</th><th>self {unit}</th>{}</tr>",
        if run.has_stacks { "<th>inclusive events</th>" } else { "" }
    );
    for f in order {
        let start = function_start(db, map, f as u32);
        let _ = write!(
            h,
            "<tr><td>{}</td><td><a href=\"#{}\">{}</a></td><td class=\"n\">{}</td>\
             <td class=\"n\">{}</td>{}</tr>",
            escape(&db.functions[f].name),
            anchor(start),
            escape(&loc_text(map, start)),
            calls[f],
            own[f],
            inc.get(f)
                .map_or(String::new(), |n| format!("<td class=\"n\">{n}</td>"))
        );
    }
    h.push_str("</table></section>");
}

fn paths_section(
    h: &mut String,
    db: &ProgramDb,
    map: &SourceMap,
    run: &Run,
) -> Result<(), ShowError> {
    h.push_str("<section id=\"paths\"><h2>Paths</h2>");
    if run.path_counts.is_empty() {
        h.push_str("<p>A block recording has no paths.</p></section>");
        return Ok(());
    }
    let _ = write!(
        h,
        "<p>{} distinct paths; the {} most executed:</p><table><tr><th>function</th>\
         <th>path</th><th>count</th><th>lines</th></tr>",
        run.path_counts.len(),
        PATH_ROWS.min(run.path_counts.len())
    );
    for (f, p, n, locs) in top_paths(db, map, run, PATH_ROWS)? {
        let first = locs
            .first()
            .map_or(String::new(), |l| format!("<a href=\"#{}\">", anchor(*l)));
        let close = if first.is_empty() { "" } else { "</a>" };
        let _ = write!(
            h,
            "<tr><td>{}</td><td class=\"n\">{p}</td><td class=\"n\">{n}</td><td>{first}{}{close}</td></tr>",
            escape(&db.name(FunctionId(f))),
            line_list(&locs)
        );
    }
    h.push_str("</table></section>");
    Ok(())
}

fn source_section(
    h: &mut String,
    db: &ProgramDb,
    map: &SourceMap,
    lines: &BTreeMap<Loc, LineInfo>,
) {
    h.push_str("<section id=\"source\"><h2>Annotated source</h2>");
    let mut files: BTreeMap<u32, BTreeMap<u32, &LineInfo>> = BTreeMap::new();
    for (loc, info) in lines {
        files.entry(loc.file).or_default().insert(loc.line, info);
    }
    for (file, counted) in files {
        let name = if file == NO_FILE {
            "(unknown file)"
        } else {
            map.file_name(file)
        };
        let _ = write!(h, "<h3>{}</h3><table class=\"src\">", escape(name));
        let text = std::fs::read_to_string(name).unwrap_or_default();
        let source: Vec<&str> = text.lines().collect();
        let last = counted
            .keys()
            .next_back()
            .copied()
            .unwrap_or(0)
            .max(source.len() as u32);
        for line in 1..=last {
            let code = escape(source.get(line as usize - 1).copied().unwrap_or(""));
            let id = anchor(Loc { file, line });
            match counted.get(&line) {
                Some(info) => {
                    let class = if info.count > 0 { "hit" } else { "miss" };
                    let paths: Vec<String> = info
                        .paths
                        .iter()
                        .map(|&(f, p, n)| format!("path {p} of {} ×{n}", db.name(FunctionId(f))))
                        .collect();
                    let _ = write!(
                        h,
                        "<tr id=\"{id}\" class=\"{class}\" title=\"{}\"><td class=\"n\">{line}</td>\
                         <td class=\"n\">{}</td><td>{code}</td></tr>",
                        escape(&paths.join("; ")),
                        info.count
                    );
                }
                None => {
                    let _ = write!(
                        h,
                        "<tr id=\"{id}\"><td class=\"n\">{line}</td><td></td><td>{code}</td></tr>"
                    );
                }
            }
        }
        h.push_str("</table>");
    }
    h.push_str("</section>");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_rfc_4648_vectors() {
        let cases = [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ];
        for (plain, coded) in cases {
            assert_eq!(base64(plain.as_bytes()), coded, "{plain:?}");
        }
    }

    #[test]
    fn escape_neutralises_markup() {
        assert_eq!(escape("a<b>&\"'"), "a&lt;b&gt;&amp;&quot;&#39;");
    }
}
