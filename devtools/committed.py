"""Reading a Spark file sink the way Spark does: only the files its _spark_metadata log committed.

Used by the demo and the tests to check what a query really wrote, without starting Spark.
"""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq


def committed_files(output: Path) -> list[Path]:
    meta = Path(output) / "_spark_metadata"
    if not meta.is_dir():
        return []
    live: dict[str, bool] = {}
    logs = [p for p in meta.iterdir() if p.name.split(".")[0].isdigit() and not p.name.endswith(".tmp")]
    for entry in sorted(logs, key=lambda p: int(p.name.split(".")[0])):
        for line in entry.read_text().splitlines()[1:]:  # first line is the format version
            rec = json.loads(line)
            live[rec["path"]] = rec["action"] == "add"
    return [Path(p.removeprefix("file://").removeprefix("file:")) for p, ok in live.items() if ok]


def committed_rows(output: Path, columns: list[str]) -> list[tuple]:
    """Every committed row, as tuples of `columns`; a column may be an output partition folder `k=v`, and a
    column an older file lacks (the schema evolved since) is null there, as Spark reads it."""
    rows: list[tuple] = []
    for path in committed_files(output):
        table = pq.read_table(path)
        folders = dict(seg.split("=", 1) for seg in path.parent.relative_to(output).parts if "=" in seg)
        cols = [table.column(c).to_pylist() if c in table.column_names else [folders.get(c)] * table.num_rows
                for c in columns]
        rows.extend(zip(*cols))
    return rows
