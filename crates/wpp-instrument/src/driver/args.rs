//! Reading a clang command line: `@file` response files and the classification of each argument
//! into sources, link inputs (kept in order with the link flags) and flags.

use super::DriverError;
use std::path::Path;

/// A source file to compile, with the language of a preceding `-x LANG` (clang's rule: `-x`
/// applies to every later input until `-x none`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Source {
    /// The path as given.
    pub path: String,
    /// `-x LANG` in force, if any.
    pub lang: Option<String>,
}

/// One element of the link, in command-line order: link order decides which archive members
/// are used, and `--start-group`/`--whole-archive` apply to the inputs between them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LinkArg {
    /// The object compiled from `sources[i]`.
    Source(usize),
    /// An object, archive or shared library named on the command line.
    Input(String),
    /// A link flag (`-l`, `-L`, `-Wl,…`, `-Xlinker X`, …).
    Flag(String),
}

/// A parsed clang command line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Invocation {
    /// Source files.
    pub sources: Vec<Source>,
    /// Link inputs and link flags, in order.
    pub link: Vec<LinkArg>,
    /// Flags for compiling and linking (`-O2`, `-g`, `-I`, `-pthread`, `-fPIC`, …).
    pub common: Vec<String>,
    /// Dependency-file flags (`-MD`, `-MF F`, …): only for compiling the user's sources, never
    /// for the link steps (they would overwrite the user's `.d` files).
    pub deps: Vec<String>,
    /// `-o`.
    pub output: Option<String>,
    /// `-c`.
    pub compile_only: bool,
    /// Handled by clang alone (`-E`, `-S`, `-emit-llvm`, …).
    pub passthrough: bool,
    /// `-shared`: a shared library.
    pub shared: bool,
    /// `-r`/`-Wl,-r`: a relocatable (partial) link.
    pub relocatable: bool,
    /// User flags wpp drops (`-flto…`: wpp gathers the whole program itself).
    pub dropped: Vec<String>,
}

/// Flags whose value is the next argument, used when compiling.
const WITH_VALUE: &[&str] = &[
    "-I",
    "-D",
    "-U",
    "-include",
    "-imacros",
    "-isystem",
    "-iquote",
    "-idirafter",
    "-isysroot",
    "-iprefix",
    "-iwithprefix",
    "-target",
    "-arch",
    "--sysroot",
    "-Xclang",
    "-mllvm",
    "-Xassembler",
    "-Xpreprocessor",
];
/// Dependency-file flags whose value is the next argument.
const DEPS_WITH_VALUE: &[&str] = &["-MF", "-MT", "-MQ", "-MJ"];
/// Link-only flags whose value is the next argument.
const LINK_WITH_VALUE: &[&str] = &["-L", "-l", "-Xlinker", "-u", "-T", "-z", "-e"];
/// Link-only flags without a value.
const LINK_FLAGS: &[&str] = &[
    "-static",
    "-shared",
    "-rdynamic",
    "-pie",
    "-no-pie",
    "-s",
    "-nostdlib",
    "-nodefaultlibs",
    "-nostartfiles",
    "-static-libgcc",
    "-static-libstdc++",
    "-r",
];
/// Flags that make clang do something other than compile or link.
const PASSTHROUGH: &[&str] = &[
    "-E",
    "-S",
    "-fsyntax-only",
    "--version",
    "-###",
    "-M",
    "-MM",
    "--help",
    "-print-search-dirs",
    "-emit-llvm",
    "-dumpversion",
    "-dumpmachine",
];

