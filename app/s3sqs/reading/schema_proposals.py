"""Executor side of schema evolution: a file with columns the schema lacks, under a mode that stops the
stream. With addNewColumns the task first writes the file's own schema as a proposal under the schema
location (state/schemas.py's layout), so the next start of the query merges it; then it stops the stream
with one line naming the file and the columns."""
from __future__ import annotations

import base64
import json

import pyarrow as pa

from ..core.errors import NewColumnsFound
from ..core.files import S3File
from ..core.vocabulary import SchemaEvolution
from ..state.schemas import proposal_name
from .filesystems import Filesystems, with_retries


def stop_for_new_columns(filesystems: Filesystems, schema_location: str, mode: str, f: S3File,
                         unknown: tuple[str, ...], file_schema) -> None:
    """Raise NewColumnsFound; with addNewColumns, after `file_schema()` is stored as a proposal."""
    cols = ", ".join(unknown)
    if mode == SchemaEvolution.ADD_NEW_COLUMNS:
        schema: pa.Schema = file_schema()
        body = {"file": f.uri, "seq": f.seq, "new_columns": list(unknown),
                "schema": base64.b64encode(schema.serialize().to_pybytes()).decode()}
        fs, root = filesystems.for_location(schema_location)
        path = f"{root}/{proposal_name(f.seq)}"
        fs.create_dir(path.rsplit("/", 1)[0], recursive=True)

        def put():
            with fs.open_output_stream(path) as out:
                out.write(json.dumps(body).encode())
        with_retries(f"{path} (schema proposal)", put)
        raise NewColumnsFound(
            f"NewColumnsFound: {f.uri} has new columns {cols}; the schema under {schema_location} takes them at "
            "the next start: restart the query to ingest from this file on (the job restarts by itself)")
    raise NewColumnsFound(
        f"NewColumnsFound: {f.uri} has new columns {cols} and schemaEvolutionMode is failOnNewColumns; add them "
        "to the schema, or choose schemaEvolutionMode addNewColumns, rescue or none")


def decode_schema(text: str) -> pa.Schema:
    return pa.ipc.read_schema(pa.py_buffer(base64.b64decode(text)))
