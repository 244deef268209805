"""What a task needs to read its files (ReadSpec), apart from the reading itself: the planning processes
build it without loading the readers (reader.py), which only the tasks run."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..core.endpoint import Endpoint
from ..core.vocabulary import BadFileAction, SchemaEvolution
from .formats.base import FormatOptions


@dataclass(frozen=True)
class ReadSpec:
    """Everything a task needs to read its files; it travels inside the partition."""
    format: FormatOptions
    endpoint: Endpoint = field(default_factory=Endpoint)
    partition_columns: tuple[str, ...] = ()
    base_path: str | None = None
    quarantine_location: str = ""
    on_bad_file: str = BadFileAction.QUARANTINE
    evolution: str = SchemaEvolution.NONE  # what a file with columns the schema lacks does
    schema_location: str = ""
    infer_column_types: bool = False        # how a new column's type is inferred (as the schema's were)
