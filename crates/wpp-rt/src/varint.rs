//! Encoding a buffer of event words as the trace format's varints (unsigned LEB128, see
//! `wpp_trace::wire`), the raw sink's hot loop: block traces reach 10^9 events per second.
//!
//! Event ids are small, so nearly every word takes one or two bytes, in an order the branch
//! predictor cannot always follow. On x86-64 with SSE4.1 (checked at run time) eight words below
//! 2^14 are encoded at once: packed to 16-bit lanes, each lane turned into its two-byte form
//! (continuation bit set when the word needs the second byte), and the lanes' bytes compacted
//! with one `pshufb` whose control comes from a 256-entry table indexed by the "needs two
//! bytes" mask. Other words, and every word elsewhere, use the byte-at-a-time loop.

/// The longest varint of a `u64`.
pub const MAX_VARINT: usize = 10;

/// Bytes `encode` may write past the encoding of its last word (a 16-byte vector store).
pub const SLACK: usize = 16;

/// Writes each word of `words` as a varint to the start of `out`; returns the bytes used and
/// the bitwise OR of all the words, with which the caller checks every word's tag without a
/// second pass over the buffer (the raw sink's writer thread is busy enough).
///
/// # Panics
/// If `out` is shorter than `words.len() * MAX_VARINT + SLACK`.
pub fn encode(out: &mut [u8], words: &[u64]) -> (usize, u64) {
    assert!(out.len() >= words.len() * MAX_VARINT + SLACK);
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("sse4.1") {
        // SAFETY: the CPU supports SSE4.1 (and so SSSE3); `out` has the room checked above.
        return unsafe { x86::encode(out, words) };
    }
    encode_scalar(out, words)
}

/// The byte-at-a-time encoder: the reference, and the path for other CPUs. Returns what
/// [`encode`] returns.
pub fn encode_scalar(out: &mut [u8], words: &[u64]) -> (usize, u64) {
    let mut n = 0;
    let mut or = 0;
    for &w in words {
        n += encode_one(&mut out[n..], w);
        or |= w;
    }
    (n, or)
}

