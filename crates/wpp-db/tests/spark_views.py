"""Runs the store's documented views on Apache Spark (PySpark, `local-cluster[2,1,1024]`: a
master and two executor processes on this machine) over the same Parquet files, and prints each
view's rows as JSON, for `tests/spark.rs` to compare with embedded DataFusion's, and each
query's time on standard error (`bench/db-spark.sh`).

Input (argv[1], JSON, as `wpp-db spark-spec --db STORE` prints it): {"tables": [{"name", "ddl",
"files"}], "views": [{"name", "sql"}], "queries": {"view": "SELECT …"}}; argv[2], the master
(default `local-cluster[2,1,1024]`). For a real cluster, the files are s3a:// URLs of the same
layout (`wpp-db spark-spec --url-prefix s3a://BUCKET/STORE`); nothing else changes.
"""
import json
import sys
import time

from pyspark.sql import SparkSession


def main():
    spec = json.load(open(sys.argv[1]))
    master = sys.argv[2] if len(sys.argv) > 2 else "local-cluster[2,1,1024]"
    spark = (
        SparkSession.builder.master(master)
        .appName("wpp-db views")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.ansi.enabled", "false")
        .getOrCreate()
    )
    for t in spec["tables"]:
        if t["files"]:
            df = spark.read.schema(t["ddl"]).parquet(*t["files"])
        else:
            df = spark.createDataFrame([], t["ddl"])
        df.createOrReplaceTempView(t["name"])
    for v in spec["views"]:
        spark.sql("CREATE OR REPLACE TEMPORARY VIEW %s AS %s" % (v["name"], v["sql"]))
    out = {}
    for name, query in spec["queries"].items():
        start = time.monotonic()
        out[name] = [r.asDict() for r in spark.sql(query).collect()]
        print("%s %.2f s" % (name, time.monotonic() - start), file=sys.stderr)
    spark.stop()
    print(json.dumps(out, default=str))


if __name__ == "__main__":
    main()
