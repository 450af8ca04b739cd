#!/usr/bin/env bash
# One load's dependences from an eWPP `.wpp` on its rules (`wpp deps list --load`, issue 11
# item 4) against the whole listing: wall seconds and peak RSS of each, and a check that the
# load's lines are exactly the whole listing's. Loads: the rarest, the median and the most
# frequent of the listing (or those given).
#   bench/deps-load.sh ECF.wpp [LOAD_ID ...]
# e.g. after bench/check.sh --modes ewpp zlib:
#   target/release/wpp compress bench/build/check/ewpp/results/small/zlib/work/zlib.*.trace -o zlib.wpp
#   bench/deps-load.sh zlib.wpp
set -euo pipefail
WPP=${WPP:-$(cd "$(dirname "$0")/.." && pwd)/target/release/wpp}
file=$1
shift
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
timed() { /usr/bin/time -f "%e %M" -o "$tmp/time" "$@"; read -r s kb <"$tmp/time"; }
timed "$WPP" deps list "$file" >"$tmp/all"
echo "whole listing: $(wc -l <"$tmp/all") dependences, $s s, $((kb / 1024)) MiB"
awk '{sub(/\(.*/, "", $1); print substr($1, 2)}' "$tmp/all" | sort | uniq -c | sort -n >"$tmp/loads"
if (($# == 0)); then
    n=$(wc -l <"$tmp/loads")
    set -- $(sed -n "1p;$(((n + 1) / 2))p;${n}p" "$tmp/loads" | awk '{print $2}')
fi
echo "| load | dependences | s | MiB | whole listing / load |"
echo "|---|---|---|---|---|"
whole=$s
for id in "$@"; do
    timed "$WPP" deps list "$file" --load "$id" >"$tmp/one"
    grep "^#$id(" "$tmp/all" | cmp -s - "$tmp/one" || { echo "load $id: differs from the whole listing" >&2; exit 1; }
    echo "| $id | $(wc -l <"$tmp/one") | $s | $((kb / 1024)) | $(awk -v a="$whole" -v b="$s" 'BEGIN {printf "%.1f", a / b}') |"
done
