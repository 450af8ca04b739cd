//! The `REFS` stream's context-mixing coder (stream codec 2, `MODEL`).
//!
//! Each reference is coded as its rule id `q` (not the distance the raw stream stores), `B`
//! bits most significant first, where `B` is the fewest bits that hold `rules − 1`. Every bit is
//! coded by a binary arithmetic coder with a probability that a logistic mixer (as in lpaq1)
//! makes of five predictions, each an adaptive counter found by hashing the bits of `q` coded
//! so far with one context:
//!
//! | input | context |
//! |---|---|
//! | 0 | none (the rule's frequency) |
//! | 1 | `t1`: the last terminal of the symbol before the reference, in expansion order |
//! | 2 | `s1`: the symbol before the reference (a terminal or a rule) |
//! | 3 | `t1`, `t2` (the last terminal of the symbol before that) |
//! | 4 | `s1`, `s2` |
//!
//! "Before, in expansion order" is within the body; at the start of a body defined inline, it is
//! what precedes the body's use in its parent, so the contexts follow the trace (the next path a
//! program takes depends on the last one). The mixer's weights are chosen by the bit's position.
//! Encoder and decoder walk the rule structure (`LENS`, `KINDS`, `TERMS`, already decoded) the
//! same way and keep the same model, so the stream holds nothing but the coder's bytes.
//!
//! # The arithmetic coder
//!
//! The carry-less binary coder of lpaq1 (Mahoney): a 32-bit interval `[low, high]`, split at
//! `low + (high − low) / 4096 × p` for a 12-bit probability `p` of a one; when the top bytes of
//! `low` and `high` agree, the byte is output. At the end the encoder writes `low`'s four bytes.
//! The decoder reads four bytes first and one per output byte, so a well-formed stream is used
//! up exactly when the last bit is decoded: the reader checks that, so a truncated stream (the
//! decoder would read past its end; missing bytes read as zero) or one with bytes left over is
//! an error, never a hang — the number of bits decoded is fixed by the counts.
//!
//! Hash tables hold `2^k` 32-bit counters each, with `k` from the number of references (at
//! most [`MAX_TABLE_BITS`]), so the model's memory is bounded by the stream's declared size,
//! itself bounded by the bytes in the file.

/// The most table bits: five tables of 2^22 counters take 80 MiB.
pub(super) const MAX_TABLE_BITS: u32 = 22;
const MIN_TABLE_BITS: u32 = 12;
const INPUTS: usize = 6;
/// Counters stop slowing their adaptation after this many updates.
const COUNT_LIMIT: u32 = 255;
/// Mixer learning rate.
const LEARNING_RATE: i32 = 6;

/// `squash(d) = 4096 / (1 + e^−d/256)`, by interpolating a table (lpaq1).
fn squash(d: i32) -> i32 {
    const T: [i32; 33] = [
        1, 2, 3, 6, 10, 16, 27, 45, 73, 120, 194, 310, 488, 747, 1101, 1546, 2047, 2549, 2994,
        3348, 3607, 3785, 3901, 3975, 4022, 4050, 4068, 4079, 4085, 4089, 4092, 4093, 4094,
    ];
    if d > 2047 {
        return 4095;
    }
    if d < -2047 {
        return 1;
    }
    let w = d & 127;
    let i = ((d >> 7) + 16) as usize;
    (T[i] * (128 - w) + T[i + 1] * w + 64) >> 7
}

/// The inverse of [`squash`] over 12-bit probabilities.
fn stretch_table() -> Vec<i16> {
    let mut t = vec![0i16; 4096];
    let mut pi = 0usize;
    for x in -2047..=2047 {
        let v = squash(x) as usize;
        for slot in t.iter_mut().take(v + 1).skip(pi) {
            *slot = x as i16;
        }
        pi = pi.max(v + 1);
    }
    for slot in t.iter_mut().skip(pi) {
        *slot = 2047;
    }
    t
}

/// The context of one reference: last terminals and symbols of the two symbols before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Context {
    pub(super) t1: u64,
    pub(super) t2: u64,
    pub(super) s1: u64,
    pub(super) s2: u64,
}

impl Context {
    /// Nothing before.
    pub(super) const NONE: Context = Context {
        t1: u64::MAX,
        t2: u64::MAX,
        s1: u64::MAX,
        s2: u64::MAX,
    };

