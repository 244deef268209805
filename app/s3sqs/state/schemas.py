"""The stream's schema, versioned under `schemaLocation`, and the proposals that evolve it.

Layout (a local path or an s3:// prefix):
    versions/000000.json   {"schema": <Spark's StructType JSON>, "partitionColumns": [...], "cause": "..."}
    proposals/<seq>.json    {"file": uri, "new_columns": [...], "schema": <base64 Arrow IPC schema of the file>}

The query's driver writes versions, one at a time, each a new name: a restart reads the newest and never
infers again. A task that meets new columns writes a proposal (reading/schema_proposals.py) and stops the
stream; the next start merges the proposals into a new version and deletes them.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

from ..core.layout import SCHEMA_PROPOSALS_DIR as PROPOSALS, SCHEMA_VERSIONS_DIR as VERSIONS
from .store import Store



@dataclass(frozen=True)
class SchemaVersion:
    number: int
    schema: dict                         # Spark's StructType.jsonValue()
    partition_columns: tuple[str, ...] = ()
    cause: str = ""


def proposal_name(seq: int) -> str:
    return f"{PROPOSALS}/{seq:012d}.json"


class SchemaLog:
    def __init__(self, store: Store):
        self.store = store

    def latest(self) -> SchemaVersion | None:
        names = [n for n in self.store.list(VERSIONS) if n.endswith(".json")]
        if not names:
            return None
        name = max(names)
        raw = json.loads(self.store.get_bytes(name))
        return SchemaVersion(int(name.rsplit("/", 1)[-1].split(".")[0]), raw["schema"],
                             tuple(raw.get("partitionColumns", ())), raw.get("cause", ""))

    def write(self, schema: dict, partition_columns: tuple[str, ...], cause: str) -> SchemaVersion:
        """The next version after the newest; the store's put is atomic, and no one else writes versions."""
        latest = self.latest()
        number = 0 if latest is None else latest.number + 1
        body = {"schema": schema, "partitionColumns": list(partition_columns), "cause": cause}
        self.store.put_bytes(json.dumps(body, indent=1).encode(), f"{VERSIONS}/{number:06d}.json")
        return SchemaVersion(number, schema, tuple(partition_columns), cause)

    def proposals(self) -> list[tuple[str, dict]]:
        out = []
        for name in self.store.list(PROPOSALS):
            raw = self.store.get_bytes(name)
            if raw and name.endswith(".json"):
                out.append((name, json.loads(raw)))
        return out

    def drop(self, names: list[str]) -> None:
        self.store.delete(names)
