//! `wpp cc` as `CC`: command lines a build system writes, run through a `wpp-cc` symlink in a
//! scratch directory. Each case builds a small program the way make/CMake would, runs it, and
//! checks its output against the expected text and its recording against the functions that
//! must (and must not) be in it. The oracle for odd command lines is clang-22 itself: where
//! clang fails, `wpp cc` must fail too.

#![cfg(feature = "llvm")]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

const LIB_C: &str = r#"
int lib_add(int a, int b) { return a + b; }
"#;
const LIB2_C: &str = r#"
int lib_add(int a, int b);
int lib_twice(int a) { return lib_add(a, a); }
"#;
const MAIN_C: &str = r#"
#include <stdio.h>
int lib_twice(int a);
int main(void) { printf("twice=%d\n", lib_twice(21)); return 0; }
"#;
const ASM_S: &str = r#"
    .text
    .globl lib_twice
    .type lib_twice, @function
lib_twice:
    leal (%rdi,%rdi), %eax
    ret
    .section .note.GNU-stack,"",@progbits
"#;
const GROUP_A_C: &str = r#"
int group_b(int);
int group_a(int n) { return n <= 0 ? 0 : 1 + group_b(n - 1); }
"#;
const GROUP_B_C: &str = r#"
int group_a(int);
int group_b(int n) { return n <= 0 ? 0 : 1 + group_a(n - 1); }
int lib_twice(int a) { return group_a(a) + group_a(a); }
"#;
/// Called by nothing: only `--whole-archive` links it.
const UNUSED_C: &str = r#"
int lib_unused(int x) { return x * 3; }
"#;
const MAIN_CPP: &str = r#"
#include <cstdio>
#include <string>
static std::string greet(const std::string &w) { return "hello " + w; }
int main() { std::printf("%s\n", greet("c++").c_str()); return 0; }
"#;

/// A scratch directory with the sources and a `wpp-cc`/`wpp-c++` symlink.
struct Project {
    dir: tempfile::TempDir,
}

impl Project {
    fn new() -> Project {
        let dir = tempfile::tempdir().expect("tempdir");
        let wpp = PathBuf::from(env!("CARGO_BIN_EXE_wpp"));
        for name in ["wpp-cc", "wpp-c++"] {
            std::os::unix::fs::symlink(&wpp, dir.path().join(name)).expect("symlink");
        }
        for (name, text) in [
            ("lib.c", LIB_C),
            ("lib.inc", LIB_C),
            ("lib2.c", LIB2_C),
            ("main.c", MAIN_C),
            ("asm.S", ASM_S),
            ("group_a.c", GROUP_A_C),
            ("group_b.c", GROUP_B_C),
            ("unused.c", UNUSED_C),
            ("main.cpp", MAIN_CPP),
        ] {
            std::fs::write(dir.path().join(name), text).expect("write source");
        }
        Project { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Runs a shell command in the project directory, with `wpp-cc` on `PATH`.
    fn sh(&self, cmd: &str) -> std::process::Output {
        let path = format!(
            "{}:{}",
            self.dir.path().display(),
            std::env::var("PATH").unwrap_or_default()
        );
        Command::new("sh")
            .arg("-c")
            .arg(cmd)
            .current_dir(self.dir.path())
            .env("PATH", path)
            .env("WPP_VERBOSE", "1")
            .env_remove("WPP_MODE")
            .output()
            .expect("sh runs")
    }

    fn ok(&self, cmd: &str) -> String {
        let out = self.sh(cmd);
        assert!(
            out.status.success(),
            "`{cmd}` failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stderr).into_owned()
    }

    /// Runs `exe`, recording raw and online; returns its output and the functions entered.
    fn record(&self, exe: &str) -> (String, BTreeSet<String>) {
        let online = self.path("rec.wpp");
        let raw = self.path("rec.trace");
        let run = |out: &Path, raw: bool| {
            let mut c = Command::new(self.path(exe));
            // The online run's spool is `rec.trace` too: its finisher must be done with it
            // before the raw run writes that name (a detached one would remove the raw trace).
            c.current_dir(self.dir.path())
                .env("WPP_OUT", out)
                .env("WPP_FINISH", "wait");
            if raw {
                c.env("WPP_RAW", "1");
            } else {
                c.env_remove("WPP_RAW");
            }
            let o = c.output().expect("program runs");
            assert!(o.status.success(), "{exe} failed: {o:?}");
            String::from_utf8_lossy(&o.stdout).into_owned()
        };
        let stdout = run(&online, false);
        assert_eq!(run(&raw, true), stdout, "raw and online runs differ");
        let wpp = env!("CARGO_BIN_EXE_wpp");
        let verify = Command::new(wpp)
            .arg("verify")
            .arg(&online)
            .arg(&raw)
            .output();
        let verify = verify.expect("wpp verify runs");
        assert!(
            verify.status.success(),
            "the online recording does not expand to the raw one: {}",
            String::from_utf8_lossy(&verify.stderr)
        );
        let text = self.path("rec.txt");
        let d = Command::new(wpp)
            .args(["decompress", "--text", "-o"])
            .arg(&text)
            .arg(&online)
            .status()
            .expect("wpp decompress runs");
        assert!(d.success());
        let entered = std::fs::read_to_string(&text)
            .expect("text trace")
            .lines()
            .filter_map(|l| l.strip_prefix("F "))
            .map(str::to_owned)
            .collect();
        (stdout, entered)
    }
}

/// One row of the table: shell commands, then what the program prints and records.
struct Case {
    name: &'static str,
    commands: &'static [&'static str],
    exe: &'static str,
    stdout: &'static str,
    recorded: &'static [&'static str],
    not_recorded: &'static [&'static str],
    /// A text the `--wpp-verbose` report must contain.
    report: Option<&'static str>,
}

