"""The files of the batches planned and not yet committed, kept from their plan. Spark asks for a batch's
files right after planning it (`partitions`), and its commit marker lists them again: reading them back from
the index each time cost about a fifth of what the driver spends on a file. Lost with the process: a
restarted source reads them from the index, as a replay must."""
from __future__ import annotations

from ..core.files import S3File


class BatchFiles:
    def __init__(self) -> None:
        self._batches: dict[int, tuple[int, list[S3File]]] = {}  # start -> (end, files)

    def keep(self, start: int, end: int, files: list[S3File]) -> None:
        """A plan of (start, end]; a later plan from the same start replaces it."""
        if end > start:
            self._batches[start] = (end, files)

    def between(self, start: int, end: int) -> list[S3File] | None:
        """The files of offsets (start, end] if kept batches cover exactly that range, else None."""
        out: list[S3File] = []
        at = start
        while at < end:
            kept = self._batches.get(at)
            if kept is None:
                return None
            at, files = kept
            out.extend(files)
        return out if at == end else None

    def forget_upto(self, committed: int) -> None:
        for start in [s for s, (e, _) in self._batches.items() if e <= committed]:
            del self._batches[start]
