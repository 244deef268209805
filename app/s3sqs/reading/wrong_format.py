"""Pure: whether a file read is set aside as not being its declared format, and the words that say why.

Spark's PERMISSIVE reader commits a file in which no row parses (a CSV file read as JSON, JSON lines read
as CSV) as rows of nulls, and the query goes on as if nothing happened. Here such a file (at least one row,
every row malformed) is set aside like any other bad file: quarantined with a copy and this reason, or the
batch fails under onBadFile=fail. Its rows would be nulls that say nothing, and the file can be read again
once the options or the schema are fixed (reprocess its batch).

Rows go in as Spark puts them when:
- the mode is DROPMALFORMED (the user asked to drop such rows) or FAILFAST (the file already fails);
- the schema declares the rescued-data column: every value of a malformed row is kept, in its column or
  in that one (JSON and XML keep a record that does not parse at all whole, as `_row`), so nothing is
  lost, and the rows are what the user asked to keep. The RowsMalformed metric and its alarm report them.
  (Spark's corrupt-record column is not this source's: `columnNameOfCorruptRecord` is refused, and a
  column named `_corrupt_record` is an ordinary one that no file fills, so it keeps nothing and changes
  nothing here.)
- the file has columns the schema lacks: a CSV header wider than the schema makes every row malformed,
  and that is the schema changing, which schemaEvolutionMode decides.

A file read in blocks (big.py) holds its rows back while none has parsed, so that it is judged before any
of them goes out; once the rows held reach a bound (reader.HOLD_BYTES) with none parsed, it is judged on
them. A file split across tasks is judged piece by piece, each piece as such a file.
"""
from __future__ import annotations

from dataclasses import fields

from ..core.vocabulary import FileFormat, Mode
from .formats import FormatOptions

# The options that decide how a file of each format splits into rows and values, by Spark's names: the
# ones to check when no row parses. Encoding and lineSep are named only when set to something else than
# their defaults.
_SHAPING = {
    FileFormat.CSV: ("header", "sep", "quote", "escape", "multiLine"),
    FileFormat.JSON: ("multiLine",),
    FileFormat.XML: ("rowTag",),
}
_WHEN_SET = (("encoding", "utf-8"), ("lineSep", None))


def may_set_aside(fo: FormatOptions) -> bool:
    """Whether files read with `fo` are ever set aside for their rows: PERMISSIVE, no rescued-data column."""
    return fo.mode == Mode.PERMISSIVE and fo.rescued_column is None


def not_the_format(fo: FormatOptions, rows: int, malformed: int, first_reason: str | None,
                   new_columns: tuple[str, ...] = (), whole: bool = True) -> str | None:
    """Why a file is set aside as not being `fo.file_format`, or None when its rows go in.

    `rows` were read (kept or dropped), `malformed` of them malformed, the first for `first_reason`: set
    aside when there are rows and every one is malformed, and `may_set_aside`. Not when the file has
    `new_columns` (columns the schema lacks, such as a CSV header wider than the schema, which makes every
    row malformed): that is the schema changing, which schemaEvolutionMode decides. With `whole` False,
    the rows are the first of a file read in blocks, held back while none parses."""
    if not may_set_aside(fo) or new_columns or not 0 < rows <= malformed:
        return None
    fmt = fo.file_format
    which = f"its {rows} rows" if whole else f"its first {rows} rows"
    first = f"; the first: {first_reason}" if first_reason else ""
    return (f"not {fmt} as declared: every one of {which} is malformed, read as fileFormat {fmt} with "
            f"{shaping_options(fo)}{first}. Check that the file is {fmt} and that these options and the schema "
            "fit it, then reprocess its batch; or declare the rescued-data column to keep such rows")


def shaping_options(fo: FormatOptions) -> str:
    """The format's options that decide its rows, as `name=value` by Spark's names."""
    by_name = {f.metadata["opt"].name: getattr(fo.options, f.name) for f in fields(fo.options) if "opt" in f.metadata}
    shown = [n for n in _SHAPING.get(fo.file_format, ()) if n in by_name]
    shown += [n for n, default in _WHEN_SET if n in by_name and by_name[n] != default]
    return ", ".join(f"{n}={_spelled(by_name[n])}" for n in shown) or "no options"


def _spelled(value) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    return repr(value) if isinstance(value, str) else str(value)
