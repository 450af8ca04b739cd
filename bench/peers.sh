#!/usr/bin/env bash
# wpp's compressors beside the grammar compressors the issues compare against (issue 15,
# "A side-by-side table with the peers"), on the same event sequences, one after the other in
# one run: C++ SEQUITUR (Nevill-Manning), Re-Pair by Wan (Larsson-Moffat) and Prezza's `rp`.
#
#   bench/peers.sh --peers DIR [--wpp PATH] TRACE...
#
# DIR holds the peers' public sources, checked out as:
#   DIR/sequitur   github.com/craignm/sequitur       (b6afb6e; its c++/ folder)
#   DIR/wan        github.com/rwanwork/Re-Pair        (repair -t 4: 32-bit symbols)
#   DIR/rp         github.com/nicolaprezza/Re-Pair    (bytes only: run when < 255 terminals)
# and are built here (make, cmake) on first use. C++ SEQUITUR's `-d` reads one decimal number
# per line through `cin >>`, which would be most of its time: the copy built here reads
# 32-bit binary symbols instead (a two-line change to its input loop, nothing else).
#
# Each trace becomes the sequence of its events' terminal ids (`wpp trace cat`, ids in the
# order of first occurrence, as wpp interns them), little-endian u32 per event. Times are wall
# seconds of the whole process (input read, grammar built, file written) by /usr/bin/time;
# C++ SEQUITUR runs twice, building the grammar alone and with its arithmetic-coded output
# (-c). Wan's Re-Pair writes its phrase hierarchy (.prel, interpolative-coded) and the
# sequence as raw u32; its size here is .prel plus `xz -9` of the sequence.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PEERS=
WPP_BIN=${WPP:-$ROOT/target/release/wpp}
TRACES=()
while (($#)); do
    case $1 in
    --peers) PEERS=$(cd "$2" && pwd); shift 2 ;;
    --wpp) WPP_BIN=$2; shift 2 ;;
    -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
    *) TRACES+=("$1"); shift ;;
    esac
done
[[ -n $PEERS && ${#TRACES[@]} -gt 0 ]] || { sed -n '2,21p' "$0"; exit 2; }

build_peers() {
    local s=$PEERS/sequitur
    if [[ ! -x $s/sequitur-bin ]]; then
        sed -e '0,/if (numbers) cin >> i;/s//if (numbers) { if (fread(\&i, 4, 1, stdin) != 1) exit(1); }/' \
            -e 's/if (numbers) cin >> i;/if (numbers) { if (fread(\&i, 4, 1, stdin) != 1) break; }/' \
            "$s/sequitur.cc" > "$s/sequitur-bin.cc"
        grep -q 'fread(&i, 4, 1, stdin)' "$s/sequitur-bin.cc"
        (cd "$s" && make -s sequitur.o classes.o compress.o arith.o bitio.o stats.o >/dev/null &&
            g++ -O3 -DPLATFORM_UNIX -c sequitur-bin.cc &&
            g++ -O3 -o sequitur-bin sequitur-bin.o classes.o compress.o arith.o bitio.o stats.o)
    fi
    for p in wan rp; do
        if [[ ! -d $PEERS/$p/build ]]; then
            (mkdir -p "$PEERS/$p/build" && cd "$PEERS/$p/build" &&
                cmake .. -DCMAKE_BUILD_TYPE=Release >/dev/null && make -s -j2 >/dev/null)
        fi
    done
}

# Wall seconds, then peak RSS in KB, of a command whose output is discarded.
timed() { /usr/bin/time -f "%e %M" "$@" 2>&1 >/dev/null | tail -n1; }

# Writes the trace's terminal ids as u32 to $2; prints how many distinct ones.
terminals() {
    "$WPP_BIN" trace cat "$1" | python3 -c '
import array, sys
ids, out = {}, array.array("I")
with open(sys.argv[1], "wb") as f:
    for line in sys.stdin.buffer:
        if line[:1] in (b"#", b"D"):
            continue
        out.append(ids.setdefault(line, len(ids)))
        if len(out) >= 1 << 20:
            f.write(out.tobytes()); out = array.array("I")
    f.write(out.tobytes())
print(len(ids))' "$2"
}

wpp_run() { # trace threads algorithm [flags]: "seconds bytes"
    "$WPP_BIN" compress "$1" -o "$work/x.wpp" --threads "$2" --algorithm "$3" "${@:4}" --json |
        python3 -c 'import json,sys; r=json.load(sys.stdin)["runs"][0]; print(round(r["seconds"],2), r["wpp_bytes"])'
}

build_peers
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "| trace | events | compressor | seconds | M events/s | bytes |"
echo "|---|---:|---|---:|---:|---:|"
for trace in "${TRACES[@]}"; do
    name=$(basename "$trace" .trace)
    kinds=$(terminals "$trace" "$work/t.u32")
    events=$(($(stat -c %s "$work/t.u32") / 4))
    row() { # compressor seconds bytes
        local rate=
        [[ -z $2 ]] || rate=$(python3 -c "print(round($events / $2 / 1e6, 2))")
        echo "| $name | $events | $1 | $2 | $rate | $3 |"
    }
    # Its digram table sized to 8 bytes per event: its fastest on the high-entropy trace
    # (-m 1000, the default: 11.5 s; 320: 10.4; 160: 9.9; 64: 11.3; 32: 18.8).
    mb=$((events * 8 / 1000000 + 16))
    read -r s _ < <(timed "$PEERS/sequitur/sequitur-bin" -d -q -m "$mb" < "$work/t.u32")
    row "C++ SEQUITUR, grammar only" "$s" ""
    read -r s _ < <(/usr/bin/time -f "%e %M" "$PEERS/sequitur/sequitur-bin" -d -q -c -m "$mb" \
        < "$work/t.u32" 2>&1 >"$work/t.seq" | tail -n1)
    row "C++ SEQUITUR -c" "$s" "$(stat -c %s "$work/t.seq")"
    read -r s _ < <(timed "$PEERS/wan/build/src/repair" -i "$work/t.u32" -t 4 -b 200000000)
    row "Re-Pair (Wan), .prel + xz -9 of .seq" "$s" \
        "$(($(stat -c %s "$work/t.u32.prel") + $(xz -9 -T1 -c "$work/t.u32.seq" | wc -c)))"
    if ((kinds < 255)); then
        python3 -c 'import sys; d=open(sys.argv[1],"rb").read(); open(sys.argv[2],"wb").write(bytes(x + 1 for x in d[::4]))' \
            "$work/t.u32" "$work/t.u8"
        read -r s _ < <(timed "$PEERS/rp/build/rp" c "$work/t.u8")
        row "rp (Prezza)" "$s" "$(stat -c %s "$work/t.u8.rp")"
    fi
    row "xz -9 of the u32 sequence" "" "$(xz -9 -T1 -c "$work/t.u32" | wc -c)"
    rm -f "$work"/t.*
    for threads in 1 2; do
        for algorithm in sequitur frequency; do
            read -r s b < <(wpp_run "$trace" "$threads" "$algorithm")
            row "wpp $algorithm, $threads thread(s)" "$s" "$b"
        done
    done
    read -r s b < <(wpp_run "$trace" 1 frequency --smallest)
    row "wpp frequency --smallest, 1 thread" "$s" "$b"
done