    /// The context after a symbol `s` whose expansion ends with terminal `t`.
    #[inline]
    pub(super) fn then(self, s: u64, t: u64) -> Context {
        Context {
            t1: t,
            t2: self.t1,
            s1: s,
            s2: self.s1,
        }
    }
}

#[inline]
fn hash(a: u64, b: u64) -> u64 {
    (a ^ b.wrapping_mul(0x9E37_79B9_7F4A_7C15))
        .rotate_left(29)
        .wrapping_mul(0xD6E8_FEB8_6659_FD93)
}

/// The model: counters, mixer weights, and the bits per rule id.
pub(super) struct Model {
    bits: u32,
    shift: u32,
    tables: [Vec<u32>; INPUTS - 1],
    weights: Vec<[i32; INPUTS]>,
    stretch: Vec<i16>,
    /// Reciprocals for counter adaptation: `65536 / (n + 1.5)`.
    rate: [u32; COUNT_LIMIT as usize + 1],
    // Per bit, between predict and update:
    index: [usize; INPUTS - 1],
    st: [i32; INPUTS],
    p: i32,
}

impl Model {
    /// A model for ids below `rules`, sized for `refs` references.
    pub(super) fn new(rules: usize, refs: usize) -> Model {
        let bits = usize::BITS - rules.saturating_sub(1).leading_zeros();
        let want = (refs as u64 * u64::from(bits.max(1))).max(1);
        let table_bits = (64 - want.leading_zeros()).clamp(MIN_TABLE_BITS, MAX_TABLE_BITS);
        let mut rate = [0u32; COUNT_LIMIT as usize + 1];
        for (n, r) in rate.iter_mut().enumerate() {
            *r = (131_072 / (2 * n as u32 + 3)).max(1);
        }
        Model {
            bits,
            shift: 64 - table_bits,
            tables: std::array::from_fn(|_| vec![1 << 31; 1 << table_bits]),
            weights: vec![[1 << 14; INPUTS]; bits.max(1) as usize],
            stretch: stretch_table(),
            rate,
            index: [0; INPUTS - 1],
            st: [0; INPUTS],
            p: 2048,
        }
    }

    /// The probability (12 bits) that the next bit is one; `node` is the bits coded so far
    /// after a leading one, `k` how many.
    #[inline]
    fn predict(&mut self, bases: &[u64; INPUTS - 1], node: u64, k: usize) -> u32 {
        let mut dot = 0i64;
        let w = &self.weights[k];
        for i in 0..INPUTS - 1 {
            let at = (hash(bases[i], node) >> self.shift) as usize;
            self.index[i] = at;
            let st = i32::from(self.stretch[(self.tables[i][at] >> 20) as usize]);
            self.st[i] = st;
            dot += i64::from(st) * i64::from(w[i]);
        }
        self.st[INPUTS - 1] = 256;
        dot += 256 * i64::from(w[INPUTS - 1]);
        let d = (dot >> 16).clamp(-2047, 2047) as i32;
        self.p = squash(d).clamp(1, 4095);
        self.p as u32
    }

    #[inline]
    fn update(&mut self, bit: u32, k: usize) {
        let err = (((bit as i32) << 12) - self.p) * LEARNING_RATE;
        let w = &mut self.weights[k];
        for i in 0..INPUTS {
            w[i] = (w[i] + ((self.st[i] * err) >> 10)).clamp(-(1 << 22), 1 << 22);
        }
        let target: i64 = if bit == 1 { (1 << 22) - 1 } else { 0 };
        for i in 0..INPUTS - 1 {
            let e = &mut self.tables[i][self.index[i]];
            let n = *e & 1023;
            let p = i64::from(*e >> 10);
            let p = p + (((target - p) * i64::from(self.rate[n as usize])) >> 16);
            *e = ((p as u32) << 10) | (n + 1).min(COUNT_LIMIT);
        }
    }

    fn bases(c: &Context) -> [u64; INPUTS - 1] {
        [
            0x1234_5678,
            hash(1, c.t1),
            hash(2, c.s1),
            hash(hash(3, c.t1), c.t2),
            hash(hash(4, c.s1), c.s2),
        ]
    }

    /// Codes rule id `q` in context `c`.
    pub(super) fn encode(&mut self, e: &mut Encoder, c: &Context, q: u32) {
        let bases = Model::bases(c);
        let mut node = 1u64;
        for k in 0..self.bits as usize {
            let bit = (q >> (self.bits as usize - 1 - k)) & 1;
            let p = self.predict(&bases, node, k);
            e.bit(bit, p);
            self.update(bit, k);
            node = (node << 1) | u64::from(bit);
        }
    }

