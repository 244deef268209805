"""Executor side of the quarantine: a task records each file it could not read cleanly, in the layout of
state/quarantine.py, with a copy of a bad file, through pyarrow's filesystems."""
from __future__ import annotations

import json
import logging

import pyarrow.fs as pafs

from ..core.files import S3File
from ..core.vocabulary import FileStatus
from ..state.quarantine import copy_name, record, record_name
from ..core.endpoint import ensure_parent
from .filesystems import Filesystems, put_json, with_retries

log = logging.getLogger("s3sqs.reader")


def write_record(filesystems: Filesystems, location: str, batch_end: int, f: S3File, status: FileStatus,
                 error: str | None = None, malformed: int = 0, dropped: int = 0, reason: str | None = None,
                 new_columns: tuple[str, ...] = (), keep: bool = False, copy: bool = True) -> None:
    """One record per file and batch. `keep`: the file was split across tasks and this piece only has
    malformed rows or new columns to report, so a record by another piece that sets the file aside (bad or
    missing) stays as it is. `copy`: a quarantined file is copied beside its record, unless it could not be
    read at all (HTTP 403), when its record says `copy: null` and why in its error."""
    fs, root = filesystems.for_location(location)
    if keep and _sets_aside(fs, f"{root}/{record_name(batch_end, f)}"):
        log.warning("s3-sqs: %s is already set aside by another part of it; its record stays", f.uri)
        return
    rec = record(f, status, error, malformed, dropped, reason, new_columns)
    if status == FileStatus.QUARANTINED and not copy:
        rec["copy"] = None
    elif status == FileStatus.QUARANTINED:
        rec["copy"] = f"{location.rstrip('/')}/{copy_name(f)}"
        try:
            with_retries(f"{f.uri} (quarantine copy)", lambda: _copy(filesystems, f, fs, f"{root}/{copy_name(f)}"))
        except OSError as e:  # the record still says what went wrong, and where the file was
            rec["copy"] = None
            log.warning("s3-sqs could not copy %s to quarantine: %s", f.uri, e)
    put_json(filesystems, location, record_name(batch_end, f), rec, "quarantine record")


def _sets_aside(fs: pafs.FileSystem, path: str) -> bool:
    if fs.get_file_info(path).type == pafs.FileType.NotFound:
        return False
    with fs.open_input_stream(path) as stream:
        return json.loads(stream.read().decode()).get("status") in (FileStatus.QUARANTINED, FileStatus.MISSING)


def _copy(filesystems: Filesystems, f: S3File, dest_fs: pafs.FileSystem, dest: str) -> None:
    ensure_parent(dest_fs, dest)
    pafs.copy_files(f.path, dest, source_filesystem=filesystems.of(f), destination_filesystem=dest_fs)