impl Invocation {
    /// Classifies the arguments of a clang command line (response files already expanded).
    pub fn parse(args: &[String]) -> Result<Invocation, DriverError> {
        let mut inv = Invocation::default();
        let mut lang: Option<String> = None;
        let mut it = args.iter();
        while let Some(a) = it.next() {
            let a = a.as_str();
            let mut value = |flag: &str| {
                it.next()
                    .cloned()
                    .ok_or_else(|| DriverError::Usage(format!("{flag} needs a value")))
            };
            match a {
                "-c" => inv.compile_only = true,
                _ if PASSTHROUGH.contains(&a) || a.starts_with("-print-") => {
                    inv.passthrough = true;
                    inv.common.push(a.to_owned());
                }
                "-o" => inv.output = Some(value(a)?),
                _ if a.starts_with("-o") && a.len() > 2 => inv.output = Some(a[2..].to_owned()),
                "-x" => lang = Some(value(a)?).filter(|l| l != "none"),
                _ if a.starts_with("-x") && a.len() > 2 => {
                    lang = Some(a[2..].to_owned()).filter(|l| l != "none")
                }
                _ if a.starts_with("-flto") || a.starts_with("-fwhole-program-vtables") => {
                    inv.dropped.push(a.to_owned())
                }
                _ if DEPS_WITH_VALUE.contains(&a) => {
                    let v = value(a)?;
                    inv.deps.extend([a.to_owned(), v]);
                }
                "-MD" | "-MMD" | "-MP" | "-MG" => inv.deps.push(a.to_owned()),
                _ if LINK_WITH_VALUE.contains(&a) => {
                    let v = value(a)?;
                    inv.relocatable |= a == "-Xlinker" && v == "-r";
                    inv.link
                        .extend([LinkArg::Flag(a.to_owned()), LinkArg::Flag(v)]);
                }
                _ if WITH_VALUE.contains(&a) => {
                    let v = value(a)?;
                    inv.common.extend([a.to_owned(), v]);
                }
                _ if a.starts_with("-l")
                    || a.starts_with("-L")
                    || a.starts_with("-Wl,")
                    || LINK_FLAGS.contains(&a) =>
                {
                    inv.shared |= a == "-shared";
                    inv.relocatable |= a == "-r" || a.split(',').any(|p| p == "-r");
                    inv.link.push(LinkArg::Flag(a.to_owned()))
                }
                "-" => inv.push_source(a, &lang),
                _ if a.starts_with('-') => inv.common.push(a.to_owned()),
                _ if lang.is_some() || is_source(a) => inv.push_source(a, &lang),
                _ => inv.link.push(LinkArg::Input(a.to_owned())),
            }
        }
        Ok(inv)
    }

    fn push_source(&mut self, path: &str, lang: &Option<String>) {
        self.link.push(LinkArg::Source(self.sources.len()));
        self.sources.push(Source {
            path: path.to_owned(),
            lang: lang.clone(),
        });
    }

    /// The flag that gives the user's sources line tables when the command line has no `-g…`
    /// of its own: block recordings then map to files and lines (`wpp annotate`), and code
    /// generation is unchanged (debug information never changes it in clang). A `-g0` is the
    /// user's and is kept: no lines then.
    pub fn line_tables(&self) -> Option<&'static str> {
        let debug = self.common.iter().any(|f| f.starts_with("-g"));
        (!debug).then_some("-gline-tables-only")
    }

    /// Whether any source is C++ (by `-x` or extension).
    pub fn has_cxx_source(&self) -> bool {
        self.sources.iter().any(|s| match &s.lang {
            Some(l) => l.starts_with("c++"),
            None => is_cxx_source(&s.path),
        })
    }

    /// The named link inputs (objects, archives, shared libraries).
    pub fn inputs(&self) -> impl Iterator<Item = &str> {
        self.link.iter().filter_map(|l| match l {
            LinkArg::Input(p) => Some(p.as_str()),
            _ => None,
        })
    }
}

/// Whether a path is a C++ source by extension.
pub fn is_cxx_source(s: &str) -> bool {
    matches!(
        Path::new(s).extension().and_then(|e| e.to_str()),
        Some("cc" | "cpp" | "cxx" | "c++" | "C" | "ii" | "mm" | "CPP" | "cp")
    )
}

