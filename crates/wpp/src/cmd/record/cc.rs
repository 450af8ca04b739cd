//! `wpp cc` / `wpp c++` (and the installable names `wpp-cc` / `wpp-c++`): compile and link
//! C/C++ through clang-22 with wpp instrumentation (see `wpp_instrument::driver` for what each
//! kind of invocation does). Needs the `llvm` feature.
//!
//! The arguments are clang's, as they are: `CC=wpp-cc CXX=wpp-c++ make`. wpp's own options are
//! `--wpp-NAME=VALUE` anywhere on the line, or `WPP_NAME` environment variables (the option
//! wins): `--wpp-mode` / `WPP_MODE`, `--wpp-interesting` / `WPP_INTERESTING`,
//! `--wpp-exercised` / `WPP_EXERCISED` (mode `ewpp`: the report of an `ewpp-filter` run, or
//! of `wpp deps filter -o`),
//! `--wpp-counters` / `WPP_COUNTERS`, `--wpp-keep` / `WPP_KEEP`, `--wpp-verbose` /
//! `WPP_VERBOSE`, `--wpp-no-elide` / `WPP_ELIDE=0` (`trace-blocks`: a probe per block, each
//! block's event recorded as it runs, instead of one event per path that readers decode to
//! blocks). The older form `wpp cc --mode M [--interesting P] … -- CLANG ARGS` still
//! works. A symlink to `wpp` named `wpp-cc` (or `wpp-c++`) behaves as `wpp cc` (`wpp c++`):
//! `ln -s "$(command -v wpp)" /usr/local/bin/wpp-cc`.

use super::instrument::{Counters, Mode};
use std::path::PathBuf;

/// wpp's own options of a `wpp cc` command line.
#[derive(Debug, Default, PartialEq)]
pub struct CcOptions {
    /// `--wpp-mode`.
    pub mode: Option<String>,
    /// `--wpp-interesting`.
    pub interesting: Option<PathBuf>,
    /// `--wpp-exercised`.
    pub exercised: Option<PathBuf>,
    /// `--wpp-counters`.
    pub counters: Option<String>,
    /// `--wpp-keep`.
    pub keep: Option<PathBuf>,
    /// `--wpp-verbose`.
    pub verbose: bool,
    /// `--wpp-no-elide`.
    pub no_elide: bool,
    /// `--wpp-cxx` (or invoked as `c++`).
    pub cxx: bool,
}

/// Options of the older `wpp cc --mode M … -- ARGS` form, with their `--wpp-` names.
const LEGACY: &[(&str, bool)] = &[
    ("--mode", true),
    ("--interesting", true),
    ("--exercised", true),
    ("--counters", true),
    ("--keep", true),
    ("--cxx", false),
    ("--verbose", false),
    ("--no-elide", false),
];

/// Splits a `wpp cc` command line into wpp's options and clang's arguments.
pub fn split_args(args: &[String]) -> anyhow::Result<(CcOptions, Vec<String>)> {
    let mut o = CcOptions::default();
    let mut clang = Vec::new();
    let mut rest = args;
    if let Some(dash) = args.iter().position(|a| a == "--") {
        if let Some(wpp) = legacy_options(&args[..dash]) {
            for (k, v) in wpp {
                set(&mut o, &k, v)?;
            }
            rest = &args[dash + 1..];
        }
    }
    for a in rest {
        match a.strip_prefix("--wpp-") {
            Some(kv) => {
                let (k, v) = match kv.split_once('=') {
                    Some((k, v)) => (k, Some(v.to_owned())),
                    None => (kv, None),
                };
                set(&mut o, k, v)?;
            }
            None => clang.push(a.clone()),
        }
    }
    Ok((o, clang))
}

/// The `(name, value)` pairs of a legacy option list before `--`, if it is one.
fn legacy_options(before: &[String]) -> Option<Vec<(String, Option<String>)>> {
    let mut out = Vec::new();
    let mut it = before.iter();
    while let Some(a) = it.next() {
        let (name, inline) = match a.split_once('=') {
            Some((n, v)) => (n, Some(v.to_owned())),
            None => (a.as_str(), None),
        };
        let &(_, takes_value) = LEGACY.iter().find(|(n, _)| *n == name)?;
        let value = match (takes_value, inline) {
            (true, Some(v)) => Some(v),
            (true, None) => Some(it.next()?.clone()),
            (false, None) => None,
            (false, Some(_)) => return None,
        };
        out.push((name[2..].to_owned(), value));
    }
    Some(out)
}

