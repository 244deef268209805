"""One module per file format, each with the same small interface (base.py):

    read(data, fields, FormatOptions) -> FileRows     # bytes (or an open file) -> Arrow rows + malformed counts
    RANDOM_ACCESS: bool                                # read from an open file instead of the whole bytes
    COMPRESSION: "detect" | None                       # decompress by extension before `read`

A new format is a new module here, listed in READERS, plus its options in config/options.py.
"""
from __future__ import annotations

from types import ModuleType

from ...core.vocabulary import FileFormat
from . import csv, json, parquet
from .base import FileRows, FormatOptions, MalformedFile, empty

READERS: dict[str, ModuleType] = {FileFormat.CSV: csv, FileFormat.JSON: json, FileFormat.PARQUET: parquet}

__all__ = ["READERS", "FileRows", "FormatOptions", "MalformedFile", "empty", "reader_of"]


def reader_of(file_format: str) -> ModuleType:
    return READERS[file_format]