const CASES: &[Case] = &[
    Case {
        name: "compile and link in one command, no `--`",
        commands: &["wpp-cc -O2 main.c lib.c lib2.c -o p"],
        exe: "p",
        stdout: "twice=42\n",
        recorded: &["main", "lib_twice", "lib_add"],
        not_recorded: &[],
        report: None,
    },
    Case {
        name: "the older `wpp cc --mode M -- ARGS` form",
        commands: &["wpp-cc --mode trace-blocks -- -O2 main.c lib.c lib2.c -o p"],
        exe: "p",
        stdout: "twice=42\n",
        recorded: &["main", "lib_twice", "lib_add"],
        not_recorded: &[],
        report: None,
    },
    Case {
        name: "make-style: -c with -MD -MF, system ar and ranlib, -L. -l",
        commands: &[
            "wpp-cc -O2 -fPIC -MD -MF lib.d -c lib.c -o lib.o",
            "grep -q 'lib.c' lib.d",
            "wpp-cc -O2 -c lib2.c main.c",
            "ar rc libq.a lib.o lib2.o && ranlib libq.a",
            "wpp-cc -o p main.o -L. -lq",
        ],
        exe: "p",
        stdout: "twice=42\n",
        recorded: &["main", "lib_twice", "lib_add"],
        not_recorded: &[],
        report: Some("libq.a(lib.o)"),
    },
    Case {
        name: "llvm-ar archive named on the link line, only used members",
        commands: &[
            "wpp-cc -O1 -c lib.c lib2.c main.c group_a.c",
            "llvm-ar-22 rcs libq.a lib.o lib2.o group_a.o",
            "wpp-cc main.o libq.a -o p",
        ],
        exe: "p",
        stdout: "twice=42\n",
        recorded: &["main", "lib_twice", "lib_add"],
        not_recorded: &["group_a"],
        report: None,
    },
    Case {
        name: "thin archive (`ar T`, Meson's default) in another folder, by -L -l, GNU ld",
        commands: &[
            "mkdir -p sub && cd sub && wpp-cc -O1 -c ../lib.c ../lib2.c ../group_a.c",
            "wpp-cc -O1 -c main.c && llvm-ar-22 csrDT sub/libq.a sub/lib.o sub/lib2.o sub/group_a.o",
            "head -c 8 sub/libq.a | grep -q thin",
            "wpp-cc main.o -Lsub -lq -o p",
        ],
        exe: "p",
        stdout: "twice=42\n",
        recorded: &["main", "lib_twice", "lib_add"],
        not_recorded: &["group_a"],
        report: Some("libq.a(lib.o)"),
    },
    Case {
        name: "thin archive named on the link line, lld",
        commands: &[
            "wpp-cc -O1 -c lib.c lib2.c main.c group_a.c",
            "ar rcsT libq.a lib.o lib2.o group_a.o",
            "wpp-cc -fuse-ld=lld main.o libq.a -o p",
        ],
        exe: "p",
        stdout: "twice=42\n",
        recorded: &["main", "lib_twice", "lib_add"],
        not_recorded: &["group_a"],
        report: Some("libq.a(lib.o)"),
    },
    Case {
        name: "thin archive in --whole-archive: every member linked",
        commands: &[
            "wpp-cc -O1 -c lib.c lib2.c main.c unused.c",
            "ar rcsT libq.a lib.o lib2.o unused.o",
            "wpp-cc main.o -Wl,--whole-archive libq.a -Wl,--no-whole-archive -o p",
            "nm p | grep -q ' T lib_unused'",
        ],
        exe: "p",
        stdout: "twice=42\n",
        recorded: &["main", "lib_twice", "lib_add"],
        not_recorded: &[],
        report: None,
    },
    Case {
        name: "response file",
        commands: &[
            "printf '%s\\n' -O2 main.c \"'lib.c'\" lib2.c '-o p' > args.rsp",
            "wpp-cc @args.rsp",
        ],
        exe: "p",
        stdout: "twice=42\n",
        recorded: &["main", "lib_twice", "lib_add"],
        not_recorded: &[],
        report: None,
    },
    Case {
        name: "-x c on a file clang would not compile by its name",
        commands: &["wpp-cc -O2 -x c lib.inc -x none main.c lib2.c -o p"],
        exe: "p",
        stdout: "twice=42\n",
        recorded: &["main", "lib_twice", "lib_add"],
        not_recorded: &[],
        report: None,
    },
    Case {
        name: "assembly is linked uninstrumented and named in the report",
        commands: &["wpp-cc -c asm.S -o asm.o", "wpp-cc -O2 main.c asm.o -o p"],
        exe: "p",
        stdout: "twice=42\n",
        recorded: &["main"],
        not_recorded: &["lib_twice"],
        report: Some("passed through uninstrumented (no bitcode): asm.o"),
    },
    Case {
        name: "assembly source on the link line",
        commands: &["wpp-cc -O2 main.c asm.S -o p"],
        exe: "p",
        stdout: "twice=42\n",
        recorded: &["main"],
        not_recorded: &["lib_twice"],
        report: Some("passed through uninstrumented"),
    },
    Case {
        name: "-flto from the user is dropped",
        commands: &[
            "wpp-cc -flto -O2 -c lib.c lib2.c",
            "wpp-cc -flto=thin -O2 main.c lib.o lib2.o -o p",
        ],
        exe: "p",
        stdout: "twice=42\n",
        recorded: &["main", "lib_twice", "lib_add"],
        not_recorded: &[],
        report: Some("dropped -flto"),
    },
    Case {
        name: "archives in --start-group that need each other",
        commands: &[
            "wpp-cc -O1 -c group_a.c group_b.c main.c",
            "ar rcs liba.a group_a.o && ar rcs libb.a group_b.o",
            "wpp-cc main.o -Wl,--start-group liba.a libb.a -Wl,--end-group -Wl,-Map,p.map -o p",
            "test -s p.map",
        ],
        exe: "p",
        stdout: "twice=42\n",
        recorded: &["main", "lib_twice", "group_a", "group_b"],
        not_recorded: &[],
        report: None,
    },
    Case {
        name: "--whole-archive: every member linked, bitcode ones instrumented, native kept",
        commands: &[
            "wpp-cc -O1 -c lib.c lib2.c main.c unused.c",
            "clang-22 -O1 -Dlib_unused=native_unused -c unused.c -o native.o",
            "ar rcs libq.a lib.o lib2.o unused.o native.o",
            "wpp-cc main.o -Wl,--whole-archive libq.a -Wl,--no-whole-archive -o p",
            "nm p | grep -q ' T lib_unused' && nm p | grep -q ' T native_unused'",
        ],
        exe: "p",
        stdout: "twice=42\n",
        recorded: &["main", "lib_twice", "lib_add"],
        not_recorded: &[],
        report: Some("passed through uninstrumented (no bitcode): libq.a(native.o)"),
    },
    Case {
        name: "--whole-archive of a -l library, in one -Wl list",
        commands: &[
            "wpp-cc -O1 -c lib.c lib2.c main.c unused.c",
            "ar rcs libq.a lib.o lib2.o unused.o",
            "wpp-cc main.o -L. -Wl,--whole-archive -lq -Wl,--no-whole-archive,--as-needed -o p",
            "nm p | grep -q ' T lib_unused'",
        ],
        exe: "p",
        stdout: "twice=42\n",
        recorded: &["main", "lib_twice", "lib_add"],
        not_recorded: &[],
        report: None,
    },
    Case {
        name: "-r partial link keeps every input's bitcode",
        commands: &[
            "wpp-cc -O2 -c lib.c lib2.c",
            "wpp-cc -r lib.o lib2.o -o both.o",
            "wpp-cc -O2 main.c both.o -o p",
        ],
        exe: "p",
        stdout: "twice=42\n",
        recorded: &["main", "lib_twice", "lib_add"],
        not_recorded: &[],
        report: None,
    },
    Case {
        name: "`ld -r` run directly: its concatenated bitcode sections are split",
        commands: &[
            "wpp-cc -O2 -c lib.c lib2.c",
            "ld -r lib.o lib2.o -o both.o",
            "wpp-cc -O2 main.c both.o -o p",
        ],
        exe: "p",
        stdout: "twice=42\n",
        recorded: &["main", "lib_twice", "lib_add"],
        not_recorded: &[],
        report: None,
    },
    Case {
        name: "-fPIC -shared library instrumented, recorded in the program's run",
        commands: &[
            "wpp-cc -O2 -fPIC -shared lib.c lib2.c -o libq.so",
            "wpp-cc -O2 main.c -L. -lq -Wl,-rpath,\"$PWD\" -o p",
        ],
        exe: "p",
        stdout: "twice=42\n",
        recorded: &["main", "lib_twice", "lib_add"],
        not_recorded: &[],
        report: None,
    },
    Case {
        name: "-shared from objects built without -fPIC (bzip2's Makefile-libbz2_so)",
        commands: &[
            "wpp-cc -O2 -c lib.c lib2.c",
            "wpp-cc -shared -Wl,-soname -Wl,libq.so lib.o lib2.o -o libq.so",
            "wpp-cc -O2 main.c libq.so -Wl,-rpath,\"$PWD\" -o p",
        ],
        exe: "p",
        stdout: "twice=42\n",
        recorded: &["main", "lib_twice", "lib_add"],
        not_recorded: &[],
        report: None,
    },
    Case {
        name: "a library built for another mode than its program runs unrecorded",
        commands: &[
            "wpp-cc --wpp-mode=ewpp-filter -O2 -fPIC -shared lib.c lib2.c -o libq.so",
            "wpp-cc -O2 main.c -L. -lq -Wl,-rpath,\"$PWD\" -o p",
        ],
        exe: "p",
        stdout: "twice=42\n",
        recorded: &["main"],
        not_recorded: &["lib_twice"],
        report: None,
    },
    Case {
        name: "C++ through wpp-c++, compiled and linked separately",
        commands: &["wpp-c++ -O2 -c main.cpp -o m.o", "wpp-c++ m.o -o p"],
        exe: "p",
        stdout: "hello c++\n",
        recorded: &["main"],
        not_recorded: &[],
        report: None,
    },
];

#[test]
fn build_system_command_lines() {
    for case in CASES {
        let p = Project::new();
        let mut report = String::new();
        for cmd in case.commands {
            report += &p.ok(cmd);
        }
        let (stdout, entered) = p.record(case.exe);
        assert_eq!(stdout, case.stdout, "{}", case.name);
        for f in case.recorded {
            assert!(
                entered.contains(*f),
                "{}: {f} not recorded in {entered:?}",
                case.name
            );
        }
        for f in case.not_recorded {
            assert!(!entered.contains(*f), "{}: {f} recorded", case.name);
        }
        if let Some(r) = case.report {
            assert!(
                report.contains(r),
                "{}: report lacks {r:?}:\n{report}",
                case.name
            );
        }
    }
}

