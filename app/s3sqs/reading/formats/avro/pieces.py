"""A piece of a split Avro file as a stream fastavro can read: the file's header, then its blocks from the
first sync marker at or after the piece's start (Spark's rule for splitting Avro: a block belongs to the
piece its marker starts in)."""
from __future__ import annotations

import io

READ_BYTES = 8 << 20   # fetched at a time from a big file
SYNC_BYTES = 16        # an Avro sync marker
_SCAN_BYTES = 1 << 20  # read at a time when looking for a piece's first sync marker
HEADER_SCHEMA = {"type": "record", "name": "org.apache.avro.file.Header", "fields": [  # the Avro spec's
    {"name": "magic", "type": {"type": "fixed", "name": "Magic", "size": 4}},
    {"name": "meta", "type": {"type": "map", "values": "bytes"}},
    {"name": "sync", "type": {"type": "fixed", "name": "Sync", "size": 16}}]}


def piece_stream(f, start: int, end: int | None):
    """The file's header followed by its blocks from the first sync marker at or after `start` (before
    `end`), as one stream; and the shift from that stream's offsets to the file's. No marker there: the
    header alone (no blocks for this piece)."""
    import fastavro
    f.seek(0)
    header = fastavro.schemaless_reader(f, fastavro.parse_schema(HEADER_SCHEMA), None)
    header_bytes = f.tell()
    marker = _find(f, header["sync"], start, end)
    f.seek(0)
    head = f.read(header_bytes)
    if marker is None:
        return io.BytesIO(head), 0
    return io.BufferedReader(_Spliced(head, f, marker + SYNC_BYTES), buffer_size=READ_BYTES), \
        marker + SYNC_BYTES - header_bytes


def _find(f, sync: bytes, start: int, end: int | None) -> int | None:
    """The offset of the first `sync` starting at or after `start` and before `end`, or None."""
    f.seek(start)
    pos, carry = start, b""
    while end is None or pos - len(carry) < end:
        chunk = f.read(_SCAN_BYTES)
        if not chunk:
            return None
        window = carry + chunk
        at = window.find(sync)
        if at >= 0:
            found = pos - len(carry) + at
            return found if end is None or found < end else None
        carry = window[-(SYNC_BYTES - 1):]
        pos += len(chunk)
    return None


class _Spliced(io.RawIOBase):
    """`head`, then the file from `offset` on: a split piece's stream for fastavro, which reads the header
    first."""

    def __init__(self, head: bytes, f, offset: int):
        self.head, self.f, self.offset, self.pos = head, f, offset, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, pos: int, whence: int = io.SEEK_SET) -> int:
        if whence == io.SEEK_CUR:
            pos += self.pos
        elif whence != io.SEEK_SET:
            raise io.UnsupportedOperation("seek from the end")
        self.pos = pos
        return pos

    def readinto(self, buf) -> int:
        if self.pos < len(self.head):
            got = self.head[self.pos:self.pos + len(buf)]
        else:
            self.f.seek(self.offset + self.pos - len(self.head))
            got = self.f.read(len(buf))
        buf[:len(got)] = got
        self.pos += len(got)
        return len(got)