#[inline]
fn encode_one(out: &mut [u8], w: u64) -> usize {
    if w < 0x80 {
        out[0] = w as u8;
        return 1;
    }
    let mut v = w;
    let mut n = 0;
    while v >= 0x80 {
        out[n] = v as u8 | 0x80;
        v >>= 7;
        n += 1;
    }
    out[n] = v as u8;
    n + 1
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    /// `SHUFFLE[m]`: the `pshufb` control keeping, for lane `i` of eight 16-bit lanes, byte
    /// `2i` and, when bit `i` of `m` is set, byte `2i + 1`; the rest of the output is zeroed.
    static SHUFFLE: [[u8; 16]; 256] = shuffle_table();

    const fn shuffle_table() -> [[u8; 16]; 256] {
        let mut t = [[0x80u8; 16]; 256];
        let mut m = 0;
        while m < 256 {
            let mut k = 0;
            let mut i = 0;
            while i < 8 {
                t[m][k] = 2 * i as u8;
                k += 1;
                if m >> i & 1 == 1 {
                    t[m][k] = 2 * i as u8 + 1;
                    k += 1;
                }
                i += 1;
            }
            m += 1;
        }
        t
    }

    /// # Safety
    /// The CPU must support SSE4.1; `out.len() >= words.len() * MAX_VARINT + SLACK`.
    #[target_feature(enable = "sse4.1")]
    pub unsafe fn encode(out: &mut [u8], words: &[u64]) -> (usize, u64) {
        let mut n = 0;
        let mut or = _mm_setzero_si128();
        let mut groups = words.chunks_exact(8);
        let low7 = _mm_set1_epi16(0x7f);
        let cont = _mm_set1_epi16(0x80);
        let above14 = _mm_set1_epi64x(!0x3fff);
        for g in groups.by_ref() {
            // SAFETY: `g` holds 8 words, read as four unaligned 16-byte vectors.
            let (a, b, c, d) = unsafe {
                let p = g.as_ptr() as *const __m128i;
                (
                    _mm_loadu_si128(p),
                    _mm_loadu_si128(p.add(1)),
                    _mm_loadu_si128(p.add(2)),
                    _mm_loadu_si128(p.add(3)),
                )
            };
            let any = _mm_or_si128(_mm_or_si128(a, b), _mm_or_si128(c, d));
            or = _mm_or_si128(or, any);
            if _mm_testz_si128(any, above14) == 0 {
                for &w in g {
                    n += super::encode_one(&mut out[n..], w);
                }
                continue;
            }
            // Every word is below 2^14: its 32-bit halves pack without saturation to lanes
            // w0, 0, w1, 0, … and then to w0 … w7.
            let w = _mm_packus_epi32(_mm_packus_epi32(a, b), _mm_packus_epi32(c, d));
            let two = _mm_cmpgt_epi16(w, low7);
            let lanes = _mm_or_si128(
                _mm_or_si128(_mm_and_si128(w, low7), _mm_and_si128(two, cont)),
                _mm_slli_epi16(_mm_srli_epi16(w, 7), 8),
            );
            let mask = _mm_movemask_epi8(_mm_packs_epi16(two, two)) as usize & 0xff;
            // SAFETY: the table entry is 16 bytes; `out` has SLACK bytes past the 16 at most
            // that eight two-byte words need, so the 16-byte store at `n` stays inside.
            unsafe {
                let ctl = _mm_loadu_si128(SHUFFLE[mask].as_ptr() as *const __m128i);
                debug_assert!(n + 16 <= out.len());
                _mm_storeu_si128(
                    out.as_mut_ptr().add(n) as *mut __m128i,
                    _mm_shuffle_epi8(lanes, ctl),
                );
            }
            n += 8 + mask.count_ones() as usize;
        }
        let (m, rest) = super::encode_scalar(&mut out[n..], groups.remainder());
        let lanes = _mm_extract_epi64::<0>(or) | _mm_extract_epi64::<1>(or);
        (n + m, lanes as u64 | rest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use wpp_trace::wire::write_varint;

    /// The oracle: the format crate's varint writer.
    fn oracle(words: &[u64]) -> Vec<u8> {
        let mut v = Vec::new();
        for &w in words {
            write_varint(&mut v, w);
        }
        v
    }

    /// The bytes `f` writes for `words`, after checking the OR it returns against a fold.
    fn encoded(f: fn(&mut [u8], &[u64]) -> (usize, u64), words: &[u64]) -> Vec<u8> {
        let mut out = vec![0xaa; words.len() * MAX_VARINT + SLACK];
        let (n, or) = f(&mut out, words);
        assert_eq!(or, words.iter().fold(0, |a, &w| a | w), "{words:?}");
        out.truncate(n);
        out
    }

    #[test]
    fn every_length_boundary_matches_the_format() {
        let mut words = vec![0, u64::MAX];
        for bits in 1..64 {
            words.extend([(1u64 << bits) - 1, 1 << bits, (1 << bits) + 1]);
        }
        assert_eq!(encoded(encode, &words), oracle(&words));
        assert_eq!(encoded(encode_scalar, &words), oracle(&words));
    }

    /// Every "needs two bytes" mask of a group of eight.
    #[test]
    fn every_group_mask_matches_the_format() {
        for m in 0..256u64 {
            let words: Vec<u64> = (0..8)
                .map(|i| {
                    if m >> i & 1 == 1 {
                        0x80 + i * 1000
                    } else {
                        i * 9
                    }
                })
                .collect();
            assert_eq!(encoded(encode, &words), oracle(&words), "mask {m:#x}");
        }
    }

    proptest! {
        #[test]
        fn matches_the_format_varints(
            words in prop::collection::vec(
                prop_oneof![
                    8 => 0u64..0x4000,
                    1 => 0u64..1 << 21,
                    1 => any::<u64>(),
                    1 => (0u64..0x4000).prop_map(|w| w | 1 << 32),
                    1 => (0u64..0x4000).prop_map(|w| w | 1 << 63),
                ],
                0..100,
            )
        ) {
            prop_assert_eq!(encoded(encode, &words), oracle(&words));
            prop_assert_eq!(encoded(encode_scalar, &words), oracle(&words));
        }
    }
}
