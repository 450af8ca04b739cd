#!/usr/bin/env bash
# Merging at scale (issue 16 item 5): N variants of one bl profile (each with its own counts;
# crates/wpp-abi/examples/profile_variants.rs) are merged by `wpp profile merge DIR` and added
# to a fresh store by `wpp db add DIR`, for each N. Wall time and peak RSS (`/usr/bin/time -v`)
# per N show the cost per profile and whether memory stays flat as N grows.
#
#   bench/merge.sh PROFILE [N…]             # default N: 100 1000 10000
#   DB_OPT=0 bench/merge.sh …               # wpp-db's wpp crates unoptimized (default 2)
#
# `wpp` is built in release. `wpp-db` is never built in release here (DataFusion at opt-level 2
# takes over 30 min on the 2-core VM): it is the dev build, with the workspace's own crates at
# opt-level DB_OPT (`--config profile.dev.opt-level=…`; dev already builds Arrow, Parquet and the
# other dependencies at 2 and DataFusion's query engine at 0, which ingest does not run), so only
# the wpp crates are rebuilt and the whole ingest path is optimized. The profiles take N × the
# profile's size on disk (made once for the largest N; smaller N take the first by hard links).
#
# Prints one Markdown row per N: merge s and peak MB; db add s, profiles/s, rows/s, peak MB.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PROFILE_IN=${1:?usage: bench/merge.sh PROFILE [N…]}
shift
if (($#)); then SIZES=("$@"); else SIZES=(100 1000 10000); fi
DB_OPT=${DB_OPT:-2}
cd "$ROOT"
source scripts/env.sh
cargo build --release -p wpp --bin wpp
cargo build --release -p wpp-abi --example profile_variants
cargo build -p wpp-db --bin wpp-db --config "profile.dev.opt-level=$DB_OPT"
WORK=${WORK:-$(mktemp -d)}
trap 'rm -rf "$WORK"' EXIT
max=$(printf '%s\n' "${SIZES[@]}" | sort -n | tail -1)
target/release/examples/profile_variants "$PROFILE_IN" "$max" "$WORK/all"
find "$WORK/all" -name '*.blprof' | sort >"$WORK/list"

# Runs a command under /usr/bin/time -v; prints "SECONDS PEAK_MB" and keeps its stderr in $WORK/err.
measure() {
    /usr/bin/time -v "$@" 2>"$WORK/err" >/dev/null
    awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, t, ":"); s = t[n] + 60 * t[n - 1] + 3600 * (n > 2 ? t[1] : 0) }
        /Maximum resident set size/ { kb = $2 } END { printf "%.2f %.0f\n", s, kb / 1024 }' "$WORK/err"
}

echo "| N | merge s | merge peak MB | db add s | profiles/s | rows/s | db add peak MB |"
echo "|---|---|---|---|---|---|---|"
for n in "${SIZES[@]}"; do
    rm -rf "$WORK/in" "$WORK/db" "$WORK/merged.blprof"
    mkdir "$WORK/in"
    head -n "$n" "$WORK/list" | xargs ln -t "$WORK/in"
    read -r ms mm < <(measure target/release/wpp profile merge "$WORK/in" -o "$WORK/merged.blprof")
    read -r ds dm < <(measure target/debug/wpp-db add "$WORK/in" --db "$WORK/db")
    rows=$(sed -n 's/.*(\([0-9]*\) rows.*/\1/p' "$WORK/err")
    awk -v n="$n" -v ms="$ms" -v mm="$mm" -v ds="$ds" -v dm="$dm" -v r="$rows" 'BEGIN {
        printf "| %d | %.2f | %d | %.2f | %.0f | %.0f | %d |\n", n, ms, mm, ds, n / ds, r / ds, dm }'
done
