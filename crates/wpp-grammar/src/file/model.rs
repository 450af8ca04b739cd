//! The `REFS` stream's context-mixing coder (stream codec 2, `MODEL`).
//!
//! Each reference is coded as its rule id `q` (not the distance the raw stream stores), `B`
//! bits most significant first, where `B` is the fewest bits that hold `rules − 1`. Every bit is
//! coded by a binary arithmetic coder with a probability that a logistic mixer (as in lpaq1)
//! makes of eight predictions, each an adaptive counter found by hashing the bits of `q` coded
//! so far with one context:
//!
//! | input | context |
//! |---|---|
//! | 0 | none (the rule's frequency) |
//! | 1 | `t1`: the last terminal before the reference, in expansion order |
//! | 2 | `s1`: the symbol before the reference (a terminal or a rule) |
//! | 3 | `t1`, `u2` (the last terminal of the symbol before `s1`) |
//! | 4 | `s1`, `s2` (the symbol before `s1`) |
//! | 5 | `f`, `t1`, where `f` is the function the reference is in |
//! | 6 | `f`, `t1`, `u2` |
//! | 7 | `f` |
//!
//! "Before, in expansion order" is within the body; at the start of a body defined inline, it is
//! what precedes the body's use in its parent, so the contexts follow the trace (the next path a
//! program takes depends on the last one, and path and block ids are local to a function, hence
//! `f`). `f` comes from a call stack the walk keeps: each rule's net effect on it (frames
//! popped, frames pushed, the function of the last one pushed) is known once it is defined, so
//! a reference moves the stack at once; functions deeper than the walk knows are "unknown".
//! A segmented file (version 4) writes its alphabet after its segments, so its segments are
//! coded with no terminal known as `Enter` or `Leave` (`f` always unknown). The mixer's weights
//! are chosen by the bit's position and by how often input 7's counter has been seen (0, 1–3,
//! 4–15, more). Encoder and decoder walk the rule structure (`LENS`, `KINDS`, `TERMS`, already
//! decoded) the same way and keep the same model, so the stream holds nothing but the coder's
//! bytes.
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
//! Each input's counters are a hash table of `2^k` 32-bit counters (a 22-bit probability and
//! a 10-bit count that sets the adaptation rate, `1 / (count + 1.5)`), in blocks of 16 (one
//! cache line) for each group of four bits, with `k` from the number of values coded and at
//! most [`MAX_TABLE_BITS`], and small enough that the tables take at most 1024 times the coded
//! stream's bytes (or 128 KiB): the allocation is bounded by the bytes in the file, as zstd's
//! output is. The encoder finds that size by coding again if its output turns out too short
//! for the tables it used ([`settle`]). Nothing depends on the platform: integer arithmetic only.

/// The most table bits: eight tables of 2^22 counters take 128 MiB.
pub(super) const MAX_TABLE_BITS: u32 = 22;
const MIN_TABLE_BITS: u32 = 12;
const INPUTS: usize = 9;
/// Counters stop slowing their adaptation after this many updates.
const COUNT_LIMIT: u32 = 127;
/// Mixer learning rate, in 4096ths.
const LEARNING_RATE: i32 = 2;
/// The input whose counter's count selects the mixer's weights.
const SELECTOR: usize = 7;

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

/// The context of one reference.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Context {
    /// The last terminal before the reference, in expansion order.
    pub(super) t1: u64,
    /// The last terminal of the symbol before the previous one.
    pub(super) u2: u64,
    /// The function the reference is in, as far as the walk knows ([`UNKNOWN`] if not).
    pub(super) func: u64,
    /// The symbol before the reference (a rule id, or a terminal plus 2^40).
    pub(super) s1: u64,
    /// The symbol before that.
    pub(super) s2: u64,
}

impl Context {
    /// Nothing before.
    pub(super) const NONE: Context = Context {
        t1: u64::MAX,
        u2: u64::MAX,
        func: UNKNOWN,
        s1: u64::MAX,
        s2: u64::MAX,
    };

    /// The context after a symbol `s` whose expansion ends with terminal `t1`, in function
    /// `func`.
    #[inline]
    pub(super) fn then(self, s: u64, t1: u64, func: u64) -> Context {
        Context {
            t1,
            u2: self.t1,
            func,
            s1: s,
            s2: self.s1,
        }
    }
}

