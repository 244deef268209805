"""Each format's reader options: Spark's names, defaults and meanings, validated where they enter, and the
typed value each reader gets.

Pure data, safe for the executors to import. Each format has a frozen dataclass of its options (CsvOptions,
JsonOptions, ...): a field per option, in snake case, that declares Spark's name, the default and the
parser; FORMAT_OPTIONS, the table `reader_options` validates by, is derived from them. Names match
case-insensitively, and Spark's synonyms (`delimiter` for `sep`, `charset` for `encoding`) are accepted.

To add an option: a field of the format's class here, its meaning in the format's reader (reading/formats/),
a row in docs/source.md and docs/formats.md, a test (docs/layout.md lists them).
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields
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


def positive_size(v: Any, like: str) -> int:
    """Bytes from a size such as 512m or 1g; ValueError("must be a size like <like> got ...") otherwise."""
    try:
        n = parse_size_bytes(str(v))
    except ValueError:
        raise ValueError(f"must be a size like {like} got {v!r}") from None
    if n <= 0:
        raise ValueError(f"must be positive, got {v!r}")
    return n


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
    return positive_size(v, "512m or 1g,")


def _text(v: str) -> str:
    return v


@dataclass(frozen=True)
class Opt:
    name: str  # Spark's
    default: Any
    parse: Callable[[str], Any]
    keep_blank: bool = False  # an empty value means something ('' turns quoting off); otherwise it is "not given"


def option(name: str, default: Any, parse: Callable[[str], Any], keep_blank: bool = False):
    """A field of a format's options class: the option Spark calls `name`, its default and its parser."""
    return field(default=default, metadata={"opt": Opt(name, default, parse, keep_blank)})


@dataclass(frozen=True)
class CsvOptions:
    sep: str = option("sep", ",", _char)
    quote: str = option("quote", '"', _char_or_off, keep_blank=True)  # '': quoting off
    escape: str = option("escape", "\\", _char_or_off, keep_blank=True)
    comment: str = option("comment", "", _char_or_off, keep_blank=True)
    header: bool = option("header", False, parse_bool)
    null_value: str = option("nullValue", "", _text, keep_blank=True)
    empty_value: str = option("emptyValue", "", _text, keep_blank=True)
    date_format: str = option("dateFormat", ISO_DATE, _text)
    timestamp_format: str = option("timestampFormat", ISO_TIMESTAMP, _text)
    encoding: str = option("encoding", "utf-8", _encoding)
    multi_line: bool = option("multiLine", False, parse_bool)
    ignore_leading_white_space: bool = option("ignoreLeadingWhiteSpace", False, parse_bool)
    ignore_trailing_white_space: bool = option("ignoreTrailingWhiteSpace", False, parse_bool)
    line_sep: str | None = option("lineSep", None, _char)  # None: \n, \r\n and \r all end a line


@dataclass(frozen=True)
class JsonOptions:
    multi_line: bool = option("multiLine", False, parse_bool)
    date_format: str = option("dateFormat", ISO_DATE, _text)
    timestamp_format: str = option("timestampFormat", ISO_TIMESTAMP, _text)
    encoding: str = option("encoding", "utf-8", _encoding)
    line_sep: str | None = option("lineSep", None, _line_sep)  # None: \n, \r\n and \r all end a line
    primitives_as_string: bool = option("primitivesAsString", False, parse_bool)
    prefers_decimal: bool = option("prefersDecimal", False, parse_bool)


@dataclass(frozen=True)
class XmlOptions:
    row_tag: str | None = option("rowTag", None, _text)  # required: reader_options says so
    attribute_prefix: str = option("attributePrefix", "_", _text, keep_blank=True)
    value_tag: str = option("valueTag", "_VALUE", _text)
    null_value: str | None = option("nullValue", None, _text, keep_blank=True)
    ignore_namespace: bool = option("ignoreNamespace", False, parse_bool)
    ignore_surrounding_spaces: bool = option("ignoreSurroundingSpaces", True, parse_bool)
    exclude_attribute: bool = option("excludeAttribute", False, parse_bool)
    date_format: str = option("dateFormat", ISO_DATE, _text)
    timestamp_format: str = option("timestampFormat", ISO_TIMESTAMP, _text)
    encoding: str = option("encoding", "utf-8", _encoding)


@dataclass(frozen=True)
class TextOptions:
    wholetext: bool = option("wholetext", False, parse_bool)
    line_sep: str | None = option("lineSep", None, _line_sep)  # None: \n, \r\n and \r all end a line


@dataclass(frozen=True)
class BinaryFileOptions:
    max_file_size: int = option("maxFileSize", 512 << 20, _size)


@dataclass(frozen=True)
class NoOptions:
    """Parquet, ORC and Avro: no reader options (the files carry their own types)."""


ReaderOptions = CsvOptions | JsonOptions | XmlOptions | TextOptions | BinaryFileOptions | NoOptions
OPTIONS_CLASSES: dict[str, type] = {
    FileFormat.CSV: CsvOptions, FileFormat.JSON: JsonOptions, FileFormat.XML: XmlOptions,
    FileFormat.TEXT: TextOptions, FileFormat.BINARY_FILE: BinaryFileOptions,
    FileFormat.PARQUET: NoOptions, FileFormat.ORC: NoOptions, FileFormat.AVRO: NoOptions,
}
FORMAT_OPTIONS: dict[str, dict[str, Opt]] = {
    fmt: {f.metadata["opt"].name: f.metadata["opt"] for f in fields(cls)} for fmt, cls in OPTIONS_CLASSES.items()}
_FIELD_NAMES: dict[str, dict[str, str]] = {  # format -> Spark's name -> the class's field
    fmt: {f.metadata["opt"].name: f.name for f in fields(cls)} for fmt, cls in OPTIONS_CLASSES.items()}
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


def typed(fmt: str, values: dict[str, Any]) -> ReaderOptions:
    """The format's options class from values by canonical name, already parsed (reader_options' result);
    an option left out takes its default."""
    names = _FIELD_NAMES[fmt]
    return OPTIONS_CLASSES[fmt](**{names[name]: v for name, v in values.items()})


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
