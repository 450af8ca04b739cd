#!/usr/bin/env bash
# Ingest rate and view times of the run store (issue 16): N variants of one bl profile (each with
# its own counts, so its own run id; see crates/wpp-abi/examples/profile_variants.rs) are added
# to a fresh store with `wpp-db add`, the first half labelled `a`, the second `b`, then every
# documented view is queried (its first 10 rows, ordered).
#
#   bench/db.sh PROFILE [N]      # e.g. bench/build/check/interesting/sqlite.blprof 10000
#   CARGO_PROFILE=dev bench/db.sh …   (default release)
#   STORE_OUT=DIR bench/db.sh …       (keep the store there, e.g. for bench/db-spark.sh)
#   BIN_DIR=DIR bench/db.sh …         (wpp-db and examples/profile_variants already built in DIR,
#                                      e.g. by `cargo build --release -p wpp-db` with
#                                      `--config profile.release.opt-level=2 --config
#                                      profile.release.codegen-units=64`: DataFusion at the
#                                      release profile's settings takes hours on 2 cores)
#
# Prints: files, seconds, profiles/s, rows/s, store size per run against the raw profiles, and
# each view's wall time (the whole `wpp-db sql` process: session set-up included).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PROFILE_IN=${1:?usage: bench/db.sh PROFILE [N]}
N=${2:-10000}
CARGO_PROFILE=${CARGO_PROFILE:-release}
cd "$ROOT"
if [[ -n ${BIN_DIR:-} ]]; then
    dir=$BIN_DIR variants=$BIN_DIR/examples/profile_variants
else
    cargo build --profile "$CARGO_PROFILE" -p wpp-db --bin wpp-db
    cargo build --release -p wpp-abi --example profile_variants
    dir=target/$([[ $CARGO_PROFILE == dev ]] && echo debug || echo "$CARGO_PROFILE")
    variants=target/release/examples/profile_variants
fi
WORK=${WORK:-$(mktemp -d)}
trap 'rm -rf "$WORK"' EXIT
"$variants" "$PROFILE_IN" "$N" "$WORK/profiles"
now() { date +%s.%N; }
mkdir -p "$WORK/b"
find "$WORK/profiles" -name '*.blprof' | sort | tail -n $((N / 2)) | xargs -r mv -t "$WORK/b"
t0=$(now)
"$dir/wpp-db" add "$WORK/profiles" --db "$WORK/db" --label a --batch-runs 250 2>"$WORK/add.log"
"$dir/wpp-db" add "$WORK/b" --db "$WORK/db" --label b --batch-runs 250 2>>"$WORK/add.log"
t1=$(now)
rows=$(sed -n 's/.*(\([0-9]*\) rows.*/\1/p' "$WORK/add.log" | awk '{ s += $1 } END { print s }')
raw=$(du -scb "$WORK/profiles" "$WORK/b" | tail -1 | cut -f1)
store=$(du -sb "$WORK/db" | cut -f1)
awk -v n="$N" -v s="$(echo "$t1 - $t0" | bc)" -v r="$rows" -v raw="$raw" -v st="$store" 'BEGIN {
    printf "ingest: %d profiles in %.1f s: %.0f profiles/s, %.0f rows/s (%d rows)\n", n, s, n / s, r / s, r
    printf "size: raw %.1f KB/run, store %.1f KB/run\n", raw / n / 1024, st / n / 1024 }'
for view in coverage untaken_paths residual_paths residual_runs label_shares path_changes function_diversity; do
    t0=$(now)
    "$dir/wpp-db" sql --db "$WORK/db" --format csv "SELECT * FROM $view ORDER BY 1, 2, 3 LIMIT 10" >/dev/null
    t1=$(now)
    printf "view %-20s %6.2f s\n" "$view" "$(echo "$t1 - $t0" | bc)"
done
if [[ -n ${STORE_OUT:-} ]]; then
    rm -rf "$STORE_OUT"
    mv "$WORK/db" "$STORE_OUT"
fi
