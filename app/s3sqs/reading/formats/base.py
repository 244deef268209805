"""The one small interface every format reader has (see __init__.py): a file's bytes and the format's
options in, the rows of the declared columns (plus the rescued-data column when asked), the count of
malformed rows and the columns the file has that the schema lacks out."""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import pyarrow as pa

from ...config.format_options import OPTIONS_CLASSES, ReaderOptions, typed
from ...core.errors import S3SqsError
from ...core.vocabulary import Mode


class MalformedFile(S3SqsError, ValueError):
    """FAILFAST met a malformed row, or the file is not the declared format; the message says which and why."""


@dataclass(frozen=True)
class FormatOptions:
    """How to turn a file's bytes into rows: the format, its reader options (the format's class, such as
    CsvOptions: config/format_options.py), what a malformed row does, and the rescued-data column (set only
    when the declared schema has it)."""
    file_format: str
    # Given as the class, or as a dict by Spark's names (reader_options'), made the class here.
    options: ReaderOptions | dict = field(default_factory=dict)
    mode: str = Mode.PERMISSIVE
    rescued_column: str | None = None
    # The bytes are a later block of a file read in blocks (big.py), not the file's start: checks of what a
    # file begins with do not apply.
    later_block: bool = False

    def __post_init__(self):  # every option present: a reader never holds a default of its own
        if not isinstance(self.options, OPTIONS_CLASSES[self.file_format]):
            object.__setattr__(self, "options", typed(self.file_format, self.options))

    def in_utf8(self) -> "FormatOptions":
        """The same options for the file's text once decoded into UTF-8."""
        return replace(self, options=replace(self.options, encoding="utf-8"))

    def after_start(self) -> "FormatOptions":
        """The same options for a later block of the file (big.py)."""
        return replace(self, later_block=True)


@dataclass
class FileRows:
    table: pa.Table       # the declared data columns that the file has, plus the rescued column if asked
    malformed: int = 0    # rows with a value or a shape that did not fit
    dropped: int = 0      # of those, rows left out (DROPMALFORMED)
    # Fields the file has that the declared schema lacks: top-level names, nested ones as dotted paths
    # ("address.zip"). The stream's schemaEvolutionMode decides what they do.
    unknown: tuple[str, ...] = ()
    reason: str | None = None  # the first malformed row's reason: column, value, expected type


def empty(fields: list[pa.Field]) -> FileRows:
    return FileRows(pa.table({f.name: pa.array([], f.type) for f in fields}))


def decode(data, encoding: str) -> str:
    """A text file's text; bytes that are not `encoding` become U+FFFD as in Spark, a UTF-8 BOM is dropped."""
    raw = data.to_pybytes() if isinstance(data, pa.Buffer) else bytes(data)
    text = raw.decode(encoding, errors="replace")
    return text[1:] if text[:1] == "\ufeff" else text
