"""Reading a Spark file sink the way Spark does: only the files its _spark_metadata log committed.

Used by the demo and the tests to check what a query really wrote, without starting Spark.
"""
from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import unquote

import pyarrow.parquet as pq


def sink_log(output: Path):
    """The entries of a file sink's log in batch order: (batch id, the entry's file, its records)."""
    meta = Path(output) / "_spark_metadata"
    if not meta.is_dir():
        return
    logs = [p for p in meta.iterdir() if p.name.split(".")[0].isdigit() and not p.name.endswith(".tmp")]
    for entry in sorted(logs, key=lambda p: int(p.name.split(".")[0])):
        lines = entry.read_text().splitlines()[1:]  # first line is the format version
        yield int(entry.name.split(".")[0]), entry, [json.loads(line) for line in lines]


def _local(path: str) -> Path:
    """A log entry's path is a URI, quoted as Hadoop quotes it (a space as %20, a % as %25)."""
    return Path(unquote(path.removeprefix("file://").removeprefix("file:")))


def committed_files(output: Path) -> list[Path]:
    live: dict[str, bool] = {}
    for _, _, records in sink_log(output):
        for rec in records:
            live[rec["path"]] = rec["action"] == "add"
    return [_local(p) for p, ok in live.items() if ok]


def first_listings(output: Path) -> dict[Path, tuple[int, float]]:
    """Each file the sink's log lists -> (batch id, mtime) of the first entry that lists it, i.e. its own
    batch's commit: every tenth entry (`N.compact`) lists again every file before it, written later."""
    first: dict[Path, tuple[int, float]] = {}
    for batch, entry, records in sink_log(output):
        committed = (batch, entry.stat().st_mtime)
        for rec in records:
            first.setdefault(_local(rec["path"]), committed)
    return first


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