const SO_LIB_C: &str = r#"
__attribute__((noinline)) static int helper(int x) { return x * 3 + 1; }
int q_work(int n) { int s = 0; for (int i = 0; i < n; i++) s += (i & 1) ? helper(i) : i; return s; }
"#;
const SO_MAIN_C: &str = r#"
#include <stdio.h>
int q_work(int n);
__attribute__((noinline)) static int helper(int x) { return x - 1; }
int main(void) { int t = 0; for (int i = 0; i < 3; i++) t += q_work(i + 4) + helper(i); printf("%d\n", t); return 0; }
"#;
const SO_DLOPEN_C: &str = r#"
#include <dlfcn.h>
#include <stdio.h>
int main(void) {
    for (int round = 0; round < 2; round++) {
        void *h = dlopen("./libq.so", RTLD_NOW);
        if (!h) { printf("%s\n", dlerror()); return 1; }
        int (*f)(int) = (int (*)(int))dlsym(h, "q_work");
        printf("%d\n", f(5) + f(6));
        if (dlclose(h)) return 1;
    }
    return 0;
}
"#;

/// How many times each function is entered in a decompressed text trace.
fn entries(p: &Project) -> std::collections::BTreeMap<String, usize> {
    let mut n = std::collections::BTreeMap::new();
    for f in std::fs::read_to_string(p.path("rec.txt"))
        .expect("text trace")
        .lines()
    {
        if let Some(f) = f.strip_prefix("F ") {
            *n.entry(f.to_owned()).or_insert(0) += 1;
        }
    }
    n
}

/// An instrumented library and its program record into one run, with each function's
/// hand-counted entries: `q_work(n)` calls the library's `helper` once per odd `i < n`
/// (n = 4, 5, 6: 2 + 2 + 3), and the two `helper`s are told apart by their modules. A library
/// `dlopen`ed, closed and opened again is recorded under the same ids each time, whether the
/// program is instrumented (the library arrives after its first event: a program chunk) or
/// not (the library brings the runtime, `libwpp_rt.so`).
#[test]
fn shared_libraries_record_into_one_run() {
    let p = Project::new();
    for (name, text) in [("q.c", SO_LIB_C), ("m.c", SO_MAIN_C), ("dl.c", SO_DLOPEN_C)] {
        std::fs::write(p.path(name), text).expect("write source");
    }
    let counts = |want: &[(&str, usize)]| -> std::collections::BTreeMap<String, usize> {
        want.iter().map(|&(f, n)| (f.to_owned(), n)).collect()
    };
    p.ok("wpp-cc -O1 -fPIC -shared q.c -o libq.so");
    p.ok("wpp-cc -O1 m.c -L. -lq -Wl,-rpath,\"$PWD\" -o m");
    let (stdout, _) = p.record("m");
    assert_eq!(stdout, "72\n");
    let want = [
        ("main", 1),
        ("m!helper", 3),
        ("q_work", 3),
        ("libq.so!helper", 7),
    ];
    assert_eq!(entries(&p), counts(&want));
    // A name two modules define is ambiguous to `--function`, which lists both; a name one
    // module qualifies is that module's function.
    let cfg = |f: &str| {
        Command::new(env!("CARGO_BIN_EXE_wpp"))
            .args(["cfg", "rec.wpp", "--function", f])
            .current_dir(p.path(""))
            .output()
            .expect("wpp runs")
    };
    let err = String::from_utf8_lossy(&cfg("helper").stderr).into_owned();
    assert!(
        err.contains("several modules define `helper`: `m!helper`, `libq.so!helper`"),
        "{err}"
    );
    assert!(cfg("q_work").status.success() && cfg("libq.so!helper").status.success());
    // Libraries bind to the executable's buffer and runtime.
    let dynsym = p.ok("nm -D --defined-only m >&2");
    for sym in [
        "__wpp_buf",
        "__wpp_idx",
        "__wpp_depth",
        "__wpp_rt_register_v1",
    ] {
        assert!(dynsym.contains(sym), "m does not export {sym}:\n{dynsym}");
    }

    p.ok("clang-22 -O1 dl.c -o dl -ldl");
    let (stdout, _) = p.record("dl");
    assert_eq!(stdout, "56\n56\n");
    assert_eq!(entries(&p), counts(&[("q_work", 4), ("helper", 10)]));

    p.ok("wpp-cc -O1 dl.c -o dl -ldl");
    let (stdout, _) = p.record("dl");
    assert_eq!(stdout, "56\n56\n");
    let want = [("main", 1), ("q_work", 4), ("helper", 10)];
    assert_eq!(entries(&p), counts(&want));
}

const NAMES_CPP: &str = r#"
#include <cstdio>
#define NOINLINE __attribute__((noinline))
NOINLINE int f(int x) { return x + 1; }
NOINLINE int f(double x) { return (int)(x * 2); }
namespace geo { NOINLINE int twice(int x) { return 2 * x; } }
struct Point {
    int x, y;
    NOINLINE Point(int a, int b) : x(a), y(b) {}
    NOINLINE int norm() const { return x * x + y * y; }
};
int main() {
    Point p(3, 4);
    int s = f(1) + f(2.5) + f(3);
    for (int i = 0; i < 3; i++) s += geo::twice(i);
    std::printf("%d\n", s + p.norm());
    return 0;
}
"#;

/// C++ functions have the names their source gives them, as a debugger shows them: qualified,
/// without the parameter list (`geo::twice`, `Point::norm`) unless overloads share the name
/// (`f(int)`, `f(double)`), each with its hand-counted entries. `--function` finds a function by
/// that name or by its linkage name (`_Z1fd`, what recordings used to show), and `wpp cfg`
/// then shows its source lines.
#[test]
fn cpp_functions_have_demangled_names() {
    let p = Project::new();
    std::fs::write(p.path("names.cpp"), NAMES_CPP).expect("write source");
    p.ok("wpp-c++ -O0 -g names.cpp -o names");
    let (stdout, _) = p.record("names");
    assert_eq!(stdout, "42\n");
    let want = [
        ("main", 1),
        ("f(int)", 2),
        ("f(double)", 1),
        ("geo::twice", 3),
        ("Point::Point", 1),
        ("Point::norm", 1),
    ];
    let want: std::collections::BTreeMap<String, usize> =
        want.iter().map(|&(f, n)| (f.to_owned(), n)).collect();
    assert_eq!(entries(&p), want);
    let cfg = |f: &str| String::from_utf8(wpp_ok(&p, &["cfg", "rec.wpp", "--function", f]));
    let by_linkage = cfg("_Z1fd").expect("utf-8");
    assert!(
        by_linkage.starts_with("f(double): ") && by_linkage.contains("(line 5)"),
        "{by_linkage}"
    );
    assert!(cfg("geo::twice")
        .expect("utf-8")
        .starts_with("geo::twice: "));
    assert!(cfg("_ZN3geo5twiceEi")
        .expect("utf-8")
        .starts_with("geo::twice: "));
}

/// A destructor's variants (the deleting one `delete` calls, the base-object one the others
/// call) share their C++ name: each is named with its variant, not by its linkage name, with
/// its hand-counted entries, and `--function` finds it by that name.
#[test]
fn cpp_destructor_variants_are_named_by_their_variant() {
    let p = Project::new();
    std::fs::write(p.path("dtor.cpp"), DTOR_CPP).expect("write source");
    p.ok("wpp-c++ -O0 -g dtor.cpp -o dtor");
    let (stdout, _) = p.record("dtor");
    assert_eq!(stdout, "bye\nbye\n");
    let got = entries(&p);
    assert!(got.keys().all(|f| !f.starts_with("_Z")), "{got:?}");
    // `delete b` enters the deleting destructor, which runs the base-object one, as does `d`'s
    // end; each runs `Base`'s base-object destructor.
    assert_eq!(
        got.get("Derived::~Derived() [deleting]"),
        Some(&1),
        "{got:?}"
    );
    assert_eq!(got.get("Derived::~Derived() [base]"), Some(&2), "{got:?}");
    assert_eq!(got.get("Base::~Base() [base]"), Some(&2), "{got:?}");
    let cfg = wpp_ok(
        &p,
        &["cfg", "rec.wpp", "--function", "Derived::~Derived() [base]"],
    );
    assert!(String::from_utf8(cfg)
        .unwrap()
        .starts_with("Derived::~Derived() [base]: "));
}

