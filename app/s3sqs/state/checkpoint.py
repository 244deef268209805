"""Spark's own checkpoint, read: which batches it logged (offsets/N) and committed (commits/N), and the end
offset of each, as this source's `{"seq": N}`. Used by the job to know what is in the sink and by the
state view to tell a file's status."""
from __future__ import annotations

import json
import re

from ..core.layout import SPARK_COMMITS_DIR
from .store import Store


def newest_batch(checkpoint: Store) -> tuple[int | None, int | None, bool]:
    """(batch id, end seq, committed) of the newest offset Spark logged in a checkpoint."""
    ids = _ids(checkpoint, "offsets")
    if not ids:
        return None, None, False
    batch = max(ids)
    return batch, logged_end(checkpoint, batch), checkpoint.get_bytes(f"commits/{batch}") is not None


def logged_end(checkpoint: Store, batch: int) -> int:
    """The end seq Spark logged for a batch."""
    raw = checkpoint.get_bytes(f"offsets/{batch}") or b""
    # Spark's offset log: a version line, the batch metadata, then one line per source.
    lines = [ln for ln in raw.decode().splitlines() if ln.strip()]
    try:
        return int(json.loads(lines[-1])["seq"])
    except (IndexError, KeyError, TypeError, ValueError):
        raise ValueError(f"offsets/{batch} in the checkpoint is not an s3-sqs offset log: {raw[:200]!r}") from None


def committed_end(checkpoint: Store) -> tuple[int | None, int | None]:
    """(batch id, end seq) of the newest batch Spark committed to the sink; (None, None) before the first.
    Spark commits batches in order, so every seq up to that end is in the sink."""
    ids = _ids(checkpoint, SPARK_COMMITS_DIR)
    if not ids:
        return None, None
    return max(ids), logged_end(checkpoint, max(ids))


def _ids(checkpoint: Store, log: str) -> list[int]:
    return [int(n.rsplit("/", 1)[-1]) for n in checkpoint.list(log) if re.fullmatch(rf"{log}/\d+", n)]
