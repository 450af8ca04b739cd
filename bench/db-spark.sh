#!/usr/bin/env bash
# The documented views on the distributed route (issue 16): Apache Spark in local-cluster mode
# with 1, 2 and 4 executor processes (1 core, 1 GiB each) over a store's Parquet files as they
# are, each view's first 10 rows ordered, as bench/db.sh asks embedded DataFusion.
#
#   STORE_OUT=/tmp/store bench/db.sh PROFILE 10000     # make the store
#   bench/db-spark.sh /tmp/store [EXECUTORS…]          # default 1 2 4
#   WPP_DB=path/to/wpp-db bench/db-spark.sh …          (default target/release/wpp-db)
#
# Prints each view's time per executor count (the query alone: Spark's start-up and the
# tables' registration are not in it). Needs python3 with pyspark and Java 17.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
STORE=${1:?usage: bench/db-spark.sh STORE [EXECUTORS...]}
shift
EXECUTORS=("$@")
[[ ${#EXECUTORS[@]} -gt 0 ]] || EXECUTORS=(1 2 4)
WPP_DB=${WPP_DB:-$ROOT/target/release/wpp-db}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
"$WPP_DB" spark-spec --db "$STORE" | python3 -c '
import json, sys
spec = json.load(sys.stdin)
spec["queries"] = {v: "SELECT * FROM %s ORDER BY 1, 2, 3 LIMIT 10" % v for v in spec["queries"]}
json.dump(spec, sys.stdout)' >"$WORK/spec.json"
for n in "${EXECUTORS[@]}"; do
    python3 "$ROOT/crates/wpp-db/tests/spark_views.py" "$WORK/spec.json" \
        "local-cluster[$n,1,1024]" >"$WORK/out.json" 2>"$WORK/log"
    grep -E '^[a-z_]+ [0-9.]+ s$' "$WORK/log" | sed "s/^/executors $n: /"
done