/// Whether a path is something clang compiles (C, C++, Objective-C, LLVM IR, assembly).
pub fn is_source(s: &str) -> bool {
    is_cxx_source(s)
        || matches!(
            Path::new(s).extension().and_then(|e| e.to_str()),
            Some("c" | "i" | "m" | "ll" | "bc" | "s" | "S" | "sx")
        )
}

/// Whether a source is assembly (compiled to an object without bitcode).
pub fn is_assembly(s: &Source) -> bool {
    match &s.lang {
        Some(l) => l.starts_with("assembler"),
        None => matches!(
            Path::new(&s.path).extension().and_then(|e| e.to_str()),
            Some("s" | "S" | "sx")
        ),
    }
}

/// Expands `@file` response files as clang does (GNU quoting: whitespace separates, `'…'` and
/// `"…"` quote, `\` escapes; nested `@file`s expand too). A missing file stays a literal
/// argument, as in clang.
pub fn expand_response_files(args: &[String]) -> Result<Vec<String>, DriverError> {
    let mut out = Vec::with_capacity(args.len());
    expand_into(args, &mut out, 0)?;
    Ok(out)
}

/// Response files nested deeper than this are a loop.
const MAX_RESPONSE_DEPTH: usize = 20;

fn expand_into(args: &[String], out: &mut Vec<String>, depth: usize) -> Result<(), DriverError> {
    for a in args {
        let Some(file) = a.strip_prefix('@') else {
            out.push(a.clone());
            continue;
        };
        let Ok(text) = std::fs::read_to_string(file) else {
            out.push(a.clone());
            continue;
        };
        if depth >= MAX_RESPONSE_DEPTH {
            return Err(DriverError::Usage(format!(
                "response file {file}: nested more than {MAX_RESPONSE_DEPTH} deep (a loop?)"
            )));
        }
        let words = split_gnu_words(&text)
            .map_err(|e| DriverError::Usage(format!("response file {file}: {e}")))?;
        expand_into(&words, out, depth + 1)?;
    }
    Ok(())
}