/// A function not known.
pub(super) const UNKNOWN: u64 = u64::MAX;
/// A terminal's class for the call stack: `LEAVE`, `OTHER`, or the function an `Enter` enters.
pub(super) const LEAVE: u64 = u64::MAX - 1;
pub(super) const OTHER: u64 = u64::MAX - 2;
/// The deepest call stack the walk keeps (deeper frames are forgotten).
const MAX_DEPTH: usize = 256;

/// Each terminal's class: the function of an `Enter`, [`LEAVE`], or [`OTHER`].
pub(super) fn classes(a: &wpp_trace::Alphabet) -> Vec<u64> {
    a.events()
        .iter()
        .map(|e| match e {
            wpp_trace::Event::Enter(f) => u64::from(f.0),
            wpp_trace::Event::Leave => LEAVE,
            _ => OTHER,
        })
        .collect()
}

/// What a symbol does to the call stack: pops `pops` frames, then pushes `pushes`, the last
/// of them `top` ([`UNKNOWN`] if not known or none).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Effect {
    pops: u32,
    pushes: u32,
    top: u64,
}

impl Effect {
    pub(super) const NONE: Effect = Effect {
        pops: 0,
        pushes: 0,
        top: UNKNOWN,
    };

    /// A terminal's effect, by its class.
    pub(super) fn of(class: u64) -> Effect {
        match class {
            LEAVE => Effect {
                pops: 1,
                ..Effect::NONE
            },
            OTHER => Effect::NONE,
            f => Effect {
                pops: 0,
                pushes: 1,
                top: f,
            },
        }
    }

    /// This effect, then `next`'s.
    pub(super) fn then(self, next: Effect) -> Effect {
        if next.pops <= self.pushes {
            let top = if next.pushes > 0 {
                next.top
            } else if next.pops == 0 {
                self.top
            } else {
                UNKNOWN
            };
            Effect {
                pops: self.pops,
                pushes: (self.pushes - next.pops).saturating_add(next.pushes),
                top,
            }
        } else {
            Effect {
                pops: self.pops.saturating_add(next.pops - self.pushes),
                pushes: next.pushes,
                top: if next.pushes > 0 { next.top } else { UNKNOWN },
            }
        }
    }
}

/// The call stack as the walk knows it: functions entered and not left, newest last, at
/// most [`MAX_DEPTH`].
#[derive(Default)]
pub(super) struct CallStack(std::collections::VecDeque<u64>);

impl CallStack {
    /// Applies `e`; at most [`MAX_DEPTH`] steps whatever its counts.
    pub(super) fn apply(&mut self, e: Effect) {
        for _ in 0..(e.pops as usize).min(self.0.len()) {
            self.0.pop_back();
        }
        let pushes = (e.pushes as usize).min(MAX_DEPTH);
        for i in 0..pushes {
            if self.0.len() == MAX_DEPTH {
                self.0.pop_front();
            }
            self.0
                .push_back(if i + 1 == pushes { e.top } else { UNKNOWN });
        }
    }

    pub(super) fn clear(&mut self) {
        self.0.clear();
    }

    pub(super) fn top(&self) -> u64 {
        self.0.back().copied().unwrap_or(UNKNOWN)
    }
}

#[inline]
fn hash(a: u64, b: u64) -> u64 {
    (a ^ b.wrapping_mul(0x9E37_79B9_7F4A_7C15))
        .rotate_left(29)
        .wrapping_mul(0xD6E8_FEB8_6659_FD93)
}

/// Codes one bit: the encoder codes and returns `bit`, the decoder ignores it and returns the
/// bit it decodes.
pub(super) trait BitCoder {
    fn code(&mut self, bit: u32, p: u32) -> u32;
}

/// Bits of each of the model's tables for `values` values of `bits` bits coded in `coded` bytes:
/// about one counter per bit coded, at least 2^12, at most 2^22, and at most `32 × coded`, so the
/// eight tables (4 bytes a counter) take at most 1024 times the coded bytes in the file.
pub(super) fn table_bits(bits: u32, values: usize, coded: usize) -> u32 {
    let want = (values as u64)
        .saturating_mul(u64::from(bits.max(1)))
        .max(1);
    let cap = 63 - (coded as u64).saturating_mul(32).max(1).leading_zeros();
    (64 - want.leading_zeros())
        .clamp(MIN_TABLE_BITS, MAX_TABLE_BITS)
        .min(cap.max(MIN_TABLE_BITS))
}