/// Each translation unit's copy of a header's `static inline` function is one function of its
/// own: `llvm-link` keeps one `sq` and renames the other `sq.N`, and each is named by its unit
/// instead, with that unit's hand-counted calls (C and C++, compiled and linked separately).
#[test]
fn static_copies_in_several_units_are_named_by_their_unit() {
    let p = Project::new();
    let header = "static inline int sq(int x) { return x * x; }\nint other(int n);\n";
    let other = "#include \"sq.h\"\nint other(int n) { int s = 0; \
                 for (int i = 0; i < n; i++) s += sq(i); return s; }\n";
    let main = "#include <stdio.h>\n#include \"sq.h\"\nint main(void) { int s = 0; \
                for (int i = 0; i < 3; i++) s += sq(i); printf(\"%d %d\\n\", s, other(5)); }\n";
    std::fs::write(p.path("sq.h"), header).expect("write header");
    for (cc, ext, sq) in [("wpp-cc", "c", "sq"), ("wpp-c++", "cpp", "sq(int)")] {
        std::fs::write(p.path(&format!("other.{ext}")), other).expect("write source");
        std::fs::write(p.path(&format!("main.{ext}")), main).expect("write source");
        p.ok(&format!(
            "{cc} -O0 -g -c other.{ext} && {cc} -O0 -g -c main.{ext} && \
             {cc} other.o main.o -o two"
        ));
        let (stdout, _) = p.record("two");
        assert_eq!(stdout, "5 30\n");
        let got = entries(&p);
        assert_eq!(got.get(&format!("{sq} (other.{ext})")), Some(&5), "{got:?}");
        assert_eq!(got.get(&format!("{sq} (main.{ext})")), Some(&3), "{got:?}");
    }
}

const DTOR_CPP: &str = r#"#include <cstdio>
struct Base {
    virtual ~Base() {}
    virtual int f() { return 1; }
};
struct Derived : Base {
    ~Derived() override { std::puts("bye"); }
    int f() override { return 2; }
};
int main() {
    Base *b = new Derived;
    int r = b->f();
    delete b;
    Derived d;
    return r - 2;
}
"#;

