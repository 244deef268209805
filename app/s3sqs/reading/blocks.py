"""Pure decisions of reading a big text file in pieces: which files may be cut at line breaks, how a file is
split into byte ranges across tasks, and how a stream of bytes is cut into blocks of whole lines.

Without multiLine, Spark ends a CSV or JSON record at every line break (Hadoop's line reader), quoted or
not, so a line break is a record boundary and a block of whole lines reads exactly as the same lines do
inside the whole file. An XML file, or a multiLine CSV file, is cut after whole rows where its reader's
`block_end` says, and never split. A byte range follows Hadoop's rule: the range [start, end) owns the
lines that start in (start, end] (and the line at 0 for the first range). It skips to the first line
start after `start` (that line belongs to the range before) and reads past `end` to finish its last line.
"""
from __future__ import annotations

import codecs
from typing import Callable, Iterator

from ..config.format_options import CsvOptions, ReaderOptions
from ..core.vocabulary import FileFormat

BLOCK_BYTES = 8 << 20       # bytes of text parsed at once when a file is read in blocks (peak ~16x)
BIG_FILE_BYTES = 64 << 20   # a text file above this (uncompressed) is read in blocks, never whole
# A compressed file above this is read in blocks too: its text may be many times its size.
BIG_COMPRESSED_BYTES = 4 << 20
# pyarrow's own detection of compression by extension (what open_input_stream(compression="detect") does).
COMPRESSED_SUFFIXES = (".gz", ".bz2", ".lz4", ".zst")
# Encodings in which a line-break byte is always a line break (not part of another character).
_ASCII_SAFE = {"utf-8", "ascii", "iso8859-1", "cp1252"}
NEWLINE = b"\n"


def cuttable(file_format: str, opts: ReaderOptions) -> bool:
    """Whether a file of this format and options may be read in blocks: of whole lines, CSV and JSON
    without multiLine, text without wholetext; of whole rows (`cut_at_rows`), XML and multiLine CSV whose
    delimiter, quote, escape and comment chars are ASCII. In any encoding: one where a line-break byte, '<'
    or '>' may be part of another character is decoded first (`transcoded`)."""
    if file_format == FileFormat.CSV:
        if opts.multi_line and not all(
                c < "\x80" for c in (opts.sep, opts.quote, opts.escape, opts.comment, opts.line_sep or "")):
            return False
    elif file_format == FileFormat.JSON:
        if opts.multi_line:
            return False
    elif file_format == FileFormat.TEXT:
        if opts.wholetext:
            return False
    elif file_format != FileFormat.XML:
        return False
    return True


def transcoded(opts: ReaderOptions) -> bool:
    """Whether a file's bytes are decoded into UTF-8 as they stream, before they are cut into blocks: its
    encoding is one where a line-break byte, '<' or '>' may be part of another character (UTF-16, UTF-32,
    Shift JIS...). Such a file is never split across tasks."""
    enc = getattr(opts, "encoding", None)  # text has no encoding: its bytes are kept as they are
    return enc is not None and codecs.lookup(enc).name not in _ASCII_SAFE


def cut_at_rows(file_format: str, opts: ReaderOptions) -> bool:
    """Whether a file's blocks end after whole rows where its reader's `block_end` says, rather than at
    line breaks: XML, and CSV with multiLine (a quoted value may hold line breaks)."""
    return file_format == FileFormat.XML or (file_format == FileFormat.CSV and bool(opts.multi_line))


def separator(opts: ReaderOptions) -> bytes:
    """The bytes after which a block may end: the lineSep when set, else \\n (which ends \\r\\n too; a file
    whose lines end in bare \\r has no cut point and is read as one block)."""
    sep = getattr(opts, "line_sep", None)  # XML has none: its blocks end after rows
    return sep.encode("utf-8") if sep else NEWLINE


def compressed(path: str) -> bool:
    return path.lower().endswith(COMPRESSED_SUFFIXES)


def splittable(file_format: str, opts: ReaderOptions, path: str) -> bool:
    """Whether a file may be split by byte range across tasks: cuttable, uncompressed, default line ends
    (as Spark splits only files that a Hadoop line reader can start reading mid-file); Avro at its sync
    markers, as Spark's Avro reader splits it."""
    if file_format == FileFormat.AVRO:
        return True
    return cuttable(file_format, opts) and not cut_at_rows(file_format, opts) and not transcoded(opts) \
        and not compressed(path) and not opts.line_sep