/// Splits a response file's text into words with GNU quoting rules.
fn split_gnu_words(text: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut quote: Option<(char, usize)> = None;
    let mut chars = text.char_indices();
    while let Some((i, c)) = chars.next() {
        match (quote, c) {
            (Some((q, _)), _) if c == q => quote = None,
            (_, '\\') => {
                let (_, next) = chars
                    .next()
                    .ok_or_else(|| format!("byte {i}: `\\` at the end of the file"))?;
                word.get_or_insert_with(String::new).push(next);
            }
            (Some(_), _) => word.get_or_insert_with(String::new).push(c),
            (None, '\'' | '"') => {
                quote = Some((c, i));
                word.get_or_insert_with(String::new);
            }
            (None, _) if c.is_whitespace() => words.extend(word.take()),
            (None, _) => word.get_or_insert_with(String::new).push(c),
        }
    }
    if let Some((q, at)) = quote {
        return Err(format!("byte {at}: unterminated {q}…{q} quote"));
    }
    words.extend(word);
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    fn flags(v: &[&str]) -> Vec<LinkArg> {
        v.iter().map(|x| LinkArg::Flag(x.to_string())).collect()
    }

    #[test]
    fn classifies_a_typical_command_line() {
        let inv = Invocation::parse(&s(&[
            "-O2",
            "-I",
            "inc",
            "-DX=1",
            "a.c",
            "b.cpp",
            "lib.o",
            "-lm",
            "-L/x",
            "-Wl,--as-needed",
            "-o",
            "prog",
            "-pthread",
        ]))
        .unwrap();
        let paths: Vec<&str> = inv.sources.iter().map(|s| s.path.as_str()).collect();
        assert_eq!(paths, ["a.c", "b.cpp"]);
        assert!(inv.has_cxx_source());
        let mut want = vec![
            LinkArg::Source(0),
            LinkArg::Source(1),
            LinkArg::Input("lib.o".into()),
        ];
        want.extend(flags(&["-lm", "-L/x", "-Wl,--as-needed"]));
        assert_eq!(inv.link, want);
        assert_eq!(inv.common, s(&["-O2", "-I", "inc", "-DX=1", "-pthread"]));
        assert_eq!(inv.output.as_deref(), Some("prog"));
        assert!(!inv.compile_only && !inv.passthrough && !inv.shared && !inv.relocatable);
    }

    #[test]
    fn compile_only_passthrough_and_dependency_flags() {
        let inv = Invocation::parse(&s(&["-c", "x.c", "-ox.o", "-MD", "-MF", "x.d"])).unwrap();
        assert!(inv.compile_only);
        assert_eq!(inv.output.as_deref(), Some("x.o"));
        assert_eq!(inv.deps, s(&["-MD", "-MF", "x.d"]));
        assert!(inv.common.is_empty());
        assert!(Invocation::parse(&s(&["-E", "x.c"])).unwrap().passthrough);
        assert!(
            Invocation::parse(&s(&["-c", "-emit-llvm", "x.c"]))
                .unwrap()
                .passthrough
        );
        assert!(Invocation::parse(&s(&["-o"])).is_err());
    }

    #[test]
    fn x_language_applies_to_later_inputs_until_none() {
        let inv = Invocation::parse(&s(&["-x", "c", "a.inc", "-xnone", "b.o", "-x", "c++", "c"]))
            .unwrap();
        assert_eq!(
            inv.sources,
            vec![
                Source {
                    path: "a.inc".into(),
                    lang: Some("c".into())
                },
                Source {
                    path: "c".into(),
                    lang: Some("c++".into())
                }
            ]
        );
        assert!(inv.has_cxx_source());
        assert_eq!(inv.inputs().collect::<Vec<_>>(), ["b.o"]);
    }

    #[test]
    fn shared_relocatable_groups_and_lto() {
        let inv = Invocation::parse(&s(&[
            "-fPIC",
            "-shared",
            "-flto=thin",
            "a.o",
            "-Wl,--start-group",
            "x.a",
            "y.a",
            "-Wl,--end-group",
            "-Wl,-soname,libq.so.1",
        ]))
        .unwrap();
        assert!(inv.shared && !inv.relocatable);
        assert_eq!(inv.dropped, s(&["-flto=thin"]));
        assert_eq!(inv.common, s(&["-fPIC"]));
        assert_eq!(inv.inputs().collect::<Vec<_>>(), ["a.o", "x.a", "y.a"]);
        assert!(Invocation::parse(&s(&["-r", "a.o"])).unwrap().relocatable);
        assert!(
            Invocation::parse(&s(&["-Wl,-r", "a.o"]))
                .unwrap()
                .relocatable
        );
        assert!(
            Invocation::parse(&s(&["-Xlinker", "-r", "a.o"]))
                .unwrap()
                .relocatable
        );
    }

    #[test]
    fn response_files_expand_with_quotes_and_nesting() {
        let dir = tempfile::tempdir().unwrap();
        let inner = dir.path().join("inner.rsp");
        std::fs::write(&inner, "-DA='x y' \"b c.c\"\n-I\\ dir").unwrap();
        let outer = dir.path().join("outer.rsp");
        std::fs::write(&outer, format!("-O2 @{}\n", inner.display())).unwrap();
        let got = expand_response_files(&s(&["-c", &format!("@{}", outer.display()), "@missing"]))
            .unwrap();
        assert_eq!(
            got,
            s(&["-c", "-O2", "-DA=x y", "b c.c", "-I dir", "@missing"])
        );
        let bad = dir.path().join("bad.rsp");
        std::fs::write(&bad, "-DA='x").unwrap();
        let e = expand_response_files(&s(&[&format!("@{}", bad.display())])).unwrap_err();
        assert!(e.to_string().contains("byte 4: unterminated"), "{e}");
        let looped = dir.path().join("loop.rsp");
        std::fs::write(&looped, format!("@{}", looped.display())).unwrap();
        let e = expand_response_files(&s(&[&format!("@{}", looped.display())])).unwrap_err();
        assert!(e.to_string().contains("nested"), "{e}");
    }
}
