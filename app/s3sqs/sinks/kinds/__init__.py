"""The sink kinds and their registry: one class per kind (parquet.py, delta.py, iceberg.py), each a `Sink`
(base.py), and `from_flags`, the job's sink. Adding a sink is its module, a member of `SinkKind` and a line
in `_CLASSES` (docs/extending.md)."""
from __future__ import annotations

from enum import StrEnum
from importlib import import_module


class SinkKind(StrEnum):
    PARQUET = "parquet"
    DELTA = "delta"
    ICEBERG = "iceberg"


# Imported when first asked for: each kind's module loads its own table library.
_CLASSES = {
    SinkKind.PARQUET: "parquet:ParquetSink",
    SinkKind.DELTA: "delta:DeltaSink",
    SinkKind.ICEBERG: "iceberg:IcebergSink",
}


def sink_class(kind: str):
    """The `Sink` class of `kind` (a SinkKind or its value)."""
    module, name = _CLASSES[SinkKind(kind)].split(":")
    return getattr(import_module(f"{__name__}.{module}"), name)


def from_flags(args, *, import_transform: bool = False):
    """The sink of the parsed flags, checked as far as it can be without Spark; with `import_transform`
    (the job, where the --transform module must be found) its function is imported and checked too.
    Raises SinkError naming the flag."""
    sink = sink_class(args.sink).from_flags(args)
    if import_transform and sink.transform:
        from ..transform import load_transform
        load_transform(sink.transform)
    return sink