fn set(o: &mut CcOptions, key: &str, value: Option<String>) -> anyhow::Result<()> {
    let need = |v: Option<String>| {
        v.ok_or_else(|| anyhow::anyhow!("--wpp-{key} needs a value (--wpp-{key}=VALUE)"))
    };
    match key {
        "mode" => o.mode = Some(need(value)?),
        "interesting" => o.interesting = Some(need(value)?.into()),
        "exercised" => o.exercised = Some(need(value)?.into()),
        "counters" => o.counters = Some(need(value)?),
        "keep" => o.keep = Some(need(value)?.into()),
        "verbose" => o.verbose = true,
        "cxx" => o.cxx = true,
        "no-elide" => o.no_elide = true,
        _ => anyhow::bail!(
            "unknown wpp option --wpp-{key} (known: --wpp-mode=, --wpp-interesting=, \
             --wpp-exercised=, --wpp-counters=, --wpp-keep=, --wpp-verbose, --wpp-cxx, \
             --wpp-no-elide)"
        ),
    }
    Ok(())
}

/// Fills options not given on the command line from `WPP_*` environment variables.
pub fn from_env(mut o: CcOptions) -> CcOptions {
    let var = |n: &str| std::env::var(n).ok().filter(|v| !v.is_empty());
    o.mode = o.mode.or_else(|| var("WPP_MODE"));
    o.interesting = o
        .interesting
        .or_else(|| var("WPP_INTERESTING").map(Into::into));
    o.exercised = o.exercised.or_else(|| var("WPP_EXERCISED").map(Into::into));
    o.counters = o.counters.or_else(|| var("WPP_COUNTERS"));
    o.keep = o.keep.or_else(|| var("WPP_KEEP").map(Into::into));
    o.verbose |= var("WPP_VERBOSE").is_some();
    o.no_elide |= var("WPP_ELIDE").is_some_and(|v| v == "0");
    o
}

fn value_enum<T: clap::ValueEnum>(what: &str, s: &str) -> anyhow::Result<T> {
    T::from_str(s, true).map_err(|_| {
        let names: Vec<String> = T::value_variants()
            .iter()
            .filter_map(|v| Some(v.to_possible_value()?.get_name().to_owned()))
            .collect();
        anyhow::anyhow!("unknown {what} {s:?} (one of: {})", names.join(", "))
    })
}

/// A `wpp cc` command line, read: wpp's settings and clang's arguments.
// Without LLVM only the checking of the command line is used.
#[cfg_attr(not(feature = "llvm"), allow(dead_code))]
struct Parsed {
    mode: Mode,
    counters: Counters,
    options: CcOptions,
    clang_args: Vec<String>,
}

fn parse(args: &[String]) -> anyhow::Result<Parsed> {
    let (o, clang_args) = split_args(args)?;
    let (mode, counters, options) = settings(o)?;
    Ok(Parsed {
        mode,
        counters,
        options,
        clang_args,
    })
}

/// wpp's options from the command line and then the environment, with the mode and the
/// counters checked (`wpp cargo` checks them before cargo builds anything).
pub fn settings(o: CcOptions) -> anyhow::Result<(Mode, Counters, CcOptions)> {
    let options = from_env(o);
    let mode = value_enum("mode", options.mode.as_deref().unwrap_or("trace-blocks"))?;
    let counters = value_enum("counters", options.counters.as_deref().unwrap_or("auto"))?;
    Ok((mode, counters, options))
}

/// Runs `wpp cc ARGS…` (`cxx`: `wpp c++`).
#[cfg(feature = "llvm")]
pub fn run(args: &[String], cxx: bool) -> anyhow::Result<()> {
    let Parsed {
        mode,
        counters,
        options: o,
        clang_args,
    } = parse(args)?;
    let mut opts = wpp_instrument::Options::new(mode.to_rt());
    opts.atomic_counters = counters.atomic();
    opts.elide = !o.no_elide;
    match (&o.interesting, mode) {
        (Some(p), Mode::Ppp) => super::instrument::read_interesting(p, &mut opts)?,
        (None, Mode::Ppp) => anyhow::bail!(
            "mode ppp needs --wpp-interesting=PROFILE or WPP_INTERESTING (a `bl` profile: every \
             path that ran in it is interesting, as in PPP §5)"
        ),
        (Some(_), _) => anyhow::bail!("--wpp-interesting is only used by mode ppp"),
        (None, _) => {}
    }
    match (&o.exercised, mode) {
        (Some(p), Mode::Ewpp) => opts.exercised = Some(super::instrument::read_exercised(p)?),
        (Some(_), _) => anyhow::bail!("--wpp-exercised is only used by mode ewpp"),
        (None, _) => {}
    }
    let mut d = wpp_instrument::driver::Driver::from_env(opts);
    d.cxx = cxx || o.cxx;
    d.keep = o.keep;
    d.verbose |= o.verbose;
    d.run(&clang_args)?;
    if clang_args.iter().any(|a| a == "--help" || a == "-help") {
        // After clang's own help (what a build system asking `CC --help` expects).
        println!(
            "\nwpp cc: the options above are clang's; wpp's own (`--wpp-mode=M`, …): `wpp help cc`"
        );
    }
    Ok(())
}

