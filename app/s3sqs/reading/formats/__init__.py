"""One module or package per file format, each with the same small interface (base.py):

    read(data, fields, FormatOptions, file) -> FileRows  # bytes (or an open file) -> Arrow rows + malformed counts
    infer(data, FormatOptions, infer_types) -> pa.Schema # the file's own columns, for inference and evolution
    RANDOM_ACCESS: bool                                  # read from an open file instead of the whole bytes
    COMPRESSION: "detect" | None                         # decompress by extension before `read`
    read_parts(open file, fields, FormatOptions, file[, start, end]) -> Iterator[FileRows]
                                 # optional: a big file a part at a time (Parquet, ORC, Avro), Avro's by byte range
    block_end(bytes, options) -> int  # optional: where a block of a big file may end (XML, multiLine CSV)
    warm() -> None               # optional: import what reading takes, before the stream's first files (Avro)
    SCHEMA: pa.Schema            # optional: the one schema of every file of the format (text, binaryFile)

`file` is the S3File (path, size, times) for formats whose rows describe the file itself. `infer_types`
is inferColumnTypes: text formats give STRING columns without it, as Auto Loader does; formats that carry
their own types ignore it. FormatOptions.options is the format's options class (CsvOptions...). A new
format is a new module (or a package whose __init__ has the interface) here, listed in MODULES, plus its
options class in config/format_options.py; common/ holds what several formats use. A format's module is
imported when it is first asked for: Spark's planning processes import this package for FormatOptions only.
"""
from __future__ import annotations

from importlib import import_module
from types import ModuleType

from ...core.vocabulary import FileFormat
from .base import FileRows, FormatOptions, MalformedFile, empty

MODULES: dict[str, str] = {
    FileFormat.CSV: "csv", FileFormat.JSON: "json", FileFormat.PARQUET: "parquet", FileFormat.ORC: "orc",
    FileFormat.AVRO: "avro", FileFormat.TEXT: "text", FileFormat.BINARY_FILE: "binary_file", FileFormat.XML: "xml",
}

__all__ = ["MODULES", "FileRows", "FormatOptions", "MalformedFile", "empty", "reader_of"]


def reader_of(file_format: str) -> ModuleType:
    return import_module(f"{__name__}.{MODULES[file_format]}")