/// Runs `encode(coded)`, which codes with tables sized for a coded length `coded`, until the
/// length it gives sizes the tables the same way (so a decoder, which knows only the length,
/// agrees); `None` if that does not settle in four tries.
pub(super) fn settle(
    bits: u32,
    values: usize,
    mut encode: impl FnMut(usize) -> Option<Vec<u8>>,
) -> Option<Vec<u8>> {
    let mut guess = usize::MAX;
    for _ in 0..4 {
        let out = encode(guess)?;
        if table_bits(bits, values, out.len()) == table_bits(bits, values, guess) {
            return Some(out);
        }
        guess = out.len();
    }
    None
}

/// The model: counters, mixer weights, and the bits per rule id and per terminal.
pub(super) struct Model {
    rule_bits: u32,
    /// Bits of a block index: a block is 16 counters (one cache line), for 4 bits of a value.
    shift: u32,
    tables: [Vec<u32>; INPUTS - 1],
    /// Per part and bit position.
    weights: Vec<[i32; INPUTS]>,
    stretch: Vec<i16>,
    /// Reciprocals for counter adaptation: `65536 / (n + 1.5)`.
    rate: [u32; COUNT_LIMIT as usize + 1],
    // Per bit, between predict and update:
    block: [usize; INPUTS - 1],
    index: [usize; INPUTS - 1],
    st: [i32; INPUTS],
    p: i32,
    /// The weight set in use.
    wsel: usize,
}

impl Model {
    /// A model for ids below `rules`, sized for `refs` references.
    /// `coded` is the coded stream's length (see [`table_bits`]).
    pub(super) fn new(rules: usize, refs: usize, coded: usize) -> Model {
        Model::with_bits(
            usize::BITS - rules.saturating_sub(1).leading_zeros(),
            refs,
            coded,
        )
    }

    /// A model for `refs` values of `rule_bits` bits coded in `coded` bytes.
    fn with_bits(rule_bits: u32, refs: usize, coded: usize) -> Model {
        let table_bits = table_bits(rule_bits, refs, coded);
        let mut rate = [0u32; COUNT_LIMIT as usize + 1];
        for (n, r) in rate.iter_mut().enumerate() {
            *r = (131_072 / (2 * n as u32 + 3)).max(1);
        }
        Model {
            rule_bits,
            shift: 64 - (table_bits - 4),
            tables: std::array::from_fn(|_| vec![1 << 31; 1 << table_bits]),
            weights: vec![[1 << 14; INPUTS]; 32 * 4],
            stretch: stretch_table(),
            rate,
            block: [0; INPUTS - 1],
            index: [0; INPUTS - 1],
            st: [0; INPUTS],
            p: 2048,
            wsel: 0,
        }
    }

    /// The probability (12 bits) that bit `k` of a value is one; `node` is the bits coded so
    /// far after a leading one.
    #[inline]
    fn predict(&mut self, bases: &[u64; INPUTS - 1], node: u64, k: usize) -> u32 {
        if k.is_multiple_of(4) {
            for (block, &base) in self.block.iter_mut().zip(bases) {
                *block = ((hash(base, node) >> self.shift) as usize) << 4;
            }
        }
        // The bits of this group of four coded so far, after a leading one: 1..=15.
        let within = ((node & ((1 << (k % 4)) - 1)) | (1 << (k % 4))) as usize;
        let mut dot = 0i64;
        for i in 0..INPUTS - 1 {
            self.index[i] = self.block[i] | within;
        }
        let seen = self.tables[SELECTOR][self.index[SELECTOR]] & 1023;
        let w = k * 4
            + match seen {
                0 => 0,
                1..=3 => 1,
                4..=15 => 2,
                _ => 3,
            };
        self.wsel = w;
        let w = &self.weights[w];
        for (i, &weight) in w.iter().enumerate().take(INPUTS - 1) {
            let at = self.index[i];
            let st = i32::from(self.stretch[(self.tables[i][at] >> 20) as usize]);
            self.st[i] = st;
            dot += i64::from(st) * i64::from(weight);
        }
        self.st[INPUTS - 1] = 256;
        dot += 256 * i64::from(w[INPUTS - 1]);
        let d = (dot >> 16).clamp(-2047, 2047) as i32;
        self.p = squash(d).clamp(1, 4095);
        self.p as u32
    }

