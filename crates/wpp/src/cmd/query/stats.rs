//! `wpp stats`: a `.wpp` grammar's statistics, after Larus Table 1.
//!
//! | field | meaning |
//! |---|---|
//! | `events` | events the grammar expands to, all threads (Table 1's trace length): entries, exits, blocks and paths, not thread switches (`T`); the sum of `wpp functions`' `events` column |
//! | `trace_events` | events of the source trace as recorded, its thread switches included (a trace that `wpp decompress` writes has one `T` per thread after the first instead) |
//! | `distinct_terminals` | distinct events (Table 1's "Num Acyclic Paths" for path traces) |
//! | `rules` | rules, one start rule per thread included |
//! | `grammar_symbols` | symbols on all right-hand sides |
//! | `trace_bytes` | size of the binary trace these events take (see below) |
//! | `compression_ratio` | `trace_bytes / file_bytes` (Table 1's "Trace/WPP") |
//! | `rules_per_terminal` | `rules / distinct_terminals` (Table 1's "Rules/Path") |
//!
//! plus the algorithm that built the grammar, the thread count, the `.wpp` file's size, its
//! extra sections (e.g. query indices) and its segments (`wpp_grammar::segment`): a file cut
//! into several lists each one's trace events, threads, rules, grammar symbols and bytes; the
//! rest of the statistics are of the joined grammar every query reads.
//!
//! The original trace may not be at hand, so `trace_bytes` is computed from the grammar: the
//! binary trace that `wpp decompress` would write (threads one after another), i.e. the header
//! with the program database, each event's varint encoding, the `T` switches between threads,
//! a 28-byte header per 64 KiB chunk (format 4, stored plain as `wpp decompress` writes it),
//! and the end marker. Encoded lengths are summed per rule,
//! bottom-up, so this costs O(grammar), not O(trace). Chunk boundaries fall a few bytes past
//! each 64 KiB, so the chunk overhead is exact to within one header; a recording that switched
//! threads more often has a few more bytes of switches.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use serde::Serialize;
use wpp_grammar::file::{read_segments, WppFile};
use wpp_grammar::symbol::SymbolKind;
use wpp_trace::file::binary::{CHUNK_HEADER_LEN, DEFAULT_CHUNK_BYTES};
use wpp_trace::file::{encode_event, to_binary};
use wpp_trace::Event;

use crate::input::{needs_switch, read_wpp, starts_by_thread};