    /// Decodes a rule id in context `c` (below `2^bits`; the caller checks the bound).
    pub(super) fn decode(&mut self, d: &mut Decoder<'_>, c: &Context) -> u32 {
        let bases = Model::bases(c);
        let mut node = 1u64;
        for k in 0..self.bits as usize {
            let p = self.predict(&bases, node, k);
            let bit = d.bit(p);
            self.update(bit, k);
            node = (node << 1) | u64::from(bit);
        }
        (node - (1 << self.bits)) as u32
    }
}

/// The arithmetic encoder.
pub(super) struct Encoder {
    low: u32,
    high: u32,
    out: Vec<u8>,
}

impl Encoder {
    pub(super) fn new() -> Encoder {
        Encoder {
            low: 0,
            high: u32::MAX,
            out: Vec::new(),
        }
    }

    /// Codes `bit` whose probability of being one is `p / 4096`, `0 < p < 4096`.
    #[inline]
    fn bit(&mut self, bit: u32, p: u32) {
        let mid = self.low + ((self.high - self.low) >> 12) * p;
        if bit == 1 {
            self.high = mid;
        } else {
            self.low = mid + 1;
        }
        while (self.low ^ self.high) & 0xff00_0000 == 0 {
            self.out.push((self.high >> 24) as u8);
            self.low <<= 8;
            self.high = (self.high << 8) | 0xff;
        }
    }

    pub(super) fn finish(mut self) -> Vec<u8> {
        self.out.extend_from_slice(&self.low.to_be_bytes());
        self.out
    }
}

/// The arithmetic decoder.
pub(super) struct Decoder<'a> {
    low: u32,
    high: u32,
    x: u32,
    data: &'a [u8],
    /// Bytes read, counting those past the end (read as zero).
    read: usize,
}

impl<'a> Decoder<'a> {
    pub(super) fn new(data: &'a [u8]) -> Decoder<'a> {
        let mut d = Decoder {
            low: 0,
            high: u32::MAX,
            x: 0,
            data,
            read: 0,
        };
        for _ in 0..4 {
            d.x = (d.x << 8) | u32::from(d.next());
        }
        d
    }

    #[inline]
    fn next(&mut self) -> u8 {
        let b = self.data.get(self.read).copied().unwrap_or(0);
        self.read += 1;
        b
    }

    #[inline]
    fn bit(&mut self, p: u32) -> u32 {
        let mid = self.low + ((self.high - self.low) >> 12) * p;
        let bit = u32::from(self.x <= mid);
        if bit == 1 {
            self.high = mid;
        } else {
            self.low = mid + 1;
        }
        while (self.low ^ self.high) & 0xff00_0000 == 0 {
            self.low <<= 8;
            self.high = (self.high << 8) | 0xff;
            self.x = (self.x << 8) | u32::from(self.next());
        }
        bit
    }

    /// Bytes read so far (more than the stream holds if it was cut short).
    pub(super) fn read(&self) -> usize {
        self.read
    }

    /// Whether the decoder has read past the end of its data.
    pub(super) fn overran(&self) -> bool {
        self.read > self.data.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stretch_inverts_squash() {
        let st = stretch_table();
        for d in (-2047..=2047).step_by(7) {
            let p = squash(d);
            assert!((squash(i32::from(st[p as usize])) - p).abs() <= 1, "{d}");
        }
    }

    #[test]
    fn ids_round_trip() {
        let ids: Vec<u32> = (0..5000u32).map(|i| (i * 7919 + i / 3) % 1000).collect();
        let ctx = |i: usize| Context::NONE.then(i as u64 % 5, ids[i.saturating_sub(1)] as u64);
        let mut m = Model::new(1000, ids.len());
        let mut e = Encoder::new();
        for (i, &q) in ids.iter().enumerate() {
            m.encode(&mut e, &ctx(i), q);
        }
        let bytes = e.finish();
        let mut m = Model::new(1000, ids.len());
        let mut d = Decoder::new(&bytes);
        for (i, &q) in ids.iter().enumerate() {
            assert_eq!(m.decode(&mut d, &ctx(i)), q);
        }
        assert_eq!(d.read(), bytes.len());
    }
}
