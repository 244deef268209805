"""The rescued-data column of the typed formats (Parquet, ORC, Avro): per row, the values of the file's
columns that the schema lacks, as one compact JSON object with the file's path; null when there are none."""
from __future__ import annotations

import json

import pyarrow as pa


def rescued_json(extra: pa.Table, file) -> pa.Array:
    path = file.uri if file is not None else None
    out = []
    for row in extra.to_pylist():
        kept = {k: v for k, v in row.items() if v is not None}
        out.append(json.dumps({**kept, "_file_path": path}, default=str, separators=(",", ":")) if kept else None)
    return pa.array(out, pa.string())
