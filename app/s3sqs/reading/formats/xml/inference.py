"""A file's schema as Spark 4.0's XML inference gives it (XmlInferSchema), from the rows' events.

Leaves are STRING unless infer_types (then long, double, boolean, date, timestamp, in that order of
trial); an element with attributes is a struct of its prefixed attributes and, when it has text, valueTag;
a repeated element is an array; fields are sorted by name; a field never seen with a value is STRING.
"""
from __future__ import annotations

import re

import pyarrow as pa

from ....config.format_options import XmlOptions
from ..common.spark_datetime import date_parser, timestamp_parser
from .convert import Cursor, XmlSyntax
from .events import END, EOD, START, TEXT

NULL, LONG, DOUBLE, BOOL, DATE, TS, STR = "null", "long", "double", "boolean", "date", "timestamp", "string"
_NUMERIC = {LONG: 0, DOUBLE: 1}
_JAVA_DOUBLE = re.compile(r"(?:NaN|Infinity|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?[fFdD]?"
                          r"|0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][+-]?\d+[fFdD]?)")


class _Inference:
    def __init__(self, options: XmlOptions, infer_types: bool):
        self.o, self.types = options, infer_types
        self.prefix, self.value_tag = options.attribute_prefix, options.value_tag
        self.date = date_parser(options.date_format, fallback=False)
        self.ts = timestamp_parser(options.timestamp_format)

    def name(self, raw: str) -> str:
        return raw.rsplit(":", 1)[-1] if self.o.ignore_namespace else raw

    def attributes(self, attrs: list) -> dict:
        if self.o.exclude_attribute:
            return {}
        out = {}
        for k in range(0, len(attrs), 2):
            v = attrs[k + 1].strip() if self.o.ignore_surrounding_spaces else attrs[k + 1]
            out[self.prefix + self.name(attrs[k])] = None if v == self.o.null_value else v
        return out

    def leaf(self, datum: str | None):
        """Spark's inferFrom."""
        v = datum.strip() if datum is not None and self.o.ignore_surrounding_spaces else datum
        if not self.types:
            return STR
        if not v:
            return NULL
        body = v[1:] if v[0] in "+-" else v
        if body[:1].isdigit() and body.isdecimal() and int(body) < (1 << 63):
            return LONG
        if body and (body[0].isdigit() or body[0] == ".") and body[-1] not in "dDfF" and _JAVA_DOUBLE.fullmatch(body):
            return DOUBLE
        if v.lower() in ("true", "false"):
            return BOOL
        for kind, parse in ((DATE, self.date), (TS, self.ts)):
            try:
                parse(v)
                return kind
            except ValueError:
                pass
        return STR

    def field(self, cur: Cursor):
        ev = cur.peek()
        if ev[0] in (END, EOD):
            cur.next()
            return NULL
        if ev[0] == START:
            return self.obj(cur, [])
        st = self.obj(cur, [])
        fields = st[1]
        if not fields:
            return NULL
        if len(fields) == 1 and not isinstance(fields[0][1], tuple) and fields[0][0].lower() == self.value_tag.lower():
            return fields[0][1]
        return st

    def obj(self, cur: Cursor, root_attrs: list):
        found: dict[str, tuple[str, object]] = {}  # lower name -> (first name, type)

        def add(name, typ):
            old = found.get(name.lower())
            if old is None:
                found[name.lower()] = (name, typ)
            elif isinstance(old[1], tuple) and old[1][0] == "array":
                found[name.lower()] = (old[0], compatible(old[1], typ, self.value_tag))
            else:
                found[name.lower()] = (old[0], ("array", compatible(old[1], typ, self.value_tag)))
        for f, v in self.attributes(root_attrs).items():
            add(f, self.leaf(v))
        while True:
            ev = cur.next()
            if ev[0] == START:
                attrs = self.attributes(ev[2])
                typ = self.field(cur)
                if attrs:
                    nested = list(typ[1]) if _is_struct(typ) else ([] if typ == NULL else [(self.value_tag, typ)])
                    nested += [(f, self.leaf(v)) for f, v in attrs.items()]
                    typ = ("struct", sorted(nested, key=lambda x: x[0]))
                add(self.name(ev[1]), typ)
            elif ev[0] == TEXT:
                if ev[1].strip(" \t\r\n"):
                    add(self.value_tag, self.leaf(ev[1]))
            elif ev[0] in (END, EOD):
                break
        return ("struct", sorted(found.values(), key=lambda x: x[0]))


