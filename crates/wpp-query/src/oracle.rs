//! Brute-force oracles: the reference answers that the tests and `wpp-query-check` compare the
//! real algorithms with. **Not for answering queries**: they need the expanded trace in memory
//! and take O(n·m) time; they are written to be obviously right, and share no code with the
//! schemes they check (no KMP, no automaton, no grammar).
//!
//! * [`path_occurrences`]: Zhang–Gupta path matching (§3.2, §4.1) spelled out literally: every
//!   invocation collects its own blocks (blocks of nested calls go to the nested invocation,
//!   which is *path interruption*; only invocations of `F` are searched, which is *path
//!   context*), and an occurrence ends wherever an invocation of `F`'s own-block list ends with
//!   the path.
//! * [`subpath_occurrences`]: naive substring search on a terminal stream (Larus §3.3's subpath
//!   frequency, and the check of every reported hot subpath).
//! * [`qualified_events`] and [`occurrences`]: events paired with the function they run in,
//!   and naive counting of a string of them (the check of every exact hot path).
//! * [`own_ngrams`]: per function, how often each sequence of `n` consecutive own blocks runs;
//!   the benchmark and the check pick their query paths from it.

use rustc_hash::FxHashMap;
use wpp_trace::{BlockId, Event, FunctionId, Terminal};

/// First position (of the last block) and number of occurrences of `path` in the invocations of
/// `f` in one thread's `events`, with the semantics of [`crate::matching`]: `Leave`s with no open
/// invocation and blocks outside any invocation belong to nobody; `P` and `T` events are
/// skipped but count as positions.
pub fn path_occurrences(events: &[Event], f: FunctionId, path: &[BlockId]) -> (Option<u64>, u64) {
    let mut stack: Vec<(FunctionId, Vec<BlockId>)> = Vec::new();
    let (mut first, mut count) = (None, 0u64);
    for (i, e) in events.iter().enumerate() {
        match *e {
            Event::Enter(g) => stack.push((g, Vec::new())),
            Event::Leave => {
                stack.pop();
            }
            Event::Block(b) => {
                if let Some((g, own)) = stack.last_mut() {
                    own.push(b);
                    if *g == f && !path.is_empty() && own.ends_with(path) {
                        count += 1;
                        first.get_or_insert(i as u64);
                    }
                }
            }
            Event::Path(_) | Event::Thread(_) => {}
        }
    }
    (first, count)
}

/// Overlapping occurrences of `q` in `s`: (count, first start, last start).
pub fn subpath_occurrences(s: &[Terminal], q: &[Terminal]) -> (u64, Option<u64>, Option<u64>) {
    if q.is_empty() || q.len() > s.len() {
        return (0, None, None);
    }
    let mut hits = s
        .windows(q.len())
        .enumerate()
        .filter(|(_, w)| *w == q)
        .map(|(i, _)| i as u64);
    let Some(first) = hits.next() else {
        return (0, None, None);
    };
    let (count, last) = hits.fold((1, first), |(c, _), i| (c + 1, i));
    (count, Some(first), Some(last))
}

/// For each function, how often each sequence of `N` consecutive own blocks of one invocation
/// runs, in one thread's `events`.
pub fn own_ngrams<const N: usize>(events: &[Event]) -> FxHashMap<(FunctionId, [BlockId; N]), u64> {
    // Per open invocation: its function, its last N own blocks (oldest first) and how many of
    // them are filled.
    let mut stack: Vec<(FunctionId, [BlockId; N], usize)> = Vec::new();
    let mut grams = FxHashMap::default();
    for &e in events {
        match e {
            Event::Enter(g) => stack.push((g, [BlockId(0); N], 0)),
            Event::Leave => {
                stack.pop();
            }
            Event::Block(b) => {
                if let Some((g, last, len)) = stack.last_mut() {
                    if N == 0 {
                        continue;
                    }
                    if *len == N {
                        last.rotate_left(1);
                        last[N - 1] = b;
                    } else {
                        last[*len] = b;
                        *len += 1;
                    }
                    if *len == N {
                        *grams.entry((*g, *last)).or_default() += 1;
                    }
                }
            }
            Event::Path(_) | Event::Thread(_) => {}
        }
    }
    grams
}

/// The most frequent sequence of `N` own blocks of each function that has one, with its number
/// of occurrences (ties: the smallest sequence).
pub fn most_frequent_paths<const N: usize>(
    events: &[Event],
) -> FxHashMap<FunctionId, ([BlockId; N], u64)> {
    let mut best: FxHashMap<FunctionId, ([BlockId; N], u64)> = FxHashMap::default();
    for ((f, path), c) in own_ngrams::<N>(events) {
        let e = best.entry(f).or_insert((path, c));
        if (c, std::cmp::Reverse(path)) > (e.1, std::cmp::Reverse(e.0)) {
            *e = (path, c);
        }
    }
    best
}

/// Each event of one thread with the function it runs in: `F f` runs in `f`, every other event
/// in the function on top of the call stack (`E` in the one it leaves); `None` below the
/// bottom of the stack. A plain simulation of the stack, for
/// [`hot::qualified`](crate::hot::qualified).
pub fn qualified_events(events: &[Event]) -> Vec<(Event, Option<FunctionId>)> {
    let mut stack: Vec<FunctionId> = Vec::new();
    events
        .iter()
        .map(|&e| {
            let f = match e {
                Event::Enter(f) => Some(f),
                _ => stack.last().copied(),
            };
            match e {
                Event::Enter(f) => stack.push(f),
                Event::Leave => {
                    stack.pop();
                }
                _ => {}
            }
            (e, f)
        })
        .collect()
}

/// Occurrences (overlapping ones included) of `q` in `s`, compared element by element.
pub fn occurrences<T: PartialEq>(s: &[T], q: &[T]) -> u64 {
    if q.is_empty() {
        return 0;
    }
    s.windows(q.len()).filter(|w| *w == q).count() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interrupted_path_and_context() {
        let b = |i| Event::Block(BlockId(i));
        let (f, g) = (Event::Enter(FunctionId(0)), Event::Enter(FunctionId(1)));
        // f: B1, g: B2 (not f's), f: B2 B1 B2 → f's own blocks 1 2 1 2.
        let t = [f, b(1), g, b(2), Event::Leave, b(2), b(1), b(2)];
        assert_eq!(
            path_occurrences(&t, FunctionId(0), &[BlockId(1), BlockId(2)]),
            (Some(5), 2)
        );
        assert_eq!(
            path_occurrences(&t, FunctionId(1), &[BlockId(2)]),
            (Some(3), 1)
        );
        assert_eq!(
            path_occurrences(&t, FunctionId(2), &[BlockId(2)]),
            (None, 0)
        );
        let grams = most_frequent_paths::<2>(&t);
        assert_eq!(grams[&FunctionId(0)], ([BlockId(1), BlockId(2)], 2));
        assert_eq!(own_ngrams::<3>(&t).len(), 2);
        assert!(!grams.contains_key(&FunctionId(1)));
    }

    #[test]
    fn overlapping_subpaths() {
        let s: Vec<Terminal> = [1, 1, 1, 2, 1, 1].map(Terminal).to_vec();
        let q = [Terminal(1), Terminal(1)];
        assert_eq!(subpath_occurrences(&s, &q), (3, Some(0), Some(4)));
        assert_eq!(subpath_occurrences(&s, &[Terminal(3)]), (0, None, None));
        assert_eq!(subpath_occurrences(&s, &[]), (0, None, None));
    }
}