/// The standard output of `wpp ARGS`, run in the project directory, which must succeed.
fn wpp_ok(p: &Project, args: &[&str]) -> Vec<u8> {
    let out = Command::new(env!("CARGO_BIN_EXE_wpp"))
        .args(args)
        .current_dir(p.path(""))
        .output()
        .expect("wpp runs");
    assert!(
        out.status.success(),
        "wpp {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// `wpp profile show --json` of a profile, by function name.
fn profile_functions(
    p: &Project,
    file: &str,
) -> std::collections::BTreeMap<String, serde_json::Value> {
    let out = wpp_ok(p, &["profile", "show", "--json", file]);
    let shown: Vec<serde_json::Value> = serde_json::from_slice(&out).expect("json");
    shown
        .into_iter()
        .map(|f| (f["name"].as_str().expect("name").to_owned(), f))
        .collect()
}

/// Path profiles of a program and its instrumented library: every function's paths and counts
/// equal those of the same sources linked into one executable (the oracle: no library), the
/// two `helper`s told apart by module with their hand-counted executions; and `ppp` with that
/// profile as the interesting set gives the same counts.
#[test]
fn shared_libraries_profile_with_their_program() {
    let p = Project::new();
    for (name, text) in [("q.c", SO_LIB_C), ("m.c", SO_MAIN_C), ("dl.c", SO_DLOPEN_C)] {
        std::fs::write(p.path(name), text).expect("write source");
    }
    let run_printing = |exe: &str, out: &str, want: &[u8]| {
        let o = Command::new(p.path(exe))
            .current_dir(p.path(""))
            .env("WPP_OUT", p.path(out))
            .output()
            .expect("program runs");
        assert!(o.status.success() && o.stdout == want, "{exe}: {o:?}");
    };
    let run = |exe: &str, out: &str| run_printing(exe, out, b"72\n");
    p.ok("wpp-cc --wpp-mode=bl -O1 -fPIC -shared q.c -o libq.so");
    p.ok("wpp-cc --wpp-mode=bl -O1 m.c -L. -lq -Wl,-rpath,\"$PWD\" -o m");
    run("m", "lib.blprof");
    p.ok("wpp-cc --wpp-mode=bl -O1 m.c q.c -o one");
    run("one", "one.blprof");
    let (lib, one) = (
        profile_functions(&p, "lib.blprof"),
        profile_functions(&p, "one.blprof"),
    );
    for f in ["main", "q_work"] {
        assert_eq!(lib.get(f), one.get(f), "{f}");
    }
    let executions = |f: &str| lib[f]["executions"].as_u64();
    assert_eq!(
        (executions("libq.so!helper"), executions("m!helper")),
        (Some(7), Some(3))
    );
    assert_eq!(lib.len(), 4, "{:?}", lib.keys());

    // Loaded, closed and loaded again by a program that is not instrumented: the counts of
    // both loads (the first kept when `dlclose` unmapped its table), twice `q_work(5) +
    // q_work(6)`'s.
    p.ok("clang-22 -O1 dl.c -o dl -ldl");
    run_printing("dl", "dl.blprof", b"56\n56\n");
    let dl = profile_functions(&p, "dl.blprof");
    let executions = |f: &str| dl[f]["executions"].as_u64();
    assert_eq!(
        (executions("q_work"), executions("helper")),
        (Some(32), Some(10))
    );

    let lib_built =
        p.ok("wpp-cc --wpp-mode=ppp --wpp-interesting=lib.blprof -O1 -fPIC -shared q.c -o libq.so");
    let exe_built = p.ok(
        "wpp-cc --wpp-mode=ppp --wpp-interesting=lib.blprof -O1 m.c -L. -lq -Wl,-rpath,\"$PWD\" -o m",
    );
    for built in [lib_built, exe_built] {
        assert!(!built.contains("another program"), "{built}");
        assert!(!built.contains("another CFG"), "{built}");
    }
    // Another program given this profile (it names only `main` of its functions): warned.
    std::fs::write(
        p.path("other.c"),
        "int other(int x) { return x > 2 ? x : 0; }\nint main(int c, char **v) { (void)v; return other(c); }\n",
    )
    .expect("write source");
    let other = p.ok("wpp-cc --wpp-mode=ppp --wpp-interesting=lib.blprof -O0 other.c -o other");
    assert!(
        other.contains("warning") && other.contains("another program's"),
        "{other}"
    );
    // A profile of another build of a function (trial 35 H9: taken silently, its path ids
    // naming other paths here): warned, by name.
    p.ok("wpp-cc --wpp-mode=bl -O0 other.c -o other_bl");
    let ran = Command::new(p.path("other_bl"))
        .env("WPP_OUT", p.path("other.blprof"))
        .output()
        .expect("program runs");
    assert_eq!(ran.status.code(), Some(0), "{ran:?}");
    std::fs::write(
        p.path("other.c"),
        "int other(int x) { if (x > 5) return 1; return x > 2 ? x : 0; }\nint main(int c, char **v) { (void)v; return other(c); }\n",
    )
    .expect("write source");
    let rebuilt = p.ok("wpp-cc --wpp-mode=ppp --wpp-interesting=other.blprof -O0 other.c -o other");
    assert!(
        rebuilt.contains("numbered the paths of `other` on another CFG"),
        "{rebuilt}"
    );
    run("m", "lib.pppprof");
    assert_eq!(profile_functions(&p, "lib.pppprof"), lib);
    // Every path that ran was interesting, the qualified `helper`s' included.
    let residual = wpp_ok(&p, &["profile", "residual", "--json", "lib.pppprof"]);
    assert_eq!(String::from_utf8_lossy(&residual).trim(), "{}");
}

/// A switch whose cases share a target (`tests/programs/switch_shared.c`, `case 1: case 2:`)
/// has two edges from one block to another: Ball–Larus numbers two paths through the same
/// blocks, and `wpp profile show` must not print them alike. The block each parallel edge
/// enters carries the edge's position among the switch block's successors (`b1[1]`,
/// `b1[2]`), as `wpp cfg` lists them; the other blocks keep their plain names.
#[test]
fn profile_show_tells_parallel_switch_edges_apart() {
    let p = Project::new();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/programs/switch_shared.c");
    p.ok(&format!("wpp-cc --wpp-mode=bl -O0 {} -o sw", src.display()));
    let o = Command::new(p.path("sw"))
        .current_dir(p.path(""))
        .env("WPP_OUT", p.path("sw.blprof"))
        .output()
        .expect("program runs");
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "1-2: 20, 3: 10, other: 70\n"
    );
    let kind = &profile_functions(&p, "sw.blprof")["kind"];
    let paths = kind["paths"].as_array().expect("paths");
    let blocks: BTreeSet<String> = paths
        .iter()
        .map(|p| {
            let b = p["blocks"].as_array().expect("blocks").iter();
            b.map(|b| b.as_str().expect("a name"))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    assert_eq!((paths.len(), blocks.len()), (4, 4), "{blocks:?}");
    // The two paths of `case 1: case 2:`, ten executions each: the switch block's successors
    // (`wpp cfg`) name the shared target twice, at the positions the paths show.
    let cfg =
        String::from_utf8(wpp_ok(&p, &["cfg", "sw.blprof", "--function", "kind"])).expect("utf-8");
    let successors: Vec<&str> = cfg
        .lines()
        .find_map(|l| l.trim().strip_prefix("b0 ")?.split_once("-> "))
        .expect("b0's successors")
        .1
        .split(' ')
        .collect();
    let shared: Vec<usize> = (0..successors.len())
        .filter(|&i| successors.iter().filter(|&&s| s == successors[i]).count() == 2)
        .collect();
    assert_eq!(shared.len(), 2, "{cfg}");
    for i in shared {
        let named = format!("{}[{i}]", successors[i]);
        let path = paths
            .iter()
            .find(|p| {
                p["blocks"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|b| b == &named[..])
            })
            .unwrap_or_else(|| panic!("no path through {named}: {blocks:?}"));
        assert_eq!(path["count"].as_u64(), Some(10), "{named}");
    }
    let text = String::from_utf8(wpp_ok(&p, &["profile", "show", "sw.blprof"])).expect("utf-8");
    assert!(blocks.iter().all(|b| text.contains(b)), "{text}");
}

/// `libwpp_rt.so` exports the runtime's ABI, the libc functions it interposes and the
/// thread-locals, nothing else: no program symbol can interpose its zstd or Rust std.
#[test]
fn the_shared_runtime_exports_only_its_abi() {
    let p = Project::new();
    p.ok("wpp-cc -O2 -fPIC -shared lib.c -o libq.so");
    let needed = p.ok("readelf -d libq.so >&2");
    let runpath = needed
        .lines()
        .find_map(|l| l.split("runpath: [").nth(1))
        .expect("libq.so has a runpath")
        .trim_end_matches(']');
    let rt = Path::new(runpath).join("libwpp_rt.so");
    let syms = p.ok(&format!("nm -D --defined-only '{}' >&2", rt.display()));
    let foreign: Vec<&str> = syms
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2))
        .filter(|s| !s.starts_with("__wpp_") && !wpp_abi::INTERPOSED.contains(s))
        .collect();
    assert!(foreign.is_empty(), "libwpp_rt.so exports {foreign:?}");
}

/// Command lines clang itself rejects are rejected by `wpp cc` as well, with clang's message.
#[test]
fn fails_where_clang_fails() {
    for (cmd, clang) in [
        (
            "wpp-cc -O2 main.o lib.o lib.o lib2.o -o p",
            "clang-22 -O2 main.o lib.o lib.o lib2.o -o p",
        ),
        ("wpp-cc -O2 main.c -o p", "clang-22 -O2 main.c -o p"),
        ("wpp-cc -O2 nosuch.c -o p", "clang-22 -O2 nosuch.c -o p"),
    ] {
        let p = Project::new();
        p.ok("clang-22 -O2 -c main.c lib.c lib2.c");
        assert!(!p.sh(clang).status.success(), "clang accepted {clang}");
        let out = p.sh(cmd);
        assert!(!out.status.success(), "wpp cc accepted {cmd}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("wpp: error"), "{cmd}: {err}");
        assert!(!err.contains("panicked"), "{cmd}: {err}");
    }
}

/// What clang does alone (`-E`, `-S`, `--version`) is clang's, unchanged.
#[test]
fn passthrough_invocations() {
    let p = Project::new();
    p.ok("wpp-cc --version >version.txt");
    let v = std::fs::read_to_string(p.path("version.txt")).unwrap();
    assert!(v.contains("clang version 22"), "{v}");
    p.ok("wpp-cc -E main.c -o main.i && grep -q lib_twice main.i");
    p.ok("wpp-cc -S -O2 lib.c -o lib.s && grep -q lib_add lib.s");
    // clang's help, then where wpp's own options are, which that help cannot name (G12).
    p.ok("wpp-cc --help >help.txt");
    let help = std::fs::read_to_string(p.path("help.txt")).unwrap();
    assert!(help.starts_with("OVERVIEW: clang"), "{help}");
    assert!(help.trim_end().ends_with("`wpp help cc`"), "{help}");
    let own = Command::new(env!("CARGO_BIN_EXE_wpp"))
        .args(["help", "cc"])
        .output()
        .unwrap();
    let own = String::from_utf8_lossy(&own.stdout);
    assert!(own.contains("--wpp-mode"), "{own}");
    let bad = p.sh("wpp-cc --wpp-mode=blocks main.c");
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("trace-blocks"));
}

/// Without a `-g…` of the user's, `wpp cc` compiles with line tables: a block recording of a
/// program built with plain `-O2` annotates with its source file and lines (lcov `SF:`/`DA:`),
/// the objects' code is the code of a `-g0` build (same disassembly of `.text`), and a `-g0`
/// build keeps no lines.
#[test]
fn line_tables_without_g_leave_code_unchanged() {
    let p = Project::new();
    p.ok("wpp-cc -O2 -c lib.c lib2.c main.c && wpp-cc -O2 main.o lib.o lib2.o -o plain");
    p.ok("wpp-cc -O2 -g0 -c lib2.c -o lib2-g0.o && wpp-cc -O2 -g0 main.c lib.c lib2.c -o nolines");
    let disassemble = |obj: &str| {
        let out = Command::new("objdump")
            .args(["-d", "--no-show-raw-insn", "-j", ".text"])
            .arg(p.path(obj))
            .output()
            .expect("objdump runs");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        // The first lines name the file.
        text.lines().skip(3).map(str::to_owned).collect::<Vec<_>>()
    };
    let (with, without) = (disassemble("lib2.o"), disassemble("lib2-g0.o"));
    assert!(with.len() > 3, "{with:?}");
    let first_difference = with.iter().zip(&without).find(|(a, b)| a != b);
    assert!(
        with.len() == without.len() && first_difference.is_none(),
        "codegen changed: {first_difference:?}"
    );
    let wpp = env!("CARGO_BIN_EXE_wpp");
    let lcov = |exe: &str| {
        let (stdout, _) = p.record(exe);
        assert_eq!(stdout, "twice=42\n");
        let out = Command::new(wpp)
            .args(["annotate", "--format", "lcov"])
            .arg(p.path("rec.wpp"))
            .output()
            .expect("wpp annotate runs");
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let with = lcov("plain");
    assert!(with.contains("SF:") && with.contains("lib.c"), "{with}");
    assert!(with.lines().any(|l| l.starts_with("DA:")), "{with}");
    let without = lcov("nolines");
    assert!(!without.lines().any(|l| l.starts_with("DA:")), "{without}");
}

/// `trace-addr` across modules: the program fills a buffer a library function sums, a library
/// function fills a struct the program reads, and a library `dlopen`ed after the first
/// accesses, closed and opened again, reads what the program stored (markers name the
/// lines).
const SOA_LIB_C: &str = r#"
struct pair { int a; int b; };
int lib_sum(const int *buf, int n) {
    int s = 0;
    for (int i = 0; i < n; i++)
        s += buf[i]; /* L_SUM */
    return s;
}
void lib_fill(struct pair *p, int v) {
    p->a = v; /* S_A */
    p->b = v * 2; /* S_B */
}
"#;
const SOA_LATE_C: &str = r#"
int late_get(const int *p) {
    return *p; /* L_LATE */
}
"#;
const SOA_MAIN_C: &str = r#"
#include <dlfcn.h>
#include <stdio.h>
struct pair { int a; int b; };
int lib_sum(const int *buf, int n);
void lib_fill(struct pair *p, int v);
int buf[4];
int shared_value;
int main(int argc, char **argv) {
    for (int i = 0; i < 4; i++)
        buf[i] = i + argc; /* S_BUF */
    struct pair p;
    lib_fill(&p, argc + 4);
    int s = lib_sum(buf, 4);
    int a = p.a; /* L_A */
    int b = p.b; /* L_B */
    shared_value = s + a; /* S_SHARED */
    int late = 0;
    for (int round = 0; round < 2; round++) {
        void *h = dlopen("./liblate.so", RTLD_NOW);
        if (!h) { printf("%s\n", dlerror()); return 1; }
        int (*get)(const int *) = (int (*)(const int *))dlsym(h, "late_get");
        late += get(&shared_value);
        if (dlclose(h)) return 1;
    }
    printf("%d %d %d %d\n", s, a, b, late);
    return 0;
}
"#;

/// A dependence by the function and line of each end (`None`: an external read).
type DepEnds = (String, u32, Option<(String, u32)>);

/// The line of each `/* NAME */` marker in `sources`.
fn marker_lines(sources: &[&str]) -> std::collections::BTreeMap<String, u32> {
    let mut out = std::collections::BTreeMap::new();
    for src in sources {
        for (i, line) in src.lines().enumerate() {
            if let Some(m) = line.split("/* ").nth(1).and_then(|m| m.strip_suffix(" */")) {
                out.insert(m.to_owned(), i as u32 + 1);
            }
        }
    }
    out
}

/// `wpp deps list --json` of an address trace: every dependence, in the order of its loads.
fn listed_deps(p: &Project, at: &str) -> Vec<DepEnds> {
    let out = wpp_ok(p, &["deps", "list", "--json", at]);
    let end = |v: &serde_json::Value| {
        (
            v["function"].as_str().expect("function").to_owned(),
            v["line"].as_u64().expect("line") as u32,
        )
    };
    String::from_utf8_lossy(&out)
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("json");
            let (f, line) = end(&v["load"]);
            (f, line, (!v["store"].is_null()).then(|| end(&v["store"])))
        })
        .collect()
}

