"""Reading a big text file, or a byte range of one, in blocks of whole lines (XML, multiLine CSV: of whole
rows): memory bounded by the block size, whatever the file's size, and compressed files decompressed as
they stream, never whole.

Each block goes through the format's own reader (the same code, fast path and exact path, as a whole
file), so a block's rows are the rows its lines give inside the whole file (blocks.py says why). A CSV
file with a header has its header line (and the blank or comment lines before it) put before every
block but the file's first, so each block is read with the same names. A transient fault while streaming
reopens the file at the offset reached (a compressed stream is read again up to it): no byte is read
twice into the rows.

A big Parquet or ORC file is read a row group or stripe at a time (the format's `read_parts`); there a
transient fault that outlasts pyarrow's own retries fails the task, which Spark runs again.
"""
from __future__ import annotations

import codecs
import functools
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterator

import pyarrow as pa
import pyarrow.fs as pafs

from ..config.format_options import CsvOptions, ReaderOptions
from ..core.files import Piece
from ..core.vocabulary import FileFormat
from . import blocks as _blocks
from .blocks import compressed, cut_blocks, first_line_end, header_prefix, line_blocks, separator
from .filesystems import Filesystems, with_retries
from .formats import FileRows, FormatOptions

_SCAN_BYTES = 64 << 10  # read at a time when looking for a line's end


class RangeStream:
    """The (decompressed) bytes of a file from an offset on, read in chunks; a transient fault reopens the
    file at the offset reached and the read is tried again (filesystems.with_retries). With `encoding`
    (one where a line break is not always that byte: blocks.transcoded), the bytes are decoded as they
    come, as a whole file's read decodes them (a bad byte becomes U+FFFD), and given as UTF-8."""

    def __init__(self, fs: pafs.FileSystem, path: str, compression: str | None, offset: int = 0,
                 encoding: str | None = None):
        self.fs, self.path, self.compression, self.offset = fs, path, compression, offset
        self._stream = None
        self._decoder = codecs.getincrementaldecoder(encoding)(errors="replace") if encoding else None

    def read(self, n: int) -> bytes:
        data = with_retries(self.path, lambda: self._read(n))
        if self._decoder is None:
            return data
        while True:  # a chunk may end inside a character: the decoder keeps its bytes for the next one
            text = self._decoder.decode(data, final=not data)
            if text or not data:
                return text.encode("utf-8")
            data = with_retries(self.path, lambda: self._read(n))

    def _read(self, n: int) -> bytes:
        try:
            if self._stream is None:
                self._stream = self._open()
            data = self._stream.read(n)
        except BaseException:
            self.close()
            raise
        self.offset += len(data)
        return data

    def _open(self):
        if self.compression is None:
            fh = self.fs.open_input_file(self.path)
            fh.seek(self.offset)
            return fh
        stream = self.fs.open_input_stream(self.path, compression=self.compression)
        skip = self.offset
        while skip:  # a compressed stream cannot seek: decompress up to where the last read ended
            got = len(stream.read(min(skip, _blocks.BLOCK_BYTES)))
            if not got:
                raise EOFError(f"{self.path} ended at {self.offset - skip} bytes while reopening it at {self.offset}")
            skip -= got
        return stream

    def close(self) -> None:
        if self._stream is not None:
            stream, self._stream = self._stream, None
            stream.close()


def line_start_after(fs: pafs.FileSystem, path: str, start: int, sep: bytes) -> int | None:
    """The offset of the first line that starts after `start` (Hadoop's rule: the line `start` is in, or
    that starts at it, belongs to the range before); None when no line starts after it."""
    stream = RangeStream(fs, path, None, start)
    try:
        pos = start
        while True:
            chunk = stream.read(_SCAN_BYTES)
            if not chunk:
                return None
            end = first_line_end(chunk, sep)
            if end is not None:
                return pos + end
            pos += len(chunk)
    finally:
        stream.close()


def csv_header(fs: pafs.FileSystem, path: str, compression: str | None, opts: CsvOptions,
               encoding: str | None = None) -> bytes:
    """A CSV file's bytes up to the end of its header line (in UTF-8 when decoded from `encoding`)."""
    stream = RangeStream(fs, path, compression, encoding=encoding)
    head = b""
    try:
        while True:
            chunk = stream.read(_SCAN_BYTES)
            head += chunk
            prefix = header_prefix(head, opts)
            if prefix is not None or not chunk:
                return head if prefix is None else prefix
    finally:
        stream.close()


