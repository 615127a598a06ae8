"""Reads every table of a lake the way other engines do, through its Delta logs.

    python delta_readers.py LAKE_URI TABLES_JSON [STORAGE_OPTIONS_JSON]

TABLES_JSON maps each table to the Delta versions to read besides the latest.
Prints one JSON object: per table, per version read, the row counts that
`deltalake` (the delta-rs Python package) and Polars report, and the
(query_id, attempt) pairs of the tables that have them. Also checks each
file's statistics in the log against the file's own values, so that a reader
skipping files by them skips nothing it should read.
"""

import json
import sys

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from deltalake import DeltaTable

root, tables = sys.argv[1].rstrip("/"), json.loads(sys.argv[2])
options = json.loads(sys.argv[3]) if len(sys.argv) > 3 else None


def pairs(table):
    names = table.column_names
    if "query_id" not in names or "attempt" not in names:
        return None
    rows = zip(table.column("query_id").to_pylist(), table.column("attempt").to_pylist())
    return sorted(f"{q}/{a}" for q, a in rows)


def check_stats(dt, uri):
    """Every file's numRecords, nullCount, minValues and maxValues in the log
    agree with the file; returns how many files were checked."""
    if options is not None:
        return 0  # on S3 the files are read through the readers above only
    actions = pa.table(dt.get_add_actions(flatten=True)).to_pydict()
    checked = 0
    for i, path in enumerate(actions["path"]):
        if actions["num_records"][i] is None:
            continue
        data = pq.read_table(f"{uri}/{path}")
        assert actions["num_records"][i] == data.num_rows, (path, actions["num_records"][i], data.num_rows)
        for key, values in actions.items():
            kind, _, column = key.partition(".")
            value = values[i]
            if not column or value is None or column not in data.column_names:
                continue
            col = data.column(column)
            if kind == "null_count":
                assert value == col.null_count, (path, column, value, col.null_count)
            elif kind in ("min", "max"):
                bounds = pc.min_max(col)
                truth = bounds["min" if kind == "min" else "max"].as_py()
                assert value == truth, (path, key, value, truth)
        checked += 1
    return checked


out = {}
for table, older in tables.items():
    uri = f"{root}/{table}"
    latest = DeltaTable(uri, storage_options=options)
    versions = sorted(set(older) | {latest.version()})
    seen = {}
    for version in versions:
        dt = DeltaTable(uri, version=version, storage_options=options)
        arrow = dt.to_pyarrow_table()
        frame = pl.read_delta(uri, version=version, storage_options=options)
        seen[str(version)] = {"deltalake": arrow.num_rows, "polars": frame.height, "pairs": pairs(arrow)}
    out[table] = {"latest": latest.version(), "versions": seen, "stats_checked": check_stats(latest, uri)}
print(json.dumps(out))
