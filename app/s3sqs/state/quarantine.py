"""The quarantine's layout: where a batch's file problems are written down, and reading them back.

A task (reading/quarantine_writer.py) writes one small JSON record per file that was not read cleanly,
under `LOCATION/batches/<batch end>/<seq>.json`, and a copy of a bad file under `LOCATION/files/`. A
replayed batch writes the same names again, so records never double. The driver reads a committed
batch's records to log them and to mark the files in the index; operators find them by batch or by file.
"""
from __future__ import annotations

import json
import time
from collections import Counter

from ..core.files import S3File
from ..core.vocabulary import FileStatus
from ..core.layout import QUARANTINE_BATCHES_DIR, QUARANTINE_FILES_DIR
from .store import Store


def batch_dir(batch_end: int) -> str:
    return f"{QUARANTINE_BATCHES_DIR}/{batch_end:012d}"


def record_name(batch_end: int, f: S3File) -> str:
    return f"{batch_dir(batch_end)}/{f.seq:012d}.json"


def copy_name(f: S3File) -> str:
    return f"{QUARANTINE_FILES_DIR}/{f.seq:012d}-{f.name}"


def record(f: S3File, status: FileStatus, error: str | None = None, malformed: int = 0,
           dropped: int = 0, reason: str | None = None, new_columns: tuple[str, ...] = ()) -> dict:
    """`reason`: the first malformed row's (column, value, expected type); `new_columns`: the file's columns
    that the schema lacks (read all the same, under schemaEvolutionMode rescue or none)."""
    rec = {"seq": f.seq, "file": f.uri, "size": f.size, "status": str(status), "error": error,
           "malformed_rows": malformed, "dropped_rows": dropped, "at": time.time()}
    if reason:
        rec["reason"] = reason
    if new_columns:
        rec["new_columns"] = list(new_columns)
    return rec


def read_records(store: Store, batch_end: int) -> list[dict]:
    """The records of one batch, in file order."""
    out = []
    for name in store.list(batch_dir(batch_end)):
        raw = store.get_bytes(name)
        if raw:
            out.append(json.loads(raw))
    return sorted(out, key=lambda r: r.get("seq", 0))


def tally(records: list[dict]) -> dict[str, int]:
    """Files quarantined and missing, malformed rows, and files with new columns, in some records."""
    by = Counter(r["status"] for r in records)
    return {FileStatus.QUARANTINED: by[FileStatus.QUARANTINED], FileStatus.MISSING: by[FileStatus.MISSING],
            FileStatus.MALFORMED_ROWS: sum(r.get("malformed_rows", 0) for r in records),
            FileStatus.NEW_COLUMNS: sum(1 for r in records if r.get("new_columns"))}


def first_reason(records: list[dict]) -> str | None:
    """The first malformed row's reason in some records, with its file, for a batch's one line."""
    r = next((r for r in records if r.get("reason")), None)
    return None if r is None else f"{r['file']}: {r['reason']}"