/// Runs `exe` in the project directory recording raw into `name.trace` (and `name.trace.at`);
/// returns its output.
fn run_raw(p: &Project, exe: &str, name: &str) -> String {
    let o = Command::new(p.path(exe))
        .current_dir(p.path(""))
        .env("WPP_OUT", p.path(&format!("{name}.trace")))
        .env("WPP_RAW", "1")
        .output()
        .expect("program runs");
    assert!(o.status.success(), "{exe}: {o:?}");
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// At -O0 a function's parameter is spilled to the stack by a store debug information gives
/// no line: `wpp deps list` names it by its function alone, never as line 0 (`twice:0:0`),
/// while the load of the spilled `x` keeps its line and column.
#[test]
fn parameter_spills_show_no_source_line() {
    let p = Project::new();
    let src = "#include <stdio.h>\n\
               __attribute__((noinline)) int twice(int x) {\n\
               \x20   return x * 2;\n\
               }\n\
               int main(void) { printf(\"%d\\n\", twice(21)); return 0; }\n";
    std::fs::write(p.path("spill.c"), src).expect("write source");
    p.ok("wpp-cc --wpp-mode=trace-addr -O0 -g spill.c -o spill");
    assert_eq!(run_raw(&p, "spill", "spill"), "42\n");
    let listed = String::from_utf8(wpp_ok(&p, &["deps", "list", "spill.trace.at"])).expect("utf-8");
    assert!(
        listed.contains("twice:3:12 load <- ")
            && listed.contains(" twice (no source line) store [4 bytes at +0]"),
        "{listed}"
    );
    assert!(!listed.contains(":0:0"), "{listed}");
}

/// A load inlined from another file keeps its own file: `get_value`'s `*p` (inline.c:3) runs
/// inside `apply`, a function of apply.h. `--load inline.c:3` finds it, as the source shows
/// it; `--load apply.h:3` (a line apply.h has, of another statement) finds no load.
#[test]
fn loads_inlined_from_another_file_are_found_by_their_own_file() {
    let p = Project::new();
    let main = "#include <stdio.h>\n\
                static inline int get_value(int *p) {\n\
                \x20   return *p;\n\
                }\n\
                #include \"apply.h\"\n\
                int main(void) {\n\
                \x20   int x = 41;\n\
                \x20   printf(\"%d\\n\", apply(&x));\n\
                \x20   return 0;\n\
                }\n";
    let header = "__attribute__((noinline))\n\
                  static int apply(int *p) {\n\
                  \x20   return get_value(p) + 1;\n\
                  }\n";
    std::fs::write(p.path("inline.c"), main).expect("write source");
    std::fs::write(p.path("apply.h"), header).expect("write header");
    p.ok("wpp-cc --wpp-mode=trace-addr -O1 -g inline.c -o inline");
    assert_eq!(run_raw(&p, "inline", "inline"), "42\n");
    let at = "inline.trace.at";
    let listed = wpp_ok(&p, &["deps", "list", at, "--load", "inline.c:3"]);
    let listed = String::from_utf8(listed).expect("utf-8");
    // The load's line is inline.c's, in apply (of apply.h): shown with its file.
    assert!(
        listed.contains("apply (inline.c:3:") && listed.contains("main:7:"),
        "{listed}"
    );
    let json = wpp_ok(&p, &["deps", "list", at, "--load", "inline.c:3", "--json"]);
    let first = json.split(|&b| b == b'\n').next().unwrap();
    let dep: serde_json::Value = serde_json::from_slice(first).expect("json");
    assert!(
        dep["load"]["file"].as_str().unwrap().ends_with("inline.c"),
        "{dep}"
    );
    assert!(
        dep["store"]["file"].as_str().unwrap().ends_with("inline.c"),
        "{dep}"
    );
    let out = Command::new(env!("CARGO_BIN_EXE_wpp"))
        .args(["deps", "list", at, "--load", "apply.h:3"])
        .current_dir(p.path(""))
        .output()
        .expect("wpp runs");
    assert!(
        !out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

/// The dependences on stores `wpp deps list --json` lists for `file`, each with its instances,
/// without what only an address trace knows (the bytes).
fn store_deps(p: &Project, file: &str) -> Vec<serde_json::Value> {
    let out = wpp_ok(p, &["deps", "list", "--json", file]);
    String::from_utf8_lossy(&out)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("json"))
        .filter(|v| !v["store"].is_null())
        .map(|mut v| {
            let o = v.as_object_mut().expect("an object");
            for field in ["offset", "bytes", "end", "pieces"] {
                o.remove(field);
            }
            v
        })
        .collect()
}

/// `wpp deps ecf` on a `trace-addr` recording of a program that `longjmp`s out of deep frames
/// (`tests/programs/longjmp.c`; `--mode ewpp` records it too): the frame a `setjmp` returns to
/// again goes on half-way through the `setjmp`'s block, after the `Leave`s of the frames left,
/// with no block event. The eCF is built (it was refused: "the eCF of a recording needs whole
/// blocks"), and `wpp deps list` of it gives exactly the address trace's dependences on
/// stores, instance by instance.
#[test]
fn deps_ecf_follows_a_longjmp() {
    let p = Project::new();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/programs/longjmp.c");
    for opt in ["-O0", "-O1"] {
        let build = format!(
            "wpp-cc --wpp-mode=trace-addr {opt} -g {} -o lj",
            src.display()
        );
        p.ok(&build);
        let out = run_raw(&p, "lj", "lj");
        assert!(out.contains("outer returned 8 (round 3)"), "{out}");
        let ecf = wpp_ok(
            &p,
            &["deps", "ecf", "lj.trace.at", "lj.trace", "-o", "lj.ecf"],
        );
        let ecf = String::from_utf8_lossy(&ecf);
        assert!(
            ecf.contains("recovered equal to the address trace's"),
            "{ecf}"
        );
        let want = store_deps(&p, "lj.trace.at");
        assert!(want.len() > 100, "{opt}: {} dependences", want.len());
        assert_eq!(store_deps(&p, "lj.ecf"), want, "{opt}");
    }
}

/// A project with the library `mq.c`, the late library `late.c` and their program `mm.c`.
fn soa_project() -> Project {
    let p = Project::new();
    for (name, text) in [
        ("mq.c", SOA_LIB_C),
        ("late.c", SOA_LATE_C),
        ("mm.c", SOA_MAIN_C),
    ] {
        std::fs::write(p.path(name), text).expect("write source");
    }
    p
}

/// Instrumented libraries in `trace-addr`: the dependences across the module boundary are the
/// ones written here by hand (a library `dlopen`ed after the first accesses included, whose
/// instructions arrive in a grown memory database, once however often it is loaded); the
/// same sources linked into one executable give the same dependences in the same order; the
/// block trace holds the libraries' functions, balanced; the output is the uninstrumented
/// build's; and a grown database damaged is an error naming it, cut short a warning.
#[test]
fn shared_libraries_record_their_accesses() {
    let p = soa_project();
    let mode = "--wpp-mode=trace-addr -O1 -g";
    p.ok(&format!("wpp-cc {mode} -fPIC -shared mq.c -o libmq.so"));
    p.ok(&format!("wpp-cc {mode} -fPIC -shared late.c -o liblate.so"));
    p.ok(&format!(
        "wpp-cc {mode} mm.c -L. -lmq -Wl,-rpath,\"$PWD\" -ldl -o lib"
    ));
    p.ok(&format!("wpp-cc {mode} mm.c mq.c -ldl -o one"));
    let stdout = run_raw(&p, "lib", "lib");
    assert_eq!(stdout, "10 5 10 30\n");
    assert_eq!(run_raw(&p, "one", "one"), stdout);
    p.ok("mkdir native && clang-22 -O1 -fPIC -shared mq.c -o native/libmq.so");
    p.ok("clang-22 -O1 -fPIC -shared late.c -o native/liblate.so");
    p.ok("clang-22 -O1 mm.c -Lnative -lmq -Wl,-rpath,\"$PWD/native\" -ldl -o native/m");
    let native = Command::new(p.path("native/m"))
        .current_dir(p.path("native"))
        .output()
        .expect("native program runs");
    assert_eq!(String::from_utf8_lossy(&native.stdout), stdout);

    // By hand: each load on a marked line, and the store it reads.
    let m = marker_lines(&[SOA_LIB_C, SOA_LATE_C, SOA_MAIN_C]);
    let dep = |load: (&str, &str), store: (&str, &str)| -> DepEnds {
        (
            load.0.to_owned(),
            m[load.1],
            Some((store.0.to_owned(), m[store.1])),
        )
    };
    let mut want = vec![dep(("lib_sum", "L_SUM"), ("main", "S_BUF")); 4];
    want.extend([
        dep(("main", "L_A"), ("lib_fill", "S_A")),
        dep(("main", "L_B"), ("lib_fill", "S_B")),
        dep(("late_get", "L_LATE"), ("main", "S_SHARED")),
        // Reloaded, the library keeps its ids (a fresh range would qualify its name).
        dep(("late_get", "L_LATE"), ("main", "S_SHARED")),
    ]);
    let loads = [
        ("lib_sum", "L_SUM"),
        ("main", "L_A"),
        ("main", "L_B"),
        ("late_get", "L_LATE"),
    ];
    let marked = |deps: &[DepEnds]| -> Vec<DepEnds> {
        deps.iter()
            .filter(|d| loads.iter().any(|&(f, l)| d.0 == f && d.1 == m[l]))
            .cloned()
            .collect()
    };
    let with_lib = listed_deps(&p, "lib.trace.at");
    assert_eq!(marked(&with_lib), want);
    // Equivalence: one executable of the same sources (the late library still `dlopen`ed).
    assert_eq!(listed_deps(&p, "one.trace.at"), with_lib);
    // The eCF of the recording pairs the block trace's function ids with the address
    // trace's instructions, and fails unless its dependences equal the address trace's.
    wpp_ok(
        &p,
        &["deps", "ecf", "lib.trace.at", "lib.trace", "-o", "lib.ecf"],
    );

    // The block trace: balanced, and holding every module's functions.
    let (db, events) = wpp_paths::trace::read_events(p.path("lib.trace")).expect("block trace");
    let mut depth = 0i64;
    let mut entered = BTreeSet::new();
    for e in &events {
        match e {
            wpp_trace::Event::Enter(f) => {
                depth += 1;
                entered.insert(db.functions[f.0 as usize].name.clone());
            }
            wpp_trace::Event::Leave => depth -= 1,
            _ => {}
        }
        assert!(depth >= 0, "a Leave without its Enter");
    }
    assert_eq!(depth, 0, "unbalanced block trace");
    let want: BTreeSet<String> = ["main", "lib_sum", "lib_fill", "late_get"]
        .map(String::from)
        .into();
    assert_eq!(entered, want);

    // The grown database (a `'D'` record holding late_get's load) cut short, and damaged.
    let bytes = std::fs::read(p.path("lib.trace.at")).expect("address trace");
    let header = 20 + u32::from_le_bytes(bytes[12..16].try_into().unwrap()) as usize;
    let grown: Vec<usize> = (header..bytes.len() - 5)
        .filter(|&i| {
            let len = u32::from_le_bytes(bytes[i + 1..i + 5].try_into().unwrap()) as usize;
            bytes[i] == b'D'
                && bytes.len() >= i + 5 + len
                && postcard::from_bytes::<wpp_deps::MemoryDb>(&bytes[i + 5..i + 5 + len])
                    .is_ok_and(|d| d.program.functions.iter().any(|f| f.name == "late_get"))
        })
        .collect();
    // One: the reload adds no instructions.
    assert_eq!(grown.len(), 1, "grown memory database records at {grown:?}");
    let grown = grown[0];
    let len = u32::from_le_bytes(bytes[grown + 1..grown + 5].try_into().unwrap()) as usize;
    let cut = &bytes[..grown + 5 + len / 2];
    let mut damaged = bytes.clone();
    damaged[grown + 5 + len / 2] ^= 0x5a;
    let list = |name: &str, file: &[u8]| {
        std::fs::write(p.path(name), file).expect("write");
        let out = Command::new(env!("CARGO_BIN_EXE_wpp"))
            .args(["deps", "list"])
            .arg(p.path(name))
            .output()
            .expect("wpp runs");
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        (out.status.success(), err)
    };
    // Cut short (a killed program): the accesses before it, and a warning.
    let (ok, err) = list("cut.at", cut);
    assert!(ok, "{err}");
    let what = "truncated while reading the grown memory database";
    assert!(
        err.starts_with("wpp: warning: ") && err.contains(what),
        "{err}"
    );
    let (ok, err) = list("damaged.at", &damaged);
    assert!(!ok, "{err}");
    let what = "grown memory database (a library loaded while it ran) checksum mismatch";
    assert!(err.contains(what) && err.contains("byte offset"), "{err}");
}

/// Instrumented libraries in `ewpp-filter` and `ewpp`: the filtering run's report names each
/// module; the library and the program, each built with it, find their own pairs; the
/// collection run's dependences, across the module boundary too, are the address trace's in
/// the same order, none unexercised, whatever path names the sources; the library `dlopen`ed
/// after the recording started is refused, saying why, and runs unchanged; a module the report
/// does not name builds with a warning.
#[test]
fn shared_libraries_record_their_dependences_in_ewpp() {
    let p = soa_project();
    let build = |dir: &str, mode: &str| {
        let cc = format!("wpp-cc --wpp-mode={mode} -O1 -g");
        p.ok(&format!(
            "mkdir -p {dir} && cd {dir} && {cc} -fPIC -shared ../mq.c -o libmq.so && \
             {cc} -fPIC -shared ../late.c -o liblate.so && \
             {cc} ../mm.c -L. -lmq -Wl,-rpath,\"$PWD\" -ldl -o m"
        ))
    };
    let run = |dir: &str, out: &str| {
        let o = Command::new(p.path(&format!("{dir}/m")))
            .current_dir(p.path(dir))
            .env("WPP_OUT", p.path(&format!("{dir}/{out}")))
            .env("WPP_RAW", "1")
            .output()
            .expect("program runs");
        assert!(o.status.success(), "{dir}: {o:?}");
        assert_eq!(String::from_utf8_lossy(&o.stdout), "10 5 10 30\n", "{dir}");
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    build("a", "trace-addr");
    run("a", "run.trace");
    // Both builds in one directory, as a user makes them: `-g` names the sources by it.
    build("e", "ewpp-filter");
    let err = run("e", "run.depf");
    let refused = "liblate.so was loaded after the recording started";
    assert!(err.contains(refused), "{err}");
    let bytes = std::fs::read(p.path("e/run.depf")).expect("the filtering run's report");
    let report = wpp_deps::filter::FilterReport::from_bytes(&bytes, "run.depf").unwrap();
    assert_eq!(
        report.modules.len(),
        2,
        "the program and libmq.so: {report:?}"
    );
    std::fs::write(p.path("run.depf"), bytes).expect("write the report");
    // The late library is not in the report: built with it, with a warning, as if no pair
    // were exercised (as configure's test programs are).
    let cc = "cd e && wpp-cc --wpp-mode=ewpp --wpp-exercised=../run.depf -O1 -g";
    let out = p.sh(&format!("{cc} -fPIC -shared ../late.c -o liblate.so"));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let says = "liblate.so: the --exercised report names the 2 modules of its filtering \
                run's process, and not this one";
    assert!(
        err.contains("wpp cc: warning: ") && err.contains(says),
        "{err}"
    );
    p.ok(&format!("{cc} -fPIC -shared ../mq.c -o libmq.so"));
    // The program's source by another path: the same program.
    p.ok(&format!(
        "{cc} \"$PWD/../mm.c\" -L. -lmq -Wl,-rpath,\"$PWD\" -ldl -o m"
    ));
    let err = run("e", "run.trace");
    assert!(err.contains(refused), "{err}");
    assert!(!err.contains("not exercised"), "{err}");

    // Every dependence on a store of the program, but those of the refused library's load.
    let m = marker_lines(&[SOA_LIB_C, SOA_LATE_C, SOA_MAIN_C]);
    let from_at: Vec<DepEnds> = listed_deps(&p, "a/run.trace.at")
        .into_iter()
        .filter(|d| d.2.is_some() && d.0 != "late_get")
        .collect();
    let from_ecf = listed_deps(&p, "e/run.trace");
    assert_eq!(from_ecf, from_at);
    let across = (
        "main".to_owned(),
        m["L_A"],
        Some(("lib_fill".to_owned(), m["S_A"])),
    );
    assert!(from_ecf.contains(&across), "{from_ecf:?}");
    let into_lib = (
        "lib_sum".to_owned(),
        m["L_SUM"],
        Some(("main".to_owned(), m["S_BUF"])),
    );
    assert_eq!(from_ecf.iter().filter(|&d| *d == into_lib).count(), 4);

    // The address trace's report (`wpp deps filter`) names the process, not its modules.
    wpp_ok(&p, &["deps", "filter", "a/run.trace.at", "-o", "at.depf"]);
    let out = p.sh(
        "cd e && wpp-cc --wpp-mode=ewpp --wpp-exercised=../at.depf -O1 -fPIC \
         -shared ../mq.c -o libother.so",
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("the --exercised report is of another program"),
        "{err}"
    );
}

const DLOPEN_THREADS_C: &str = r#"
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
static atomic_int started, stop;
static long worker_sum;
static void *work(void *arg) {
    long v[64] = {0};
    long s = 0;
    for (long i = 0;; i++) {
        v[i & 63] = i; /* S_W */
        s += v[(i * 7) & 63]; /* L_W */
        if (i == 100000) atomic_store(&started, 1);
        if (i > 200000 && atomic_load(&stop)) break;
    }
    worker_sum = s;
    return arg;
}
int shared_value;
int main(void) {
    pthread_t t;
    pthread_create(&t, 0, work, 0);
    while (!atomic_load(&started)) {}
    shared_value = 42; /* S_SHARED */
    void *h = dlopen("./liblate.so", RTLD_NOW);
    if (!h) { printf("%s\n", dlerror()); return 1; }
    int (*get)(const int *) = (int (*)(const int *))dlsym(h, "late_get");
    int late = get(&shared_value);
    atomic_store(&stop, 1);
    pthread_join(t, 0);
    printf("%d %d\n", late, worker_sum > 0);
    return 0;
}
"#;

/// A library `dlopen`ed while another thread keeps writing address-trace chunks: its grown
/// memory database reaches the file before any of its accesses (else the reader meets an
/// unknown instruction), the late load reads `main`'s store, and every load of the worker
/// reads the worker's own store (or the zeroed array: a store of the same loop before it).
#[test]
fn a_library_dlopened_while_another_thread_records() {
    let p = Project::new();
    for (name, text) in [("late.c", SOA_LATE_C), ("th.c", DLOPEN_THREADS_C)] {
        std::fs::write(p.path(name), text).expect("write source");
    }
    let mode = "--wpp-mode=trace-addr -O1 -g";
    p.ok(&format!("wpp-cc {mode} -fPIC -shared late.c -o liblate.so"));
    p.ok(&format!("wpp-cc {mode} -pthread th.c -ldl -o th"));
    assert_eq!(run_raw(&p, "th", "th"), "42 1\n");
    let m = marker_lines(&[SOA_LATE_C, DLOPEN_THREADS_C]);
    let deps = listed_deps(&p, "th.trace.at");
    let late: Vec<_> = deps.iter().filter(|d| d.0 == "late_get").collect();
    let shared = ("main".to_owned(), m["S_SHARED"]);
    assert_eq!(late.len(), 1, "{late:?}");
    assert_eq!(late[0].1, m["L_LATE"]);
    assert_eq!(late[0].2, Some(shared));
    let worker: Vec<_> = deps.iter().filter(|d| d.1 == m["L_W"]).collect();
    assert!(worker.len() > 200_000, "{} worker loads", worker.len());
    for d in worker {
        assert_eq!(d.0, "work");
        let store = d.2.as_ref().expect("the worker reads its own stores");
        assert_eq!(store.0, "work", "{d:?}");
    }
}

/// Trial D9: an `--exercised` or `--interesting` file of another kind (here a trace) is named
/// for what it is, with what the option takes; nothing is built.
#[test]
fn a_wrong_kind_of_exercised_or_interesting_file_is_named() {
    let p = Project::new();
    std::fs::write(p.path("run.trace"), "F main\nB 0\nE\n").expect("write trace");
    for (option, takes) in [
        (
            "--wpp-mode=ewpp --wpp-exercised=run.trace",
            "is a text trace, not a dependence report: --exercised takes the filtering run's report",
        ),
        (
            "--wpp-mode=ppp --wpp-interesting=run.trace",
            "is a text trace, not a bl/ppp path profile: --interesting takes the path profile of a `--mode bl` run",
        ),
    ] {
        let out = p.sh(&format!("wpp-cc {option} -O1 main.c -o m"));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(err.contains(&format!("run.trace {takes}")), "{err}");
        assert!(!p.path("m").exists());
    }
}

/// Trial D8: an eWPP built without `--exercised` (accepted by design: no pair exercised) says
/// so at run time, not that a filtering run missed them, and names the file the recording
/// ends up in: the `.wpp` the finisher makes of the spool, or the raw trace.
#[test]
fn an_ewpp_without_a_report_names_its_output_and_no_filtering_run() {
    let p = Project::new();
    let src = "#include <stdio.h>\nstatic volatile int x;\n\
               int main(void) { x = 5; printf(\"%d\\n\", x); return 0; }\n";
    std::fs::write(p.path("dep.c"), src).expect("write source");
    p.ok("wpp-cc --wpp-mode=ewpp -O1 -g dep.c -o dep");
    for (out, raw) in [("run.wpp", "0"), ("run.trace", "1")] {
        let o = Command::new(p.path("dep"))
            .current_dir(p.path(""))
            .env("WPP_OUT", p.path(out))
            .env("WPP_FINISH", "wait")
            .env("WPP_RAW", raw)
            .output()
            .expect("program runs");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{err}");
        let says = format!(
            "dependences recorded, each marked unexpected in {}: the program was built \
             without a filtering run's report (--wpp-exercised) naming any",
            p.path(out).display()
        );
        assert!(err.contains(&says), "{err}");
        assert!(
            p.path(out).exists() && !err.contains("filtering run (--"),
            "{err}"
        );
    }
}