/// Arguments of `wpp stats`.
#[derive(clap::Args)]
pub struct Args {
    /// The `.wpp` file.
    file: PathBuf,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// An extra section of the file.
#[derive(Serialize)]
struct Extra {
    tag: String,
    bytes: usize,
}

/// What `wpp stats` prints (see the module documentation).
#[derive(Serialize)]
struct Stats {
    file: String,
    algorithm: &'static str,
    threads: usize,
    events: u64,
    trace_events: u64,
    distinct_terminals: usize,
    rules: usize,
    grammar_symbols: usize,
    file_bytes: u64,
    trace_bytes: u64,
    compression_ratio: f64,
    rules_per_terminal: f64,
    extra_sections: Vec<Extra>,
    /// Segments of a file cut into several (empty: one segment).
    segments: Vec<Segment>,
}

/// One segment of a segmented file.
#[derive(Serialize)]
struct Segment {
    events: u64,
    threads: u64,
    rules: u64,
    grammar_symbols: u64,
    bytes: u64,
}

/// Encoded length of one event in the binary trace format.
fn encoded_len(e: Event, scratch: &mut Vec<u8>) -> u64 {
    scratch.clear();
    encode_event(scratch, e);
    scratch.len() as u64
}

/// The size of the binary trace `wpp decompress` would write for `wpp`.
fn trace_bytes(wpp: &WppFile) -> anyhow::Result<u64> {
    let mut scratch = Vec::new();
    let terminal: Vec<u64> = wpp
        .alphabet
        .events()
        .iter()
        .map(|&e| encoded_len(e, &mut scratch))
        .collect();
    let g = &wpp.grammar;
    // Rules are bottom-up, so every rule a body refers to is already summed.
    let mut rule = Vec::with_capacity(g.num_rules());
    for r in g.rules() {
        let bytes = g.body(r).iter().fold(0u64, |sum, s| {
            sum.saturating_add(match s.kind() {
                SymbolKind::Terminal(t) => terminal[t.index()],
                SymbolKind::Rule(c) => rule[c.index()],
            })
        });
        rule.push(bytes);
    }
    let mut payload = 0u64;
    for (i, s) in starts_by_thread(wpp).iter().enumerate() {
        if needs_switch(i, s) {
            payload = payload.saturating_add(encoded_len(Event::Thread(s.thread), &mut scratch));
        }
        payload = payload.saturating_add(rule[s.rule.index()]);
    }
    let chunks = payload.div_ceil(DEFAULT_CHUNK_BYTES as u64);
    // A trace without events: the header (preamble, program database) and the end marker.
    let empty = to_binary(&wpp.program, &[]).context("cannot encode the program database")?;
    Ok((empty.len() as u64)
        .saturating_add(payload)
        .saturating_add(chunks.saturating_mul(CHUNK_HEADER_LEN as u64)))
}

/// Computes the statistics of the file at `path`.
fn stats(path: &std::path::Path) -> anyhow::Result<Stats> {
    let wpp = read_wpp(path, "stats")?;
    let file_bytes = std::fs::metadata(path)
        .with_context(|| format!("cannot read {}", path.display()))?
        .len();
    let g = &wpp.grammar;
    let events = g
        .starts()
        .iter()
        .fold(0u64, |n, s| n.saturating_add(g.expanded_len(s.rule)));
    let trace_bytes = trace_bytes(&wpp)?;
    let terminals = wpp.alphabet.len();
    Ok(Stats {
        file: path.display().to_string(),
        algorithm: wpp.algorithm.as_str(),
        threads: g.starts().len(),
        events,
        trace_events: wpp.events,
        distinct_terminals: terminals,
        rules: g.num_rules(),
        grammar_symbols: g.num_symbols(),
        file_bytes,
        trace_bytes,
        compression_ratio: trace_bytes as f64 / file_bytes as f64,
        rules_per_terminal: g.num_rules() as f64 / terminals.max(1) as f64,
        extra_sections: wpp
            .extra
            .iter()
            .map(|s| Extra {
                tag: s.tag.escape_ascii().to_string(),
                bytes: s.data.len(),
            })
            .collect(),
        segments: read_segments(path)
            .with_context(|| format!("cannot read {}", path.display()))?
            .into_iter()
            .map(|s| Segment {
                events: s.events,
                threads: s.threads,
                rules: s.rules,
                grammar_symbols: s.symbols,
                bytes: s.bytes,
            })
            .collect(),
    })
}

/// Runs `wpp stats`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let s = stats(&args.file)?;
    if args.json {
        return crate::util::print_json(&s);
    }
    let extras: Vec<String> = s
        .extra_sections
        .iter()
        .map(|e| format!("{} ({} bytes)", e.tag, e.bytes))
        .collect();
    let lines = [
        ("file", s.file.clone()),
        ("algorithm", s.algorithm.to_owned()),
        ("threads", s.threads.to_string()),
        ("events (F, E, B, P)", s.events.to_string()),
        (
            "trace events (as recorded, + T)",
            s.trace_events.to_string(),
        ),
        ("distinct terminals", s.distinct_terminals.to_string()),
        ("rules", s.rules.to_string()),
        ("grammar symbols", s.grammar_symbols.to_string()),
        ("trace bytes (binary)", s.trace_bytes.to_string()),
        (".wpp bytes", s.file_bytes.to_string()),
        ("compression ratio", format!("{:.1}", s.compression_ratio)),
        ("rules per terminal", format!("{:.2}", s.rules_per_terminal)),
        ("extra sections", extras_text(&extras)),
        ("segments", s.segments.len().max(1).to_string()),
    ];
    let mut out = std::io::stdout().lock();
    for (k, v) in lines {
        // A label as long as the column still gets a space before its value.
        writeln!(out, "{k:<31} {v}")?;
    }
    for (i, g) in s.segments.iter().enumerate() {
        writeln!(
            out,
            "  segment {i:<19}{} trace events, {}, {} rules, {} symbols, {} bytes",
            g.events,
            crate::util::threads(g.threads as usize),
            g.rules,
            g.grammar_symbols,
            g.bytes
        )?;
    }
    Ok(out.flush()?)
}

/// The extra sections, or "none".
fn extras_text(extras: &[String]) -> String {
    if extras.is_empty() {
        "none".to_owned()
    } else {
        extras.join(", ")
    }
}
