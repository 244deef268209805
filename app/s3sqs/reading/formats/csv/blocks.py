"""Where a block of a big multiLine CSV file may end: after a whole record, as Spark's parser splits the
file (tokens.py), so that each block's records are the ones its bytes hold inside the whole file.

With multiLine a quoted value may hold line breaks, and only the file's first kind of line break ends
records, so a block is cut only where the first line break after the cut is of the file's kind: the
next block then finds the file's line break first, as its header (put before it) does.

The usual block is cut by counting quotes (numpy): every quote opens a value right after a delimiter or a
record's end, or closes one right before, and no escape char comes before a quote. Any other block is
tokenized (tokens.py) to find its records. The delimiter, quote, escape and comment chars are one byte
each (blocks.cuttable), so the bytes are scanned as latin-1: a char is a byte.
"""
from __future__ import annotations

import re

import numpy as np

from ....config.format_options import CsvOptions
from .tokens import Dialect, one_char_newline, record_spans

_BREAK = re.compile(rb"\r\n|\r|\n")
_BOM = b"\xef\xbb\xbf"
_TAIL_BYTES = 256 << 10


def block_end(data: bytes | bytearray, opts: CsvOptions) -> int:
    """Where a block may end: at the start of its last record that is whole and whose first line break
    ends it (with the whole next record in `data`); 0: read more."""
    d = Dialect.of(opts)
    newline = _newline(data, d)
    if newline is None:
        return 0
    plain = _plain_end(np.frombuffer(data, np.uint8), d, newline)
    return plain if plain is not None else _tokenized_end(data, d, newline)


def header_end(head: bytes, opts: CsvOptions) -> int | None:
    """The length of a multiLine CSV file's bytes up to the end of its first record, the header (a quoted
    name may hold line breaks); None when `head` does not reach it."""
    skip = len(_BOM) if head.startswith(_BOM) else 0
    d = Dialect.of(opts)
    text, newline, back = one_char_newline(head[skip:].decode("latin-1"), d.line_sep)
    for _tokens, _start, end in record_spans(text, d, newline):
        if end >= len(text):
            return None  # the record may go on past `head`
        return skip + _original(text, end, newline, back)
    return None


def _newline(data, d: Dialect) -> bytes | None:
    if d.line_sep:
        return d.line_sep.encode("latin-1")
    m = _BREAK.search(data)
    return None if m is None else m.group()


def _plain_end(a: np.ndarray, d: Dialect, newline: bytes) -> int | None:
    """block_end by counting quotes, or None when the block's quotes are not all plain."""
    if d.comment and (a == ord(d.comment)).any():
        return None
    nl = np.frombuffer(newline, np.uint8)
    quotes = np.flatnonzero(a == ord(d.quote)) if d.quote else np.empty(0, np.int64)
    if quotes.size:
        if d.escape == d.quote:
            return None
        sep = ord(d.sep)
        opening, closing = quotes[0::2], quotes[1::2]
        start = len(_BOM) if a[:len(_BOM)].tobytes() == _BOM else 0
        opens = (opening == start) | (a.take(opening - 1, mode="clip") == sep) | _ends_at(a, opening, nl)
        closes = (closing == a.size - 1) | (a.take(closing + 1, mode="clip") == sep) | _starts_at(a, closing + 1, nl)
        if not (opens.all() and closes.all()):
            return None
        if d.escape and (a.take(quotes[quotes > 0] - 1) == ord(d.escape)).any():
            return None
    window = _TAIL_BYTES  # the cut is near the end: look there first, further back only if need be
    while True:
        lo = max(a.size - window, 0)
        cut = _last_cut(a, lo, quotes, nl, check_kind=not d.line_sep)
        if cut or lo == 0:
            return cut
        window *= 16


def _last_cut(a: np.ndarray, lo: int, quotes: np.ndarray, nl: np.ndarray, check_kind: bool) -> int:
    """The last cut after `lo`: the start of a record (its end in `a`) after a line break outside quotes
    (an even count of quotes before it), whose first line break is of the file's kind; 0: none."""
    ends = lo + np.flatnonzero(a[lo:] == nl[0])
    ends = ends[_starts_at(a, ends, nl)]
    ends = ends[np.searchsorted(quotes, ends) % 2 == 0]
    starts = ends[:-1] + nl.size
    if check_kind and starts.size:
        breaks = lo + np.flatnonzero((a[lo:] == 10) | (a[lo:] == 13))
        first = breaks[np.searchsorted(breaks, starts)]  # there is one: the record's own end
        kind = _starts_at(a, first, nl)
        if nl.size == 1 and nl[0] == 13:  # \r, and not \r\n
            kind &= (first + 1 < a.size) & (a.take(first + 1, mode="clip") != 10)
        starts = starts[kind]
    return int(starts[-1]) if starts.size else 0


def _starts_at(a: np.ndarray, at: np.ndarray, seq: np.ndarray) -> np.ndarray:
    """A mask: whether `seq` starts at each position in `at`."""
    ok = at + seq.size <= a.size
    for i, byte in enumerate(seq):
        ok &= a.take(at + i, mode="clip") == byte
    return ok


def _ends_at(a: np.ndarray, at: np.ndarray, seq: np.ndarray) -> np.ndarray:
    """A mask: whether `seq` ends just before each position in `at`."""
    ok = at >= seq.size
    for i, byte in enumerate(seq[::-1], 1):
        ok &= a.take(at - i, mode="clip") == byte
    return ok


def _tokenized_end(data, d: Dialect, newline: bytes) -> int:
    """block_end by tokenizing the block as Spark's parser does."""
    text, one, back = one_char_newline(bytes(data).decode("latin-1"), newline.decode("latin-1"))
    starts = [start for _tokens, start, end in record_spans(text, d, one) if start and end < len(text)]
    for start in reversed(starts):
        cut = _original(text, start, one, back)
        if d.line_sep or _BREAK.search(data, cut).group() == newline:
            return cut
    return 0


def _original(text: str, pos: int, one: str, back: str | None) -> int:
    """The offset in the bytes before a stand-in char replaced each two-char line break."""
    return pos + text.count(one, 0, pos) * (len(back) - 1) if back else pos
