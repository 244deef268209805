"""Executor side of schema evolution: a file with columns the schema lacks, under a mode that stops the
stream. With addNewColumns the task first writes the file's own schema as a proposal under the schema
location (state/schemas.py's layout), so the next start of the query merges it; then it stops the stream
with one line naming the file and the columns."""
from __future__ import annotations

import base64

import pyarrow as pa

from ..core.errors import NewColumnsFound
from ..core.files import S3File
from ..core.vocabulary import SchemaEvolution
from ..state.schemas import proposal_name
from .filesystems import Filesystems, put_json


def stop_for_new_columns(filesystems: Filesystems, schema_location: str, mode: str,
                         found: list[tuple[S3File, tuple[str, ...]]], file_schema) -> None:
    """Raise NewColumnsFound for the task's files with new columns; with addNewColumns, after each file's
    schema (`file_schema(f, its new columns)`) is stored as a proposal, so one restart takes them all."""
    f, unknown = found[0]
    more = f" (and {len(found) - 1} more files)" if len(found) > 1 else ""
    cols = ", ".join(dict.fromkeys(c for _, u in found for c in u))
    if mode == SchemaEvolution.ADD_NEW_COLUMNS:
        for g, new in found:
            _propose(filesystems, schema_location, g, new, file_schema(g, new))
        raise NewColumnsFound(
            f"NewColumnsFound: {f.uri}{more} has new columns {cols}; the schema under {schema_location} takes them "
            "at the next start: restart the query to ingest from this file on (the job restarts by itself)")
    raise NewColumnsFound(
        f"NewColumnsFound: {f.uri}{more} has new columns {cols} and schemaEvolutionMode is failOnNewColumns; add "
        "them to the schema, or choose schemaEvolutionMode addNewColumns, rescue or none")


def _propose(filesystems: Filesystems, schema_location: str, f: S3File, unknown: tuple[str, ...],
             schema: pa.Schema) -> None:
    body = {"file": f.uri, "seq": f.seq, "new_columns": list(unknown),
            "schema": base64.b64encode(schema.serialize().to_pybytes()).decode()}
    put_json(filesystems, schema_location, proposal_name(f.seq), body, "schema proposal")


def decode_schema(text: str) -> pa.Schema:
    return pa.ipc.read_schema(pa.py_buffer(base64.b64decode(text)))
