"""Spark DDL schema strings ("id LONG, name STRING"), parsed without Spark or a JVM.

The job and submit-job check `--schema` with this before Spark starts or a run is submitted, so a typo
fails in milliseconds with the column and the character where it went wrong, instead of a ParseException
after Spark's start-up that does not name the flag.

The grammar is the one Spark's parser takes for these types (tests/config/test_ddl_in_spark.py runs the unit
tests' table through Spark itself, on both supported versions):

    schema  := column (',' column)*
    column  := name [':'] type [NOT NULL] [COMMENT 'text']
    type    := BOOLEAN | TINYINT | BYTE | SMALLINT | SHORT | INT | INTEGER | BIGINT | LONG | FLOAT | REAL
             | DOUBLE | DATE | TIMESTAMP | TIMESTAMP_LTZ | TIMESTAMP_NTZ | BINARY | STRING
             | CHAR(n) | CHARACTER(n) | VARCHAR(n) | DECIMAL|DEC|NUMERIC [(p[, s])]
             | ARRAY<type> | MAP<type, type> | STRUCT<[column (',' column)*]>
    name    := ASCII letters, digits and _ (not a number such as 1L or 1e5) | `anything, `` for a backquote`

Keywords are case-insensitive; `--` and `/* */` comments are skipped, as Spark does. A few things Spark's
parser takes are refused here, each with its reason in the message: a column name that is empty or declared
twice (Spark compares names case-insensitively, and the source matches file columns by name), collations,
and the types no file this source reads can hold (INTERVAL, VOID, TIME). Spark 4.3 also takes a
few forms 4.0.2 (EMR's) does not, such as TIMESTAMP WITHOUT TIME ZONE and COMMENT 'a' 'b'; they are refused.

A schema with `name: type` columns is valid for pyspark's parser but not for `DataStreamReader.schema()`
(StructType.fromDDL); `Schema.ddl` is the same schema in the form every Spark entry point takes.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass

from ..core.errors import UsageError
from ..core.names import closest

MAX_DECIMAL_PRECISION = 38  # Spark's DecimalType.MAX_PRECISION


class SchemaError(UsageError):
    """The schema string is not valid; the message is one line naming the problem and its position."""


@dataclass(frozen=True)
class DataType:
    """A parsed type. `simple` is Spark's simpleString (what `df.dtypes` shows), `ddl` a canonical DDL form,
    `spark_json` Spark's JSON form (DataType.fromJson takes it without a JVM: the source's schema() has none)."""
    simple: str
    ddl: str
    spark_json: str = ""


@dataclass(frozen=True)
class Column:
    name: str
    type: DataType
    nullable: bool = True
    comment: str | None = None

    @property
    def ddl(self) -> str:
        return f"{quote_name(self.name)} {self.type_ddl}"

    @property
    def type_ddl(self) -> str:
        """The type with its NOT NULL and COMMENT."""
        text = self.type.ddl
        if not self.nullable:
            text += " NOT NULL"
        if self.comment is not None:
            text += " COMMENT " + _quote_string(self.comment)
        return text


@dataclass(frozen=True)
class Schema:
    columns: tuple[Column, ...]

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    @property
    def ddl(self) -> str:
        """The same schema as `name TYPE, ...` with every name backquoted: the form every Spark entry point
        takes (DataStreamReader.schema, StructType.fromDDL and pyspark's own parser)."""
        return ", ".join(c.ddl for c in self.columns)

    def column(self, name: str) -> Column | None:
        return next((c for c in self.columns if c.name == name), None)

    def spark_json(self) -> dict:
        """Spark's StructType.jsonValue() of this schema: StructType.fromJson builds it without a JVM."""
        return _struct_json(self.columns)


def _struct_json(columns) -> dict:
    return {"type": "struct", "fields": [
        {"name": c.name, "type": json.loads(c.type.spark_json), "nullable": c.nullable,
         "metadata": {} if c.comment is None else {"comment": c.comment}} for c in columns]}


def parse_schema(text: str, flag: str = "--schema") -> Schema:
    """Parse a DDL schema string, or raise SchemaError("<flag>: <problem> at character N ...")."""
    if not isinstance(text, str) or not text.strip():
        raise SchemaError(f'{flag} is empty; give the columns as DDL, e.g. "id LONG, name STRING"')
    return _Parser(text, flag).schema()


def quote_name(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _quote_string(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


# ---------------------------------------------------------------- types

# Spark's simpleString of each type that takes no parameters -> the keywords that name it.
_KEYWORDS = {
    "boolean": ("boolean",), "tinyint": ("tinyint", "byte"), "smallint": ("smallint", "short"),
    "int": ("int", "integer"), "bigint": ("bigint", "long"), "float": ("float", "real"), "double": ("double",),
    "date": ("date",), "timestamp": ("timestamp", "timestamp_ltz"), "timestamp_ntz": ("timestamp_ntz",),
    "binary": ("binary",), "string": ("string",),
    "variant": ("variant",),  # JSON only (the source checks that when the query starts)
}
_SIMPLE_TYPES = {keyword: simple for simple, keywords in _KEYWORDS.items() for keyword in keywords}
# simpleString -> Spark's JSON type name, where they differ.
_JSON_NAMES = {"tinyint": "byte", "smallint": "short", "int": "integer", "bigint": "long"}
_LENGTH_TYPES = {"char": "char", "character": "char", "varchar": "varchar"}
_DECIMAL_TYPES = ("decimal", "dec", "numeric")
_COMPLEX_TYPES = ("array", "map", "struct")
_ALL_TYPES = tuple(_SIMPLE_TYPES) + tuple(_LENGTH_TYPES) + _DECIMAL_TYPES + _COMPLEX_TYPES
# Spark knows these, but nothing the source reads from CSV, JSON or Parquet files produces them.
_UNSUPPORTED_TYPES = ("interval", "void", "time", "object")


# ---------------------------------------------------------------- tokens

@dataclass(frozen=True)
class _Token:
    kind: str   # "word" (unquoted name or keyword), "quoted" (`name`), "string" ('text'), "punct", "end"
    text: str   # for word/quoted/string: the value; for punct: the character
    pos: int    # 0-based offset in the input

    def show(self) -> str:
        if self.kind == "end":
            return "the end"
        if self.kind == "quoted":
            return quote_name(self.text)
        if self.kind == "string":
            return _quote_string(self.text)
        return f"'{self.text}'"


_WORD_RE = re.compile(r"[A-Za-z0-9_]+")
# What Spark's lexer reads as a number, not a name: 12, 1L, 1S, 1Y, 1e5, 1F, 1D, 1BD, 1e5D...
_NUMBER_RE = re.compile(r"\d+(?:[lsy]|(?:e\d+)?(?:f|d|bd)?)", re.IGNORECASE)
_PUNCT = ",:<>()"


def _tokens(text: str, flag: str) -> list[_Token]:
    out: list[_Token] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
        elif text.startswith("--", i):
            end = text.find("\n", i)
            i = n if end < 0 else end + 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                raise SchemaError(f"{flag}: comment opened at character {i + 1} is never closed with */")
            i = end + 2
        elif c == "`":
            start = i
            value, i = _quoted(text, i, "`", flag, "name")
            out.append(_Token("quoted", value, start))
        elif c in "'\"":
            start = i
            value, i = _string_literal(text, i, flag)
            out.append(_Token("string", value, start))
        elif c in _PUNCT:
            out.append(_Token("punct", c, i))
            i += 1
        else:
            m = _WORD_RE.match(text, i)
            if not m:
                raise SchemaError(f"{flag}: unexpected character {c!r} at character {i + 1}{_near(text, i)}; "
                                  "names with characters other than letters, digits and _ must be `backquoted`")
            out.append(_Token("word", m.group(), i))
            i = m.end()
    out.append(_Token("end", "", n))
    return out


def _quoted(text: str, i: int, q: str, flag: str, what: str) -> tuple[str, int]:
    """A `name` with `` for a backquote; returns (value, index after the closing quote)."""
    start, i, value = i, i + 1, []
    while i < len(text):
        if text[i] == q:
            if text.startswith(q + q, i):
                value.append(q)
                i += 2
                continue
            return "".join(value), i + 1
        value.append(text[i])
        i += 1
    raise SchemaError(f"{flag}: {what} opened with {q} at character {start + 1} is never closed")


_ESCAPES = {"0": "\0", "b": "\b", "n": "\n", "r": "\r", "t": "\t", "Z": "\x1a"}


def _string_literal(text: str, i: int, flag: str) -> tuple[str, int]:
    """A '...' or "..." literal as Spark reads it: backslash escapes."""
    q, start, i, value = text[i], i, i + 1, []
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            value.append(_ESCAPES.get(text[i + 1], text[i + 1]))
            i += 2
            continue
        if c == q:
            return "".join(value), i + 1
        value.append(c)
        i += 1
    raise SchemaError(f"{flag}: text opened with {q} at character {start + 1} is never closed")


def _near(text: str, pos: int) -> str:
    """A short excerpt around `pos`, on one line, so the message shows where."""
    if pos >= len(text):
        return ""
    start, end = max(0, pos - 15), min(len(text), pos + 10)
    excerpt = " ".join(text[start:end].split())
    return f" near '{'…' if start else ''}{excerpt}{'…' if end < len(text) else ''}'"


# ---------------------------------------------------------------- parser

class _Cursor:
    """A position in the tokens, and the one way a parse error is worded."""

    def __init__(self, text: str, flag: str):
        self.text, self.flag = text, flag
        self.tokens = _tokens(text, flag)
        self.i = 0

    @property
    def tok(self) -> _Token:
        return self.tokens[self.i]

    def _advance(self) -> _Token:
        t = self.tokens[self.i]
        self.i += 1
        return t

    def _is(self, punct: str) -> bool:
        return self.tok.kind == "punct" and self.tok.text == punct

    def _keyword(self, word: str) -> bool:
        return self.tok.kind == "word" and self.tok.text.lower() == word

    def _fail(self, problem: str, tok: _Token | None = None, hint: str = "") -> SchemaError:
        tok = tok or self.tok
        where = "at the end" if tok.kind == "end" else f"at character {tok.pos + 1}"
        return SchemaError(f"{self.flag}: {problem} {where}{_near(self.text, tok.pos)}"
                           + (f"; {hint}" if hint else ""))

    def _expect(self, punct: str, what: str) -> _Token:
        if not self._is(punct):
            raise self._fail(f"expected {what}, got {self.tok.show()}")
        return self._advance()

    def _integers(self, type_tok: _Token, least: int, most: int) -> list[int]:
        """(n) or (n, m) after a type name; each a whole number."""
        self._advance()  # (
        values: list[int] = []
        while True:
            t = self.tok
            if t.kind != "word" or not t.text.isdigit():
                raise self._fail(f"expected a whole number in {type_tok.text.upper()}(...), got {t.show()}")
            values.append(int(self._advance().text))
            if self._is(",") and len(values) < most:
                self._advance()
                continue
            break
        if len(values) < least:
            raise self._fail(f"{type_tok.text.upper()}(...) needs {least} numbers")
        self._expect(")", f"')' to close {type_tok.text.upper()}(" + ("" if most == 1 else ", at most "
                                                                    f"{most} numbers"))
        return values



class _Parser(_Cursor):
    """The grammar of the module docstring, one method per rule."""

    def schema(self) -> Schema:
        if self._keyword("struct") and self.tokens[self.i + 1].text == "<":
            raise self._fail("a schema lists its columns without STRUCT<...> around them",
                             hint='e.g. "id LONG, name STRING"')
        columns = self._columns(end=None)
        return Schema(tuple(columns))

    def _columns(self, end: str | None) -> list[Column]:
        """Columns up to `end` ('>' inside STRUCT<>, None for the whole schema)."""
        columns: list[Column] = []
        seen: dict[str, str] = {}
        while True:
            name_tok = self.tok
            col = self._column(inside_struct=end is not None)
            key = col.name.lower()
            if key in seen:
                raise self._fail(f"column {col.name!r} is declared twice", name_tok,
                                 hint="column names must be unique (Spark compares them case-insensitively)")
            seen[key] = col.name
            columns.append(col)
            if self._is(","):
                self._advance()
                if (end is None and self.tok.kind == "end") or (end is not None and self._is(end)):
                    raise self._fail("a column name is missing after ','", hint="remove the trailing ','")
                continue
            if end is None and self.tok.kind == "end":
                return columns
            if end is not None and self._is(end):
                return columns
            expected = "',' between columns or '>' to close STRUCT<" if end else "',' between columns"
            raise self._fail(f"expected {expected}, got {self.tok.show()}")

    def _column(self, inside_struct: bool) -> Column:
        name = self._name()
        if self._is(":"):
            self._advance()
        if self.tok.kind == "end" or self._is(",") or self._is(">"):
            raise self._fail(f"column {name!r} has no type", hint=f"e.g. {quote_name(name)} STRING")
        dtype = self._type(column=name)
        nullable, comment = True, None
        if self._keyword("not"):
            self._advance()
            if not self._keyword("null"):
                raise self._fail(f"expected NULL after NOT, got {self.tok.show()}")
            self._advance()
            nullable = False
        if self._keyword("comment"):
            self._advance()
            if self.tok.kind != "string":
                raise self._fail(f"expected a quoted comment after COMMENT, got {self.tok.show()}",
                                 hint="e.g. COMMENT 'the order id'")
            comment = self._advance().text
        return Column(name, dtype, nullable, comment)

    def _name(self) -> str:
        t = self.tok
        if t.kind == "quoted":
            self._advance()
            if not t.text:
                raise self._fail("a column name is empty", t)
            return t.text
        if t.kind == "word":
            if _NUMBER_RE.fullmatch(t.text):
                raise self._fail(f"column name {t.text!r} reads as a number", t,
                                 hint=f"backquote it: {quote_name(t.text)}")
            self._advance()
            return t.text
        raise self._fail(f"expected a column name, got {t.show()}")

    def _type(self, column: str) -> DataType:
        t = self.tok
        if t.kind != "word":
            raise self._fail(f"expected the type of column {column!r}, got {t.show()}")
        word = t.text.lower()
        self._advance()
        if word in _SIMPLE_TYPES:
            if self._is("("):
                raise self._fail(f"type {t.text.upper()} takes no parameters", self.tok)
            if word == "string" and self._keyword("collate"):
                raise self._fail("collations (STRING COLLATE ...) are not supported here", self.tok,
                                 hint="declare the column as STRING")
            simple = _SIMPLE_TYPES[word]
            return DataType(simple, simple.upper(), json.dumps(_JSON_NAMES.get(simple, simple)))
        if word in _LENGTH_TYPES:
            kind = _LENGTH_TYPES[word]
            if not self._is("("):
                raise self._fail(f"type {t.text.upper()} needs a length", self.tok,
                                 hint=f"e.g. {kind.upper()}(10), or STRING for text of any length")
            (length,) = self._integers(t, 1, 1)
            return DataType(f"{kind}({length})", f"{kind.upper()}({length})", json.dumps("string"))
        if word in _DECIMAL_TYPES:
            precision, scale = 10, 0
            if self._is("("):
                values = self._integers(t, 1, 2)
                precision = values[0]
                scale = values[1] if len(values) > 1 else 0
                if precision > MAX_DECIMAL_PRECISION:
                    raise self._fail(f"DECIMAL precision {precision} is out of range", t,
                                     hint=f"allowed: up to {MAX_DECIMAL_PRECISION}")
                if scale > precision:
                    raise self._fail(f"DECIMAL scale {scale} is larger than its precision {precision}", t,
                                     hint="e.g. DECIMAL(10,2): 10 digits, 2 after the point")
            simple = f"decimal({precision},{scale})"
            return DataType(simple, f"DECIMAL({precision},{scale})", json.dumps(simple))
        if word == "array":
            self._expect("<", "'<' after ARRAY (ARRAY<element type>)")
            element = self._type(column)
            self._expect(">", "'>' to close ARRAY<")
            return DataType(f"array<{element.simple}>", f"ARRAY<{element.ddl}>", json.dumps(
                {"type": "array", "elementType": json.loads(element.spark_json), "containsNull": True}))
        if word == "map":
            self._expect("<", "'<' after MAP (MAP<key type, value type>)")
            key = self._type(column)
            self._expect(",", "',' between the key and value types of MAP<key, value>")
            value = self._type(column)
            self._expect(">", "'>' to close MAP<")
            return DataType(f"map<{key.simple},{value.simple}>", f"MAP<{key.ddl}, {value.ddl}>", json.dumps(
                {"type": "map", "keyType": json.loads(key.spark_json), "valueType": json.loads(value.spark_json),
                 "valueContainsNull": True}))
        if word == "struct":
            self._expect("<", "'<' after STRUCT (STRUCT<name: type, ...>)")
            fields = [] if self._is(">") else self._columns(end=">")
            self._advance()
            simple = ",".join(f"{f.name}:{f.type.simple}" for f in fields)
            ddl = ", ".join(f"{quote_name(f.name)}: {f.type_ddl}" for f in fields)
            return DataType(f"struct<{simple}>", f"STRUCT<{ddl}>", json.dumps(_struct_json(fields)))
        if word in _UNSUPPORTED_TYPES:
            raise self._fail(f"type {t.text.upper()} (column {column!r}) is not one the s3-sqs source reads from "
                             "files", t, hint="use one of " + _type_list())
        near = closest(word, _ALL_TYPES)
        hint = f"did you mean {near.upper()}?" if near else "known types: " + _type_list()
        raise self._fail(f"unknown type {t.text!r} for column {column!r}", t, hint=hint)


def _type_list() -> str:
    return ("BOOLEAN, TINYINT/BYTE, SMALLINT/SHORT, INT/INTEGER, BIGINT/LONG, FLOAT/REAL, DOUBLE, DECIMAL(p,s), "
            "STRING, CHAR(n), VARCHAR(n), BINARY, DATE, TIMESTAMP, TIMESTAMP_NTZ, ARRAY<t>, MAP<k,v>, STRUCT<...>")
