//! The papers' worked examples, compared with the grammars the papers print (up to renaming).

mod common;

use common::{canon, compress_bytes, parse};
use wpp_grammar::check::check;
use wpp_grammar::Algorithm::{Sequitur, Sequitur1};

fn assert_grammar(algorithm: wpp_grammar::Algorithm, input: &str, expected: &str) {
    let g = compress_bytes(algorithm, input.as_bytes());
    check(&g).unwrap();
    assert_eq!(
        canon(&g, 0),
        canon(&parse(expected), 0),
        "{algorithm} on {input}"
    );
}

/// Larus §3 prints `S → AAB, A → BB, B → abc` and counts "11 versus 15" symbols, which fits
/// five repetitions of `abc` (fifteen characters); the text extraction shows four.
#[test]
fn larus_section3_abc_five_times() {
    assert_grammar(Sequitur, "abcabcabcabcabc", "S -> AAB; A -> BB; B -> abc");
}

/// The issue's `abcabcabcabc`: four repetitions nest as `(abc abc)(abc abc)`.
#[test]
fn larus_section3_abc_four_times() {
    assert_grammar(Sequitur, "abcabcabcabc", "S -> AA; A -> BB; B -> abc");
}

/// Larus §3.2: SEQUITUR(1) reduces both runs of `11111` the same way.
#[test]
fn larus_section32_sequitur1() {
    assert_grammar(Sequitur1, "11111211111", "S -> C2C; A -> 11; C -> AA1");
}

/// Larus §3.2: plain SEQUITUR represents the two runs differently (`AA1` then `BA`).
#[test]
fn larus_section32_plain_sequitur_differs() {
    assert_grammar(Sequitur, "11111211111", "S -> AB2BA; A -> 11; B -> A1");
    let plain = compress_bytes(Sequitur, b"11111211111");
    let one = compress_bytes(Sequitur1, b"11111211111");
    assert_ne!(canon(&plain, 0), canon(&one, 0));
}

/// Tallam–Gupta §4.1.
#[test]
fn tallam_gupta_section41() {
    for algorithm in [Sequitur, Sequitur1] {
        assert_grammar(algorithm, "abcabcabc", "S -> AAA; A -> abc");
    }
}

/// Larus §3.1's running example: after `abcdbc` the rules are `A → ab`… ; the final grammar
/// for `abcabdabcabd` is `S → DD` with `D → abcabd` after B and C are inlined.
#[test]
fn larus_section31_rule_utility_example() {
    assert_grammar(Sequitur, "abcabdabcabd", "S -> BB; A -> ab; B -> AcAd");
}
