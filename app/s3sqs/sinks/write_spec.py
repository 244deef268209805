"""What a task needs to write a batch's table files (WriteSpec), apart from the writing itself: Spark's
planning processes carry it inside the direct write's reader without loading the writer (table_files.py),
which only the tasks run."""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from ..core.endpoint import Endpoint
from .location import Location


@dataclass(frozen=True)
class WriteSpec:
    """Everything a task needs, passed as one JSON option (tasks get no other state)."""
    table_format: str
    location: str                    # folder the files go to (the Delta table root, Iceberg's data/)
    partition_by: tuple[str, ...]
    target_file_size: int
    batch_id: int
    write_id: str                    # unique per write attempt of a batch
    handoff: str                     # local file on the driver that receives the list of files
    endpoint: Endpoint = Endpoint()

    def to_option(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_option(cls, text: str) -> "WriteSpec":
        d = json.loads(text)
        d["partition_by"] = tuple(d["partition_by"])
        d["endpoint"] = Endpoint(**d["endpoint"])
        return cls(**d)

    @property
    def target(self) -> Location:
        return Location(self.location, self.endpoint)
