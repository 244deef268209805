"""Where a batch's file problems are written down, and read back when the batch commits.

A task writes one small JSON record per file that was not read cleanly, under
`LOCATION/batches/<batch end>/<seq>.json`, and a copy of a bad file under `LOCATION/files/`. A replayed
batch writes the same names again, so records never double. The driver reads a committed batch's
records to log them and to mark the files in the index; operators find them by batch or by file.
"""
from __future__ import annotations

import json
import logging
import time

import pyarrow.fs as pafs

from .files import S3File
from .objects import Filesystems, with_retries
from .storage import Store

log = logging.getLogger("s3sqs.reader")

QUARANTINED, MISSING, MALFORMED_ROWS = "quarantined", "missing", "malformed_rows"


def batch_dir(batch_end: int) -> str:
    return f"batches/{batch_end:012d}"


def copy_name(f: S3File) -> str:
    return f"files/{f.seq:012d}-{f.key.rsplit('/', 1)[-1]}"


def write_record(filesystems: Filesystems, location: str, batch_end: int, f: S3File, status: str,
                 error: str | None = None, malformed: int = 0, dropped: int = 0) -> None:
    fs, root = filesystems.for_location(location)
    record = {"seq": f.seq, "file": f.uri, "size": f.size, "status": status, "error": error,
              "malformed_rows": malformed, "dropped_rows": dropped, "at": time.time()}
    if status == QUARANTINED:
        record["copy"] = f"{location.rstrip('/')}/{copy_name(f)}"
        try:
            with_retries(f"{f.uri} (quarantine copy)", lambda: _copy(filesystems, f, fs, f"{root}/{copy_name(f)}"))
        except OSError as e:  # the record still says what went wrong, and where the file was
            record["copy"] = None
            log.warning("s3-sqs could not copy %s to quarantine: %s", f.uri, e)
    path = f"{root}/{batch_dir(batch_end)}/{f.seq:012d}.json"
    fs.create_dir(path.rsplit("/", 1)[0], recursive=True)

    def put():
        with fs.open_output_stream(path) as out:
            out.write(json.dumps(record).encode())
    with_retries(f"{path} (quarantine record)", put)


def _copy(filesystems: Filesystems, f: S3File, dest_fs: pafs.FileSystem, dest: str) -> None:
    dest_fs.create_dir(dest.rsplit("/", 1)[0], recursive=True)
    pafs.copy_files(f.path, dest, source_filesystem=filesystems.of(f), destination_filesystem=dest_fs)


def read_records(store: Store, batch_end: int) -> list[dict]:
    """The records of one batch, in file order."""
    out = []
    for name in store.list(batch_dir(batch_end)):
        raw = store.get_bytes(name)
        if raw:
            out.append(json.loads(raw))
    return sorted(out, key=lambda r: r.get("seq", 0))
