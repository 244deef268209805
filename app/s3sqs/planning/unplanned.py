"""The files this process recorded and no plan has taken yet, as they were numbered. Planning takes a batch's
files from here instead of reading them back from the index and decoding them again, which cost about a
sixth of what the driver spends on a file. Bounded: past MAX_KEPT files (a long listing), the rest are read
from the index, as after a restart."""
from __future__ import annotations

from ..core.files import S3File

# Twice what the intake may record ahead of planning (intake_pacing.MAX_PENDING_FILES): about 12 MiB at most.
MAX_KEPT = 20_000


class Unplanned:
    def __init__(self) -> None:
        self._files: dict[int, S3File] = {}  # seq -> file, in seq order (seqs are given in increasing order)

    def __len__(self) -> int:
        return len(self._files)

    def add(self, numbered: list[S3File]) -> None:
        room = MAX_KEPT - len(self._files)
        for f in numbered[:max(0, room)]:
            self._files[f.seq] = f

    def take(self, start: int, end: int) -> list[S3File] | None:
        """The files of offsets (start, end] if every one is kept, else None. Either way nothing up to `end`
        is kept afterwards: a plan has reached it."""
        files, out, whole = self._files, [], True
        for seq in range(start + 1, end + 1):
            f = files.pop(seq, None)
            if f is None:
                whole = False
            else:
                out.append(f)
        while files and next(iter(files)) <= end:  # planned another way (read from the index)
            del files[next(iter(files))]
        return out if whole else None

    def forget(self) -> None:
        """The index renumbered files (latestFirst): what is kept may no longer be at its seq."""
        self._files.clear()
