"""Each format's reader options: Spark's names, defaults and meanings, validated where they enter.

Pure data, safe for the executors to import. The readers (reading/formats/) get a plain dict of every option of their format, by its canonical name,
with the defaults filled in, so a reader never guesses a default. Names match case-insensitively, and
Spark's synonyms (`delimiter` for `sep`, `charset` for `encoding`) are accepted.

To add an option: one line in FORMAT_OPTIONS, its meaning in the format's reader, a row in docs/source.md (or docs/formats.md).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ..core.units import parse_size_bytes
from ..core.vocabulary import FileFormat

ISO_TIMESTAMP = "yyyy-MM-dd'T'HH:mm:ss[.SSS][XXX]"  # Spark's default timestampFormat (CSV, JSON, XML)
ISO_DATE = "yyyy-MM-dd"


def parse_bool(v: str) -> bool:
    # Not fields.parse_bool: the executors import this module, and fields imports pydantic (slow to import).
    s = str(v).strip().lower()
    if s in ("true", "1", "yes"):
        return True
    if s in ("false", "0", "no"):
        return False
    raise ValueError(f"must be true or false, got {v!r}")


def _char(v: str) -> str:
    if len(v) != 1:
        raise ValueError(f"must be a single character, got {v!r}")
    return v


def _char_or_off(v: str) -> str:
    """One character, or '' to turn the feature off (Spark's way to disable quoting)."""
    if len(v) > 1:
        raise ValueError(f"must be a single character, or empty to turn it off; got {v!r}")
    return v


def _line_sep(v: str) -> str:
    if not v or len(v) > 2:
        raise ValueError(f"must be one or two characters such as \\n or \\r\\n, got {v!r}")
    return v


def _encoding(v: str) -> str:
    import codecs
    try:
        return codecs.lookup(v).name
    except LookupError:
        raise ValueError(f"must be a character encoding such as UTF-8 or ISO-8859-1, got {v!r}") from None


def _size(v: str) -> int:
    try:
        n = parse_size_bytes(v)
    except ValueError:
        raise ValueError(f"must be a size like 512m or 1g, got {v!r}") from None
    if n <= 0:
        raise ValueError(f"must be positive, got {v!r}")
    return n


def _text(v: str) -> str:
    return v


@dataclass(frozen=True)
class Opt:
    parse: Callable[[str], Any]
    default: Any
    keep_blank: bool = False  # an empty value means something ('' turns quoting off); otherwise it is "not given"


_DATES = {"dateFormat": Opt(_text, ISO_DATE), "timestampFormat": Opt(_text, ISO_TIMESTAMP)}

FORMAT_OPTIONS: dict[str, dict[str, Opt]] = {
    FileFormat.CSV: {
        "sep": Opt(_char, ","), "quote": Opt(_char_or_off, '"', True), "escape": Opt(_char_or_off, "\\", True),
        "comment": Opt(_char_or_off, "", True), "header": Opt(parse_bool, False),
        "nullValue": Opt(_text, "", True), "emptyValue": Opt(_text, "", True), **_DATES,
        "encoding": Opt(_encoding, "utf-8"), "multiLine": Opt(parse_bool, False),
        "ignoreLeadingWhiteSpace": Opt(parse_bool, False), "ignoreTrailingWhiteSpace": Opt(parse_bool, False),
        "lineSep": Opt(_char, None),  # None: \n, \r\n and \r all end a line
    },
    FileFormat.JSON: {
        "multiLine": Opt(parse_bool, False), **_DATES, "encoding": Opt(_encoding, "utf-8"),
        "lineSep": Opt(_line_sep, None), "primitivesAsString": Opt(parse_bool, False),
        "prefersDecimal": Opt(parse_bool, False),
    },
    FileFormat.XML: {
        "rowTag": Opt(_text, None), "attributePrefix": Opt(_text, "_", True), "valueTag": Opt(_text, "_VALUE"),
        "nullValue": Opt(_text, None, True), "ignoreNamespace": Opt(parse_bool, False),
        "ignoreSurroundingSpaces": Opt(parse_bool, True), "excludeAttribute": Opt(parse_bool, False),
        **_DATES, "encoding": Opt(_encoding, "utf-8"),
    },
    FileFormat.TEXT: {"wholetext": Opt(parse_bool, False), "lineSep": Opt(_line_sep, None)},
    FileFormat.BINARY_FILE: {"maxFileSize": Opt(_size, 512 << 20)},
    FileFormat.PARQUET: {},
    FileFormat.ORC: {},
    FileFormat.AVRO: {},
}
SYNONYMS = {"delimiter": "sep", "charset": "encoding"}
# Formats whose rows can be malformed, so that `mode` applies.
ROW_FORMATS = (FileFormat.CSV, FileFormat.JSON, FileFormat.XML)
ALL_NAMES = sorted({n for opts in FORMAT_OPTIONS.values() for n in opts} | set(SYNONYMS))


def canonical(name: str) -> str | None:
    """The canonical spelling of a reader option's name (any case, synonyms too); None if no format has it."""
    by_lower = {n.lower(): n for n in ALL_NAMES}
    n = by_lower.get(name.lower())
    return SYNONYMS.get(n, n) if n else None


def defaults(fmt: str) -> dict[str, Any]:
    return {name: opt.default for name, opt in FORMAT_OPTIONS[fmt].items()}


def reader_options(fmt: str, given: dict[str, str]) -> dict[str, Any]:
    """Every option of `fmt` by canonical name, parsed, defaults filled in. `given` holds canonical names.
    Raises ValueError("option 'x' ...") naming the option and what it must be."""
    known = FORMAT_OPTIONS[fmt]
    out = defaults(fmt)
    for name, raw in given.items():
        if name not in known:
            listed = ", ".join(sorted(known)) or "none"
            raise ValueError(f"option '{name}' does not apply to fileFormat {fmt}; its reader options: {listed}")
        opt = known[name]
        if raw == "" and not opt.keep_blank:  # not raw.strip(): a tab, a space or \r\n is a separator
            continue
        try:
            out[name] = opt.parse(raw)
        except ValueError as e:
            raise ValueError(f"option '{name}' {e}") from None
    if fmt == FileFormat.XML and not out["rowTag"]:
        raise ValueError("option 'rowTag' is required for fileFormat xml: the element that holds one row, "
                         "e.g. .option('rowTag', 'book')")
    return out


def unreadable_column(fmt: str, columns: list[tuple[str, str]]) -> str | None:
    """Why a declared column cannot be read from `fmt` files, or None. `columns` are (name, Spark's
    simpleString of its type); checked before anything runs, so a schema that would quarantine every file
    fails at once, naming the column."""
    for name, simple in columns:
        if fmt == FileFormat.CSV and simple.startswith(("struct<", "array<", "map<")):
            return (f"column {name!r} is {simple.split('<')[0].upper()}, but CSV holds no nested values; declare it "
                    "STRING (and parse it in --transform), or read the files as json")
        if "variant" in simple and fmt != FileFormat.JSON:
            return f"column {name!r} is VARIANT, which only fileFormat json reads into; declare it STRING for {fmt}"
    return None