def read_in_blocks(file_format: str, opts: ReaderOptions, path: str, size: int | None) -> bool:
    """Whether a whole file is streamed in blocks rather than fetched into one buffer (Parquet and ORC:
    read a row group or stripe at a time rather than whole; Avro a few of its blocks at a time)."""
    if file_format in (FileFormat.PARQUET, FileFormat.ORC):
        return size is None or size > BIG_FILE_BYTES
    if file_format == FileFormat.AVRO:  # compressed block by block: its records can be 10× its size, and more
        return size is None or size > BIG_COMPRESSED_BYTES
    if not cuttable(file_format, opts):
        return False
    if size is None:
        return True
    return size > (BIG_COMPRESSED_BYTES if compressed(path) else BIG_FILE_BYTES)


def split_ranges(size: int, piece_bytes: int) -> list[tuple[int, int]]:
    """(start, length) of each piece of a file of `size` bytes, `piece_bytes` each but the last (Spark's
    PartitionedFileUtil.splitFiles). A file no bigger than a piece is one piece."""
    if piece_bytes <= 0:
        raise ValueError(f"piece size must be positive, got {piece_bytes}")
    if size <= piece_bytes:
        return [(0, size)]
    return [(s, min(piece_bytes, size - s)) for s in range(0, size, piece_bytes)]


def line_blocks(read: Callable[[int], bytes], block_bytes: int, sep: bytes = NEWLINE,
                limit: int | None = None) -> Iterator[bytes]:
    """Blocks of whole lines from a stream (`read(n)` gives up to n bytes, b"" at its end): each block ends
    just after a separator, about `block_bytes` long (a line longer than a block makes a longer one); the
    last block ends where the stream does. With `limit`, the stream's lines are those that start at or
    before offset `limit`: the blocks end after the first separator found at or past it."""
    def after_last_sep(data: bytearray) -> int:
        at = data.rfind(sep)
        return 0 if at < 0 else at + len(sep)
    return cut_blocks(read if limit is None else _lines_to(read, limit, sep), block_bytes, after_last_sep)


def _lines_to(read: Callable[[int], bytes], limit: int, sep: bytes) -> Callable[[int], bytes]:
    """The stream `read` gives, ended just after the first separator that starts at or past `limit`."""
    consumed, tail, done = 0, b"", False  # tail: the last bytes read, where a separator may begin

    def limited(n: int) -> bytes:
        nonlocal consumed, tail, done
        if done:
            return b""
        chunk = read(n)
        if not chunk:
            return b""
        start = consumed - len(tail)  # the stream offset of (tail + chunk)[0]
        seen = tail + chunk
        at = seen.find(sep, max(limit - start, 0)) if start + len(seen) > limit else -1
        consumed += len(chunk)
        if at >= 0:
            done = True
            return chunk[:at + len(sep) - len(tail)]
        tail = seen[-(len(sep) - 1):] if len(sep) > 1 else b""
        return chunk
    return limited


def cut_blocks(read: Callable[[int], bytes], block_bytes: int,
               end_of: Callable[[bytearray], int]) -> Iterator[bytes]:
    """Blocks from a stream, each about `block_bytes` long and ending where `end_of(pending bytes)` says
    (0: nowhere yet, read more; it only reads them); the last ends where the stream does."""
    pending = bytearray()
    while True:
        chunk = read(block_bytes)
        if not chunk:
            if pending:
                yield bytes(pending)
            return
        pending += chunk
        if len(pending) >= block_bytes:
            at = end_of(pending)
            if at > 0:
                yield bytes(pending[:at])
                del pending[:at]


def first_line_end(data: bytes, sep: bytes = NEWLINE) -> int | None:
    """The offset just past the first separator in `data`, or None if it has none."""
    at = data.find(sep)
    return None if at < 0 else at + len(sep)


def header_prefix(head: bytes, opts: CsvOptions) -> bytes | None:
    """The bytes of a CSV file up to and including its header line (blank and comment lines before it
    too, as the reader skips them), to put before every block but the first so that each is read with the
    same header; None when `head` does not reach the header's end (read more of the file). With multiLine,
    up to the end of its first record (formats/csv/blocks.header_end)."""
    if opts.multi_line:
        from .formats.csv.blocks import header_end  # here: the CSV package loads its reader, which planning must not
        end = header_end(head, opts)
        return None if end is None else head[:end]
    sep = separator(opts)
    comment = (opts.comment or "").encode("utf-8")
    pos = 0
    while True:
        end = first_line_end(head[pos:], sep)
        if end is None:
            return None
        line = head[pos:pos + end]
        if pos == 0 and line.startswith(b"\xef\xbb\xbf"):
            line = line[3:]
        pos += end
        text = line.strip(bytes(range(33)))
        if text and not (comment and text.startswith(comment)):
            return head[:pos]
