"""Which small files of a table to combine, and the sizes before and after. Pure, with unit tests; the
table formats carry the plans out (delta.py, iceberg.py)."""
from __future__ import annotations

import statistics
from dataclasses import dataclass

from ..core.units import human_bytes
from .target import SinkError


@dataclass(frozen=True)
class TableFile:
    """A live data file of a table, as compaction sees it."""
    path: str
    size: int
    partition: tuple = ()


def plan_compaction(files: list[TableFile], target_size: int, min_input_files: int = 2) -> list[list[TableFile]]:
    """Groups of small files to rewrite as one file each. Only files of one partition are combined; a
    file of at least 3/4 of the target is left alone; groups fill up to the target size, smallest files
    first, and a group of fewer than `min_input_files` files is not worth a rewrite."""
    if target_size <= 0:
        raise SinkError("the target file size must be positive")
    small = [f for f in files if f.size < target_size * 3 // 4]
    by_partition: dict[tuple, list[TableFile]] = {}
    for f in small:
        by_partition.setdefault(f.partition, []).append(f)
    groups = []
    for partition in sorted(by_partition, key=repr):
        current, size = [], 0
        for f in sorted(by_partition[partition], key=lambda f: (f.size, f.path)):
            if current and size + f.size > target_size:
                groups.append(current)
                current, size = [], 0
            current.append(f)
            size += f.size
        groups.append(current)
    return [g for g in groups if len(g) >= min_input_files]


@dataclass(frozen=True)
class FileSizes:
    count: int
    median_bytes: float
    total_bytes: int

    @classmethod
    def of(cls, sizes: list[int]) -> "FileSizes":
        return cls(len(sizes), float(statistics.median(sizes)) if sizes else 0.0, sum(sizes))

    def describe(self) -> str:
        return f"{self.count} files, median {human_bytes(self.median_bytes)}, total {human_bytes(self.total_bytes)}"
