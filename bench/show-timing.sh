#!/usr/bin/env bash
# Side by side: the views and exports of each recording with two `wpp` builds (e.g. the last
# release before a change and after it), user CPU seconds and peak RSS of each, and whether
# their outputs are byte-identical. CPU time rather than wall time: the machine is shared.
#
#   bench/show-timing.sh OLD_WPP NEW_WPP RECORDING.wpp...
set -euo pipefail
old=$1 new=$2
shift 2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
measure() { # binary tag command...
  local bin=$1 tag=$2
  shift 2
  /usr/bin/time -f "%U %M" -o "$out/time" "$bin" "$@" >"$out/$tag" 2>/dev/null
  read -r user rss <"$out/time"
  printf '%s s / %s MB' "$user" "$((rss / 1024))"
}
echo "| recording | events | command | old (user s / peak RSS) | new | same output |"
echo "|---|---|---|---|---|---|"
for rec in "$@"; do
  events=$("$new" stats "$rec" | awk '/^events/ {print $2}')
  for cmd in "annotate --format lcov" "export --format folded -o /dev/stdout" \
    "export --format pprof -o /dev/stdout" "export --format callgrind -o /dev/stdout"; do
    read -ra args <<<"$cmd"
    a=$(measure "$old" old "${args[0]}" "$rec" "${args[@]:1}")
    b=$(measure "$new" new "${args[0]}" "$rec" "${args[@]:1}")
    same=$(cmp -s "$out/old" "$out/new" && echo yes || echo NO)
    echo "| $(basename "$rec") | $events | ${args[0]} ${args[2]} | $a | $b | $same |"
  done
done
