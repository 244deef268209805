"""Executor side of the quarantine: a task records each file it could not read cleanly, in the layout of
state/quarantine.py, with a copy of a bad file, through pyarrow's filesystems."""
from __future__ import annotations

import logging

import pyarrow.fs as pafs

from ..core.files import S3File
from ..core.vocabulary import FileStatus
from ..state.quarantine import copy_name, record, record_name
from .filesystems import Filesystems, put_json, with_retries

log = logging.getLogger("s3sqs.reader")


def write_record(filesystems: Filesystems, location: str, batch_end: int, f: S3File, status: FileStatus,
                 error: str | None = None, malformed: int = 0, dropped: int = 0, reason: str | None = None,
                 new_columns: tuple[str, ...] = ()) -> None:
    fs, root = filesystems.for_location(location)
    rec = record(f, status, error, malformed, dropped, reason, new_columns)
    if status == FileStatus.QUARANTINED:
        rec["copy"] = f"{location.rstrip('/')}/{copy_name(f)}"
        try:
            with_retries(f"{f.uri} (quarantine copy)", lambda: _copy(filesystems, f, fs, f"{root}/{copy_name(f)}"))
        except OSError as e:  # the record still says what went wrong, and where the file was
            rec["copy"] = None
            log.warning("s3-sqs could not copy %s to quarantine: %s", f.uri, e)
    put_json(filesystems, location, record_name(batch_end, f), rec, "quarantine record")


def _copy(filesystems: Filesystems, f: S3File, dest_fs: pafs.FileSystem, dest: str) -> None:
    dest_fs.create_dir(dest.rsplit("/", 1)[0], recursive=True)
    pafs.copy_files(f.path, dest, source_filesystem=filesystems.of(f), destination_filesystem=dest_fs)
