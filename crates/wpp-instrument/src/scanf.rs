//! What a `scanf` call writes, from its constant format (ISO C 7.21.6.2, glibc's extensions):
//! each conversion that assigns takes the next pointer argument and writes the bytes its
//! type has (x86-64 LP64), or a string and its zero. The call returns how many conversions
//! assigned, in order, so the `k`-th of them wrote exactly when the result is above `k`.

/// What one pointer argument of a `scanf` call receives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    /// This many bytes.
    Bytes(u64),
    /// A string and its terminating zero (`%s`, `%[`).
    String,
    /// Something wpp does not size (`%n`, which the result does not count; wide strings).
    Unsized,
}

/// One conversion that takes a pointer argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Assignment {
    pub target: Target,
    /// Which assignment it is among those the result counts (`None`: `%n`, not counted).
    pub counted: Option<u32>,
}

/// The pointer arguments a format assigns, in order; `None` for a format with positional
/// arguments (`%1$d`) or a conversion it does not know, which the caller leaves untraced.
pub(crate) fn assignments(format: &[u8]) -> Option<Vec<Assignment>> {
    let mut out = Vec::new();
    let mut counted = 0;
    let mut rest = format.split(|&c| c == 0).next().unwrap_or_default();
    while let Some(at) = rest.iter().position(|&c| c == b'%') {
        rest = &rest[at + 1..];
        if rest.first() == Some(&b'%') {
            rest = &rest[1..];
            continue;
        }
        let suppressed = rest.first() == Some(&b'*');
        rest = &rest[usize::from(suppressed)..];
        let digits = rest.iter().take_while(|c| c.is_ascii_digit()).count();
        if rest.get(digits) == Some(&b'$') {
            return None;
        }
        let width: u64 = std::str::from_utf8(&rest[..digits])
            .ok()?
            .parse()
            .unwrap_or(0);
        rest = &rest[digits..];
        let allocates = rest.first() == Some(&b'm');
        rest = &rest[usize::from(allocates)..];
        let length = rest.iter().take_while(|c| b"hljztLq".contains(c)).count();
        let (modifier, conversion) = (&rest[..length], *rest.get(length)?);
        rest = &rest[length + 1..];
        if conversion == b'[' {
            // A scan set: `]` right after `[` or `[^` is a member, not the end.
            let skip = usize::from(rest.first() == Some(&b'^'));
            let members = &rest[skip..];
            let end = members.iter().skip(1).position(|&c| c == b']')? + 1;
            rest = &members[end + 1..];
        }
        let target = match (allocates, target(conversion, modifier, width)?) {
            (true, _) => Target::Bytes(8),
            (false, t) => t,
        };
        if suppressed {
            continue;
        }
        let counted = (conversion != b'n').then(|| {
            counted += 1;
            counted - 1
        });
        out.push(Assignment { target, counted });
    }
    Some(out)
}

/// The target of `conversion` with length `modifier` and field `width` (0: none).
fn target(conversion: u8, modifier: &[u8], width: u64) -> Option<Target> {
    let wide = modifier == b"l";
    Some(match conversion {
        b'd' | b'i' | b'u' | b'o' | b'x' | b'X' => Target::Bytes(match modifier {
            b"hh" => 1,
            b"h" => 2,
            b"" => 4,
            b"l" | b"ll" | b"q" | b"L" | b"j" | b"z" | b"t" => 8,
            _ => return None,
        }),
        b'n' => Target::Unsized,
        b'a' | b'e' | b'f' | b'g' | b'A' | b'E' | b'F' | b'G' => Target::Bytes(match modifier {
            b"" => 4,
            b"l" => 8,
            b"L" => 16,
            _ => return None,
        }),
        b'p' => Target::Bytes(8),
        b'c' | b's' | b'[' if wide => Target::Unsized,
        b'c' | b's' | b'[' if !modifier.is_empty() => return None,
        b'c' => Target::Bytes(width.max(1)),
        b's' | b'[' => Target::String,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use Target::*;

    fn targets(format: &str) -> Option<Vec<(Target, Option<u32>)>> {
        let a = assignments(format.as_bytes())?;
        Some(a.into_iter().map(|a| (a.target, a.counted)).collect())
    }

    /// Formats with their arguments' sizes written out by hand.
    #[test]
    fn formats_by_hand() {
        assert_eq!(
            targets("%d %ld%hhd,%hu %lld %zu"),
            Some(vec![
                (Bytes(4), Some(0)),
                (Bytes(8), Some(1)),
                (Bytes(1), Some(2)),
                (Bytes(2), Some(3)),
                (Bytes(8), Some(4)),
                (Bytes(8), Some(5))
            ])
        );
        assert_eq!(
            targets("%f %lf %Lg %p"),
            Some(vec![
                (Bytes(4), Some(0)),
                (Bytes(8), Some(1)),
                (Bytes(16), Some(2)),
                (Bytes(8), Some(3))
            ])
        );
        // Suppressed conversions take no argument; `%%` is a percent sign; `%n` is not counted.
        assert_eq!(
            targets("%*d %% %3c %n %15s"),
            Some(vec![
                (Bytes(3), Some(0)),
                (Unsized, None),
                (String, Some(1))
            ])
        );
        // Scan sets, `]` as their first member, `%ms` (a pointer to the block it allocates).
        assert_eq!(
            targets("%[^]x]%*[a-z] %ms %[]]"),
            Some(vec![
                (String, Some(0)),
                (Bytes(8), Some(1)),
                (String, Some(2))
            ])
        );
        assert_eq!(
            targets("%ls %lc"),
            Some(vec![(Unsized, Some(0)), (Unsized, Some(1))])
        );
        assert_eq!(targets("no conversions"), Some(vec![]));
        assert_eq!(targets("%d\0%d"), Some(vec![(Bytes(4), Some(0))]));
    }

    /// Formats wpp does not follow are refused whole, never half read.
    #[test]
    fn unknown_formats_are_refused() {
        for format in ["%1$d", "%y", "%hf", "%", "%5", "%[abc", "%Lc"] {
            assert_eq!(targets(format), None, "{format}");
        }
    }
}