    #[inline]
    fn update(&mut self, bit: u32) {
        let err = (((bit as i32) << 12) - self.p) * LEARNING_RATE;
        let w = &mut self.weights[self.wsel];
        for (weight, &st) in w.iter_mut().zip(&self.st) {
            *weight = (*weight + ((st * err) >> 12)).clamp(-(1 << 22), 1 << 22);
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

    /// Codes the `bits` low bits of `value` (the decoder's is ignored), most significant
    /// first, with contexts `bases`.
    fn code_value<C: BitCoder>(
        &mut self,
        coder: &mut C,
        bases: &[u64; INPUTS - 1],
        bits: u32,
        value: u32,
    ) -> u32 {
        let mut node = 1u64;
        for k in 0..bits as usize {
            let p = self.predict(bases, node, k);
            let bit = coder.code((value >> (bits as usize - 1 - k)) & 1, p);
            self.update(bit);
            node = (node << 1) | u64::from(bit);
        }
        (node - (1 << bits)) as u32
    }

    /// Codes a reference to rule `rule` (ignored by the decoder) in context `c`; returns it
    /// (decoded, for the decoder: below `2^bits`, the caller checks the bound).
    pub(super) fn code<C: BitCoder>(&mut self, coder: &mut C, c: &Context, rule: u32) -> u32 {
        let t1 = c.t1;
        let f = c.func;
        let bases = [
            0x1234_5678,
            hash(1, t1),
            hash(2, c.s1),
            hash(hash(3, t1), c.u2),
            hash(hash(4, c.s1), c.s2),
            hash(hash(5, f), t1),
            hash(hash(hash(6, f), t1), c.u2),
            hash(7, f),
        ];
        self.code_value(coder, &bases, self.rule_bits, rule)
    }
}

/// `KINDS` (codec 2): each byte, below 4, as two bits in the context of the bytes before it
/// (orders 1, 2, 3, 4, 6, 8, 12 and 16, hashed).
pub(super) struct KindsModel {
    model: Model,
    /// The kinds before, two bits each, newest lowest.
    history: u64,
}

impl KindsModel {
    /// A model for `kinds` bytes coded in `coded` bytes.
    pub(super) fn new(kinds: usize, coded: usize) -> KindsModel {
        KindsModel {
            model: Model::with_bits(2, kinds, coded),
            history: 0,
        }
    }

    /// Codes `kind` (ignored by the decoder, below 4 for the encoder); returns it (decoded).
    pub(super) fn code<C: BitCoder>(&mut self, coder: &mut C, kind: u8) -> u8 {
        let h = self.history;
        let order = |n: u32| hash(u64::from(n) + 100, h & ((1 << (2 * n)) - 1));
        let bases = [
            order(1),
            order(2),
            order(3),
            order(4),
            order(6),
            order(8),
            order(12),
            order(16),
        ];
        let kind = self.model.code_value(coder, &bases, 2, u32::from(kind)) as u8;
        self.history = (h << 2) | u64::from(kind);
        kind
    }
}

/// `KINDS` coded by [`KindsModel`]; `None` if a byte is 4 or more.
pub(super) fn encode_kinds(kinds: &[u8]) -> Option<Vec<u8>> {
    if kinds.iter().any(|&k| k >= 4) {
        return None;
    }
    settle(2, kinds.len(), |coded| {
        let mut m = KindsModel::new(kinds.len(), coded);
        let mut e = Encoder::new();
        for &k in kinds {
            m.code(&mut e, k);
        }
        Some(e.finish())
    })
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
    fn bit(&mut self, bit: u32, p: u32) -> u32 {
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
        bit
    }

    pub(super) fn finish(mut self) -> Vec<u8> {
        self.out.extend_from_slice(&self.low.to_be_bytes());
        self.out
    }
}

impl BitCoder for Encoder {
    #[inline]
    fn code(&mut self, bit: u32, p: u32) -> u32 {
        self.bit(bit, p)
    }
}

impl BitCoder for Decoder<'_> {
    #[inline]
    fn code(&mut self, _: u32, p: u32) -> u32 {
        self.bit(p)
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
        let ctx = |i: usize| {
            let before = u64::from(ids[i.saturating_sub(1)]);
            Context::NONE.then(i as u64 % 5, before, before % 7)
        };
        let mut m = Model::new(1000, ids.len(), usize::MAX);
        let mut e = Encoder::new();
        for (i, &q) in ids.iter().enumerate() {
            m.code(&mut e, &ctx(i), q);
        }
        let bytes = e.finish();
        let mut m = Model::new(1000, ids.len(), usize::MAX);
        let mut d = Decoder::new(&bytes);
        for (i, &q) in ids.iter().enumerate() {
            assert_eq!(m.code(&mut d, &ctx(i), 0), q);
        }
        assert_eq!(d.read(), bytes.len());
    }

    fn kinds_back(coded: &[u8], n: usize) -> Vec<u8> {
        let mut m = KindsModel::new(n, coded.len());
        let mut d = Decoder::new(coded);
        let out: Vec<u8> = (0..n).map(|_| m.code(&mut d, 0)).collect();
        assert!(!d.overran());
        assert_eq!(d.read(), coded.len());
        out
    }

    #[test]
    fn kinds_of_zero_and_one_byte_round_trip() {
        for kinds in [vec![], vec![0], vec![1], vec![2], vec![3]] {
            let coded = encode_kinds(&kinds).unwrap();
            assert_eq!(coded.len(), 4);
            assert_eq!(kinds_back(&coded, kinds.len()), kinds);
        }
        assert_eq!(encode_kinds(&[1, 4]), None);
    }

    #[test]
    fn tables_are_bounded_by_the_coded_bytes() {
        assert_eq!(table_bits(17, 1 << 20, usize::MAX), MAX_TABLE_BITS);
        assert_eq!(table_bits(17, 1 << 20, 4), MIN_TABLE_BITS);
        assert_eq!(table_bits(17, 10, usize::MAX), MIN_TABLE_BITS);
        for coded in [0, 1, 100, 5000, 1 << 16, 1 << 20] {
            let bytes = ((INPUTS - 1) * 4) << table_bits(31, usize::MAX, coded);
            assert!(bytes <= (1024 * coded).max(((INPUTS - 1) * 4) << MIN_TABLE_BITS));
        }
    }

    #[test]
    fn effects_compose_like_the_stack() {
        let seq = [5, 6, LEAVE, OTHER, 7, LEAVE, LEAVE, LEAVE, 8, 9];
        let mut stack = CallStack::default();
        stack.apply(Effect::of(1));
        stack.apply(Effect::of(2));
        let mut whole = Effect::NONE;
        for &c in &seq {
            whole = whole.then(Effect::of(c));
        }
        let mut one_by_one = CallStack::default();
        one_by_one.apply(Effect::of(1));
        one_by_one.apply(Effect::of(2));
        for &c in &seq {
            one_by_one.apply(Effect::of(c));
        }
        stack.apply(whole);
        // The effect keeps the top of what it pushes, not what is below it.
        assert_eq!(stack.0, [1, UNKNOWN, 9]);
        assert_eq!(one_by_one.0, [1, 8, 9]);
        assert_eq!(whole.pops, 1);
        assert_eq!(whole.pushes, 2);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

        #[test]
        fn random_kinds_round_trip(kinds in proptest::collection::vec(0u8..4, 0..3000)) {
            let coded = encode_kinds(&kinds).unwrap();
            proptest::prop_assert_eq!(kinds_back(&coded, kinds.len()), kinds);
        }

        #[test]
        fn random_ids_round_trip(
            rules in 1usize..200_000,
            picks in proptest::collection::vec((0u32..u32::MAX, 0u64..50, 0u64..4), 0..2000),
        ) {
            let ids: Vec<u32> = picks.iter().map(|p| p.0 % rules as u32).collect();
            let ctx = |i: usize| Context::NONE.then(picks[i].1, picks[i].2, picks[i].1 % 3);
            let mut m = Model::new(rules, ids.len(), usize::MAX);
            let mut e = Encoder::new();
            for (i, &q) in ids.iter().enumerate() {
                m.code(&mut e, &ctx(i), q);
            }
            let bytes = e.finish();
            let mut m = Model::new(rules, ids.len(), usize::MAX);
            let mut d = Decoder::new(&bytes);
            for (i, &q) in ids.iter().enumerate() {
                proptest::prop_assert_eq!(m.code(&mut d, &ctx(i), 0), q);
            }
            proptest::prop_assert_eq!(d.read(), bytes.len());
        }
    }
}
