"""How a batch's files become Spark partitions: big splittable files cut into pieces by byte range
(`split_files`, `split_bytes`), then files and pieces packed by bytes (`pack`). Pure: the stream reader
plans each batch's partitions with them."""
from __future__ import annotations

import heapq
from typing import Callable

from ..core.files import Piece, S3File
from ..reading.blocks import split_ranges

# What opening one more file in a task is worth, in bytes, when packing. Spark counts 4 MB for a task that
# opens its files one by one; a task here opens several at once (reader.READ_THREADS).
OPEN_COST_BYTES = 128 << 10
SPLIT_OPEN_COST = 4 << 20  # Spark's openCostInBytes: the smallest piece a split file is cut into (split_bytes)


def split_bytes(files: list[S3File], max_partition_bytes: int, slots: int) -> int:
    """How big the pieces of a batch's split files are: maxPartitionBytes, or less when the batch's bytes
    spread over its slots are less, but not under the open cost. Spark's maxSplitBytes, so that one big
    file alone in a batch is read by every core, as Spark's file source reads it."""
    total = sum((f.size or 0) + SPLIT_OPEN_COST for f in files)
    return min(max_partition_bytes, max(SPLIT_OPEN_COST, total // max(1, slots)))


def split_files(files: list[S3File], splittable: Callable[[S3File], bool],
                max_partition_bytes: int) -> list[S3File | Piece]:
    """A splittable file bigger than `max_partition_bytes` becomes pieces of that many bytes (the last one
    shorter), as Spark's file source splits it, so that several tasks read it; every other file stays whole."""
    out: list[S3File | Piece] = []
    for f in files:
        if f.size is not None and f.size > max_partition_bytes and splittable(f):
            out.extend(Piece(f, start, length) for start, length in split_ranges(f.size, max_partition_bytes))
        else:
            out.append(f)
    return out


def item_size(item: S3File | Piece) -> int:
    """The bytes a file, or a piece of one, brings to a partition."""
    if isinstance(item, Piece):
        return (item.file.size or 0) if item.length is None else item.length
    return item.size or 0


def pack(files: list, size_of: Callable[[object], int], max_partition_bytes: int, slots: int,
         open_cost: int = OPEN_COST_BYTES) -> list[list]:
    """Pack files into partitions by bytes: at least `slots` partitions (the cores that read them), more
    only when the bytes need it (`max_partition_bytes` each). Every Python task has a fixed cost (about a
    quarter of a second on Spark 4.0), and a task reads its files in parallel, so few full partitions
    beat many small ones. Largest files first, each into the lightest partition."""
    if not files:
        return []
    costs = [(size_of(f) or 0) + open_cost for f in files]
    n = max(1, min(len(files), max(slots, -(-sum(costs) // max_partition_bytes))))
    heap = [(0, i) for i in range(n)]
    parts: list[list] = [[] for _ in range(n)]
    for cost, f in sorted(zip(costs, files), key=lambda cf: cf[0], reverse=True):
        load, i = heapq.heappop(heap)
        parts[i].append(f)
        heapq.heappush(heap, (load + cost, i))
    return [p for p in parts if p]
