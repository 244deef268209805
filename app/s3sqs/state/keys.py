"""The RocksDB key layout of the file index, and its codec. Raw bytes; big-endian integers keep numeric order.

  d<dedup key>            -> seq          has this file been seen? (core.files.dedup_key)
  s<seq>                  -> S3File JSON  the files of offsets (a, b], for planning and replay
  t<event ms><seq>        -> dedup key    age index, so trimming costs what it removes
  b<start seq>            -> end seq      planned batches, for reprocessing by batch id
  c<end seq>              -> ms           when the batch ending there was committed
  q<seq>                  -> record JSON  what became of a file that was not read cleanly (quarantine.py)
  m<name>                 -> value        counters: last seq, committed seq, stats
"""
from __future__ import annotations

import struct
from typing import Iterator

_U64 = struct.Struct(">Q")
DEDUP, SEQ, AGE, BATCH, COMMIT, PROBLEM, META = b"d", b"s", b"t", b"b", b"c", b"q", b"m"
LAST_SEQ, COMMITTED, STATS = "last_seq", "committed", "stats"


def u64(n: int) -> bytes:
    return _U64.pack(n)


def int_of(raw: bytes) -> int:
    return _U64.unpack(raw[:8])[0]


def dedup(key: str) -> bytes:
    return DEDUP + key.encode()


def seq(n: int) -> bytes:
    return SEQ + u64(n)


def age(event_ms: int, n: int) -> bytes:
    return AGE + u64(max(event_ms, 0)) + u64(n)


def age_parts(key: bytes) -> tuple[int, int]:
    """(event ms, seq) of an age key."""
    return int_of(key[1:9]), int_of(key[9:17])


def batch(start: int) -> bytes:
    return BATCH + u64(start)


def commit(end: int) -> bytes:
    return COMMIT + u64(end)


def problem(n: int) -> bytes:
    return PROBLEM + u64(n)


def meta(name: str) -> bytes:
    return META + name.encode()


def number(key: bytes) -> int:
    """The number after a one-byte prefix (seq, batch start, commit end, problem seq)."""
    return int_of(key[1:9])


def scan(db, prefix: bytes, start: bytes | None = None) -> Iterator[tuple[bytes, bytes]]:
    """(key, value) of the keys with `prefix`, from `start` (default: the first), in order."""
    for k, v in db.items(from_key=start or prefix):
        if not k.startswith(prefix):
            return
        yield k, v