def raw_blocks(fs: pafs.FileSystem, piece: Piece, opts: ReaderOptions, block_bytes: int | None = None,
               block_end: Callable[[bytearray], int] | None = None, encoding: str | None = None) -> Iterator[bytes]:
    """The piece's lines, in blocks of whole lines (of blocks.BLOCK_BYTES unless told). With
    `block_end(pending bytes)` (a whole file, never split: XML, multiLine CSV), blocks end where it says
    instead. With `encoding` (a whole file, never split), the file is decoded from it into UTF-8 first."""
    block_bytes = block_bytes or _blocks.BLOCK_BYTES
    path, sep = piece.file.path, separator(opts)
    codec = "detect" if compressed(path) else None
    begin = 0 if piece.start == 0 else line_start_after(fs, path, piece.start, sep)
    end = piece.end
    if begin is None or (end is not None and begin > end):
        return  # no line starts in this range: the range before reads them all
    stream = RangeStream(fs, path, codec, begin, encoding)
    try:
        if block_end is not None:
            yield from cut_blocks(stream.read, block_bytes, block_end)
        else:
            yield from line_blocks(stream.read, block_bytes, sep, None if end is None else end - begin)
    finally:
        stream.close()


def stream_rows(filesystems: Filesystems, piece: Piece, reader, fields: list[pa.Field], fo: FormatOptions,
                block_bytes: int | None = None) -> Iterator[FileRows]:
    """The rows of a piece of a file, block by block (the next block is read while this one is parsed)."""
    fs = filesystems.of(piece.file)
    if hasattr(reader, "read_parts"):  # Parquet, ORC: a row group or stripe at a time; Avro: a few blocks
        with fs.open_input_file(piece.file.path) as fh:
            ranged = () if piece.whole else (piece.start, piece.end)  # only Avro's files are split
            yield from reader.read_parts(fh, fields, fo, piece.file, *ranged)
        return
    fo, blocks = text_blocks(fs, piece, reader, fo, block_bytes)
    later = fo.after_start()
    block_fo = fo if piece.start == 0 else later
    try:
        with ThreadPoolExecutor(max_workers=1) as ahead:
            pending = ahead.submit(next, blocks, None)
            while True:
                data = pending.result()
                if data is None:
                    return
                pending = ahead.submit(next, blocks, None)
                yield reader.read(pa.py_buffer(data), fields, block_fo, piece.file)
                block_fo = later
    finally:
        blocks.close()  # the executor has waited for its read: the stream is closed now, not when collected


def text_blocks(fs: pafs.FileSystem, piece: Piece, reader, fo: FormatOptions,
                block_bytes: int | None = None) -> tuple[FormatOptions, Iterator[bytes]]:
    """The options the piece's blocks are read with, and the blocks, each as its reader reads it: a CSV
    header before every block but the file's first (which holds it). A file in an encoding whose line
    breaks are not always those bytes (blocks.transcoded) is decoded as it streams: its blocks are UTF-8."""
    source = fo.options.encoding if _blocks.transcoded(fo.options) else None
    if source:
        fo = fo.in_utf8()
    return fo, _text_blocks(fs, piece, reader, fo, block_bytes, source)


def _text_blocks(fs: pafs.FileSystem, piece: Piece, reader, fo: FormatOptions, block_bytes: int | None,
                 source: str | None) -> Iterator[bytes]:
    opts = fo.options
    header = b""
    if fo.file_format == FileFormat.CSV and opts.header:
        codec = "detect" if compressed(piece.file.path) else None
        header = csv_header(fs, piece.file.path, codec, opts, source)
    block_end = None
    if _blocks.cut_at_rows(fo.file_format, opts):
        block_end = functools.partial(reader.block_end, opts=opts)
    blocks = raw_blocks(fs, piece, opts, block_bytes, block_end, source)
    try:
        for i, block in enumerate(blocks):
            yield block if (i == 0 and piece.start == 0) or not header else header + block
    finally:
        blocks.close()
