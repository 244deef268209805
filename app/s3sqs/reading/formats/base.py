"""The one small interface every format reader has: a file's bytes and the format's options in, the rows
of the declared columns (plus the rescued-data column when asked) and the count of malformed rows out."""
from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa

from ...core.errors import S3SqsError
from ...core.vocabulary import Mode


class MalformedFile(S3SqsError, ValueError):
    """FAILFAST met a malformed row, or the file is not the declared format; the message says which and why."""


@dataclass(frozen=True)
class FormatOptions:
    """How to turn a file's bytes into rows: the format, its reader options, what a malformed row does, and
    the rescued-data column (set only when the declared schema has it)."""
    file_format: str
    options: dict = field(default_factory=dict)
    mode: str = Mode.PERMISSIVE
    rescued_column: str | None = None


@dataclass
class FileRows:
    table: pa.Table       # the declared data columns that the file has, plus the rescued column if asked
    malformed: int = 0    # rows with a value or a shape that did not fit
    dropped: int = 0      # of those, rows left out (DROPMALFORMED)


def empty(fields: list[pa.Field]) -> FileRows:
    return FileRows(pa.table({f.name: pa.array([], f.type) for f in fields}))
