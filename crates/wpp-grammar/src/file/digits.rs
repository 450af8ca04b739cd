//! Bytes below a small base packed as base-`b` digits, as many to a byte as fit: the `KINDS`
//! stream (base 4) and the high plane of `REFS`, whose few values (the top byte of wide
//! distances: 4–5 of them on real and high-entropy traces) would otherwise make zstd search
//! three to eight times the bytes. Packed, zstd's level 19 is 4–8× faster on that plane and
//! the plane 1–10 % smaller (BENCHMARKS.md).

/// The largest base [`pack`] takes: at 16 only two digits fit a byte, and wider values gain
/// little over a byte each.
pub(super) const MAX_BASE: u8 = 16;

/// How many base-`base` digits fit in a byte (`base` in `2..=MAX_BASE`).
pub(super) fn per_byte(base: u8) -> usize {
    let mut n = 0;
    let mut span = 1u32;
    while span * u32::from(base) <= 256 {
        span *= u32::from(base);
        n += 1;
    }
    n
}

/// The smallest base in `2..=MAX_BASE` above every byte of `values`, if there is one.
pub(super) fn base_of(values: &[u8]) -> Option<u8> {
    let max = values.iter().copied().max().unwrap_or(0);
    (max < MAX_BASE).then(|| max.max(1) + 1)
}

/// `values` (each below `base`) as base-`base` digits, [`per_byte`] to a byte with the first
/// in the lowest digit; a last byte's missing digits are zero.
pub(super) fn pack(values: &[u8], base: u8) -> Vec<u8> {
    values
        .chunks(per_byte(base))
        .map(|group| group.iter().rev().fold(0u8, |byte, &v| byte * base + v))
        .collect()
}

/// The `count` values [`pack`] packed into `bytes`. A byte too large for its digits, or a
/// digit set after the last value, is an error (a byte is the packing of one group only).
pub(super) fn unpack(bytes: &[u8], count: usize, base: u8) -> Result<Vec<u8>, String> {
    let per = per_byte(base);
    let span = u32::from(base).pow(per as u32);
    if bytes.len() != count.div_ceil(per) {
        return Err(format!(
            "{} packed bytes for {count} values, not {}",
            bytes.len(),
            count.div_ceil(per)
        ));
    }
    let mut values = Vec::with_capacity(bytes.len() * per);
    for (at, &byte) in bytes.iter().enumerate() {
        if u32::from(byte) >= span {
            return Err(format!("packed byte {at} is {byte}, not below {span}"));
        }
        let mut rest = byte;
        for _ in 0..per {
            values.push(rest % base);
            rest /= base;
        }
    }
    if values[count..].iter().any(|&v| v != 0) {
        return Err("digits set after the last packed value".into());
    }
    values.truncate(count);
    Ok(values)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn digits_per_byte() {
        let per: Vec<usize> = (2..=MAX_BASE).map(per_byte).collect();
        assert_eq!(per, [8, 5, 4, 3, 3, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2]);
    }

    #[test]
    fn base_4_is_two_bits_each_the_first_lowest() {
        assert_eq!(pack(&[1, 2, 3, 0, 2], 4), [0b00_11_10_01, 0b10]);
        assert_eq!(
            unpack(&[0b00_11_10_01, 0b10], 5, 4).unwrap(),
            [1, 2, 3, 0, 2]
        );
    }

    #[test]
    fn non_canonical_packings_are_errors() {
        assert!(unpack(&[125], 3, 5).unwrap_err().contains("not below 125"));
        assert!(unpack(&[5], 1, 5).unwrap_err().contains("after the last"));
        assert!(unpack(&[1, 0], 1, 5)
            .unwrap_err()
            .contains("2 packed bytes"));
        assert!(unpack(&[], 1, 5).is_err());
    }

    #[test]
    fn bases_fit_the_values() {
        assert_eq!(base_of(&[]), Some(2));
        assert_eq!(base_of(&[0, 1]), Some(2));
        assert_eq!(base_of(&[4, 0]), Some(5));
        assert_eq!(base_of(&[15]), Some(16));
        assert_eq!(base_of(&[16]), None);
        assert_eq!(base_of(&[255]), None);
    }

    proptest! {
        #[test]
        fn unpack_inverts_pack(base in 2..=MAX_BASE, raw in prop::collection::vec(any::<u8>(), 0..200)) {
            let values: Vec<u8> = raw.iter().map(|v| v % base).collect();
            let packed = pack(&values, base);
            prop_assert_eq!(packed.len(), values.len().div_ceil(per_byte(base)));
            prop_assert_eq!(unpack(&packed, values.len(), base).unwrap(), values);
        }
    }
}