def _is_struct(t) -> bool:
    return isinstance(t, tuple) and t[0] == "struct"


def _is_array(t) -> bool:
    return isinstance(t, tuple) and t[0] == "array"


def compatible(t1, t2, value_tag: str):
    """Spark's XmlInferSchema.compatibleType."""
    if t1 == t2 or t2 == NULL:
        return t1
    if t1 == NULL:
        return t2
    if isinstance(t1, str) and isinstance(t2, str):
        if t1 in _NUMERIC and t2 in _NUMERIC:
            return DOUBLE
        return TS if {t1, t2} == {DATE, TS} else STR
    if _is_struct(t1) and _is_struct(t2):
        groups: dict[str, list] = {}
        for name, typ in t1[1] + t2[1]:
            groups.setdefault(name.lower(), []).append((name, typ))
        merged = []
        for members in groups.values():
            typ = members[0][1]
            for _, other in members[1:]:
                typ = compatible(typ, other, value_tag)
            merged.append((members[0][0], typ))
        return ("struct", sorted(merged, key=lambda x: x[0]))
    if _is_array(t1) and _is_array(t2):
        return ("array", compatible(t1[1], t2[1], value_tag))
    if _is_array(t1):
        return ("array", compatible(t1[1], t2, value_tag))
    if _is_array(t2):
        return ("array", compatible(t1, t2[1], value_tag))
    for st, other, first in ((t1, t2, True), (t2, t1, False)):
        if _is_struct(st):
            names = [n for n, _ in st[1]]
            if value_tag in names:
                i = names.index(value_tag)
                old = st[1][i][1]
                new = compatible(old, other, value_tag) if first else compatible(other, old, value_tag)
                fields = list(st[1])
                fields[i] = (value_tag, new)
                return ("struct", fields)
    return STR


def _canonical(t):
    if _is_array(t):
        inner = _canonical(t[1])
        return None if inner is None else ("array", inner)
    if _is_struct(t):
        fields = [(n, c) for n, c in ((n, _canonical(x)) for n, x in t[1] if n) if c is not None]
        return ("struct", fields) if fields else None
    return STR if t == NULL else t


_ARROW = {LONG: pa.int64(), DOUBLE: pa.float64(), BOOL: pa.bool_(), DATE: pa.date32(),
          TS: pa.timestamp("us", tz="UTC"), STR: pa.string()}


def _arrow(t) -> pa.DataType:
    if _is_struct(t):
        return pa.struct([pa.field(n, _arrow(x)) for n, x in t[1]])
    if _is_array(t):
        return pa.list_(pa.field("element", _arrow(t[1])))
    return _ARROW[t]


def infer_rows(events: list[list[tuple]], options: XmlOptions, infer_types: bool) -> pa.Schema:
    inf = _Inference(options, infer_types)
    acc = ("struct", [])
    for ev in events:
        cur = Cursor(ev)
        try:
            start = cur.next()
            row = inf.obj(cur, start[2])
        except (XmlSyntax, IndexError):
            row = ("struct", [("_corrupt_record", STR)])  # Spark's PERMISSIVE inference
        acc = compatible(acc, row, inf.value_tag)
    final = _canonical(acc)
    return pa.schema([pa.field(n, _arrow(t)) for n, t in (final[1] if final else [])])