/// Runs `wpp cc` (without LLVM support: checks the command line, then explains how to get it).
#[cfg(not(feature = "llvm"))]
pub fn run(args: &[String], _cxx: bool) -> anyhow::Result<()> {
    let _ = parse(args)?;
    anyhow::bail!("{}", super::instrument::NO_LLVM)
}

/// Which driver a command line asks for: `Some(cxx)` for `wpp-cc`/`wpp-c++` (by the program's
/// name) and `wpp cc`/`wpp c++`, with the index of the first argument of the driver.
pub fn driver_call(argv: &[String]) -> Option<(bool, usize)> {
    let name = std::path::Path::new(argv.first()?)
        .file_name()?
        .to_string_lossy()
        .into_owned();
    match name.as_str() {
        "wpp-cc" | "wpp-clang" => return Some((false, 1)),
        "wpp-c++" | "wpp-cxx" | "wpp-clang++" => return Some((true, 1)),
        _ => {}
    }
    match argv.get(1).map(String::as_str) {
        Some("cc") => Some((false, 2)),
        Some("c++") => Some((true, 2)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn clang_arguments_need_no_separator() {
        let (o, c) = split_args(&s(&["-O2", "--wpp-mode=bl", "x.c", "-o", "x"])).unwrap();
        assert_eq!(o.mode.as_deref(), Some("bl"));
        assert_eq!(c, s(&["-O2", "x.c", "-o", "x"]));
    }

    #[test]
    fn elision_is_turned_off_by_an_option() {
        let (o, c) = split_args(&s(&["--wpp-no-elide", "x.c"])).unwrap();
        assert!(o.no_elide);
        assert_eq!(c, s(&["x.c"]));
        assert!(!split_args(&s(&["x.c"])).unwrap().0.no_elide);
        let (o, c) =
            split_args(&s(&["--mode", "trace-blocks", "--no-elide", "--", "x.c"])).unwrap();
        assert!(o.no_elide && c == ["x.c"]);
    }

    #[test]
    fn the_exercised_report_is_an_option_in_both_forms() {
        let args = ["--wpp-mode=ewpp", "--wpp-exercised=r.depf", "x.c"];
        let (o, c) = split_args(&s(&args)).unwrap();
        assert_eq!(o.mode.as_deref(), Some("ewpp"));
        assert_eq!(o.exercised, Some(PathBuf::from("r.depf")));
        assert_eq!(c, s(&["x.c"]));
        let args = ["--mode", "ewpp", "--exercised", "r.depf", "--", "x.c"];
        let (o, c) = split_args(&s(&args)).unwrap();
        assert_eq!(o.exercised, Some(PathBuf::from("r.depf")));
        assert_eq!(c, s(&["x.c"]));
    }

    #[test]
    fn legacy_form_still_works() {
        let (o, c) = split_args(&s(&[
            "--mode",
            "ppp",
            "--interesting",
            "p.blprof",
            "--verbose",
            "--",
            "-O2",
            "x.c",
        ]))
        .unwrap();
        assert_eq!(o.mode.as_deref(), Some("ppp"));
        assert_eq!(o.interesting, Some(PathBuf::from("p.blprof")));
        assert!(o.verbose);
        assert_eq!(c, s(&["-O2", "x.c"]));
        // A `--` after clang arguments is clang's, not the legacy separator.
        let (o, c) = split_args(&s(&["-O2", "--", "x.c"])).unwrap();
        assert_eq!(o, CcOptions::default());
        assert_eq!(c, s(&["-O2", "--", "x.c"]));
    }

    #[test]
    fn bad_wpp_options_are_named() {
        let e = split_args(&s(&["--wpp-mood=bl"])).unwrap_err();
        assert!(e.to_string().contains("--wpp-mood"), "{e}");
        let e = split_args(&s(&["--wpp-mode"])).unwrap_err();
        assert!(e.to_string().contains("needs a value"), "{e}");
        let e = value_enum::<Mode>("mode", "blocks").unwrap_err();
        assert!(e.to_string().contains("trace-blocks"), "{e}");
    }

    #[test]
    fn dispatch_by_program_name_and_subcommand() {
        assert_eq!(
            driver_call(&s(&["/usr/bin/wpp-cc", "-c"])),
            Some((false, 1))
        );
        assert_eq!(driver_call(&s(&["wpp-c++"])), Some((true, 1)));
        assert_eq!(driver_call(&s(&["wpp", "c++", "x.cc"])), Some((true, 2)));
        assert_eq!(driver_call(&s(&["wpp", "cc"])), Some((false, 2)));
        assert_eq!(driver_call(&s(&["wpp", "stats", "x"])), None);
    }
}
