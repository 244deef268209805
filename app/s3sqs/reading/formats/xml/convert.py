"""One row's events into the declared columns, step for step as Spark 4.0's StaxXmlParser does it.

The order of steps matters because Spark's failure handling depends on it: when a value does not fit, the
error is remembered and the walk goes on from where the parser stood, which usually ends the row at the
failed element's end tag; the row keeps what was converted before (a partial result) and counts as
malformed. A failing attribute of the row element, or a broken document, leaves nothing (all null).

Values: a struct is a dict, an array a list, a leaf the Python value Arrow takes for the type (micros and
days for timestamps and dates). Names match the schema case-insensitively, as in Spark.
"""
from __future__ import annotations

import pyarrow as pa

from ....config.format_options import XmlOptions
from .events import END, EOD, ERROR, START, TEXT
from .values import BadValue, caster, type_name


class XmlSyntax(ValueError):
    """The row is not well-formed XML."""


class Partial(Exception):
    def __init__(self, row: dict | None, cause: Exception):
        super().__init__(str(cause))
        self.row, self.cause = row, cause


class Cursor:
    __slots__ = ("events", "i")

    def __init__(self, events: list[tuple]):
        self.events, self.i = events, 0

    def peek(self) -> tuple:
        ev = self.events[self.i] if self.i < len(self.events) else (EOD,)
        if ev[0] == ERROR:
            raise XmlSyntax(ev[1])
        return ev

    def next(self) -> tuple:
        ev = self.peek()
        self.i += 1
        return ev


def _ws(text: str) -> bool:
    return not text.strip(" \t\n\r")


class _Leaves:
    """Names, attributes and leaf values: the part of the conversion that reads no structure."""

    def __init__(self, fields: list[pa.Field], options: XmlOptions):
        self.o = options
        self.prefix, self.value_tag = options.attribute_prefix, options.value_tag
        self.null, self.trim = options.null_value, options.ignore_surrounding_spaces
        self.no_ns, self.no_attrs = options.ignore_namespace, options.exclude_attribute
        self.root = pa.struct(fields)
        self._casters: dict = {}
        self._index: dict = {}
        self.unknown: set[str] = set()
        self.misfit: tuple | None = None  # (path, text, type) of the last value that did not fit
        self.rescue: dict | None = None  # per row, when the rescued-data column is asked for

    # -- names and leaves ---------------------------------------------------------------------------
    def name(self, raw: str) -> str:
        return raw.rsplit(":", 1)[-1] if self.no_ns else raw

    def index(self, st: pa.StructType) -> dict:
        idx = self._index.get(id(st))
        if idx is None:
            idx = {}
            for i in range(st.num_fields):
                idx.setdefault(st.field(i).name.lower(), st.field(i))
            self._index[id(st)] = idx
        return idx

    def to_value(self, datum: str | None, typ: pa.DataType, path: str):
        """Spark's convertTo: trim, nullValue, then the type's parser."""
        if datum is not None and self.trim:
            datum = datum.strip()
        if datum is None or datum == self.null:
            return None
        parse = self._casters.get(typ)
        if parse is None:
            parse = self._casters[typ] = caster(typ, self.o)
        try:
            return parse(datum)
        except (ValueError, OverflowError) as e:
            self.misfit = (path, datum, type_name(typ))
            raise BadValue(str(e)) from None

    def attributes(self, attrs: list, st: pa.StructType, path: str) -> dict:
        """Spark's convertAttributes: the prefixed attributes the struct declares, converted."""
        if self.no_attrs or not attrs:
            return {}
        values = {}
        for k in range(0, len(attrs), 2):
            v = attrs[k + 1].strip() if self.trim else attrs[k + 1]
            values[self.prefix + self.name(attrs[k])] = None if v == self.null else v
        idx = self.index(st)
        out = {}
        for key, v in values.items():
            f = idx.get(key.lower())
            if f is None:
                sub = f"{path}.{key}" if path else key
                self.unknown.add(sub)
                if self.rescue is not None:
                    self.rescue[sub] = v
            else:
                out[f.name] = self.to_value(v, f.type, f"{path}.{key}" if path else key)
        return out



class Converter(_Leaves):
    """Converts rows of one schema; holds the per-type parsers and what it noticed along the way."""

    def row(self, events: list[tuple]) -> dict:
        """The row element's events -> a dict of the declared fields; raises Partial when malformed."""
        cur = Cursor(events)
        try:
            start = cur.next()
            return self.obj(cur, self.root, start[2], "")
        except Partial:
            raise
        except Exception as e:  # Spark: a broken row or a failing root attribute leaves nothing
            raise Partial(None, e) from None

    def obj(self, cur: Cursor, st: pa.StructType, root_attrs: list, path: str) -> dict:
        """Spark's convertObject."""
        row = self.attributes(root_attrs, st, path)
        idx = self.index(st)
        bad = None
        while True:
            ev = cur.next()
            kind = ev[0]
            if kind == START:
                field = self.name(ev[1])
                f = idx.get(field.lower())
                sub = f"{path}.{field}" if path else field
                try:
                    if f is None:
                        self.unknown.add(sub)
                        if self.rescue is None:
                            _skip(cur)
                        else:
                            self.rescue[sub] = self.unknown_text(cur)
                    elif pa.types.is_struct(f.type):
                        row[f.name] = self.obj_with_attrs(cur, f.type, ev[2], sub)
                    elif pa.types.is_list(f.type) or pa.types.is_large_list(f.type):
                        et = f.type.value_type
                        new = (self.obj_with_attrs(cur, et, ev[2], sub) if pa.types.is_struct(et)
                               else self.field(cur, et, sub))
                        row.setdefault(f.name, []).append(new)
                    else:
                        row[f.name] = self.field(cur, f.type, sub)
                except XmlSyntax:
                    raise
                except Exception as e:
                    bad = bad or e
            elif kind == TEXT:
                if not _ws(ev[1]):
                    self.add_value(row, st, ev[1], path, bad is None)
            elif kind in (END, EOD):
                break
        if bad is not None:
            raise Partial(row, bad)
        return row

    def add_value(self, row: dict, st: pa.StructType, text: str, path: str, clean: bool):
        """Spark's addOrUpdate for text beside child elements (the valueTag field, matched exactly).
        After a failed value (not `clean`) the text is that value's, met again: not an unknown field."""
        i = st.get_field_index(self.value_tag)
        sub = f"{path}.{self.value_tag}" if path else self.value_tag
        if i < 0 and not clean:
            return
        if i < 0:
            self.unknown.add(sub)
            if self.rescue is not None:
                self.rescue[sub] = text.strip() if self.trim else text
            return
        typ = st.field(i).type
        if pa.types.is_list(typ):
            row.setdefault(self.value_tag, []).append(self.to_value(text, typ.value_type, sub))
        else:
            row[self.value_tag] = self.to_value(text, typ, sub)

    def obj_with_attrs(self, cur: Cursor, st: pa.StructType, attrs: list, path: str) -> dict:
        """Spark's convertObjectWithAttributes: a struct column's element, its attributes winning."""
        attributes = self.attributes(attrs, st, path)
        inner = self.field(cur, st, path)
        if isinstance(inner, dict):
            fields = inner
        elif st.get_field_index(self.value_tag) >= 0:
            fields = {self.value_tag: inner}
        else:
            fields = {}
        fields.update(attributes)
        return fields

    def field(self, cur: Cursor, typ: pa.DataType, path: str):
        """Spark's convertField: the value of the element whose start tag was just read."""
        while True:
            ev = cur.peek()
            kind = ev[0]
            is_string = pa.types.is_string(typ) or pa.types.is_large_string(typ)
            if kind == START:
                if pa.types.is_struct(typ):
                    return self.obj(cur, typ, [], path)
                if pa.types.is_list(typ):
                    return self.field(cur, typ.value_type, path)
                if is_string:
                    return self.to_value(_as_string(cur), typ, path)
                raise BadValue(f"{path}: an element where a {type_name(typ)} value was expected")
            if kind in (END, EOD):
                _skip_end(cur)
                return ("" if self.null != "" else None) if is_string else None
            if kind == TEXT:
                if pa.types.is_list(typ):
                    cur.next()
                    value = self.to_value(ev[1], typ.value_type, path)
                    _skip_end(cur)
                    return value
                if pa.types.is_struct(typ):
                    return self.obj(cur, typ, [], path)
                if is_string:
                    nxt = cur.events[cur.i + 1] if cur.i + 1 < len(cur.events) else (EOD,)
                    if nxt[0] == END:  # plain text: the common case, without rebuilding XML text
                        cur.i += 2
                        return self.to_value(ev[1], typ, path)
                    return self.to_value(_as_string(cur), typ, path)
                if _ws(ev[1]):
                    cur.next()
                    continue
                value = self.to_value(ev[1], typ, path)
                cur.next()
                _skip_end(cur)
                return value
            raise XmlSyntax(f"unexpected event {ev}")

    def unknown_text(self, cur: Cursor) -> str:
        """An undeclared element's content as text (for the rescued-data column), past its end tag."""
        if cur.peek()[0] in (END, EOD):
            cur.next()
            return ""
        text = _as_string(cur)
        return text.strip() if self.trim else text


def _as_string(cur: Cursor) -> str:
    """Spark's currentStructureAsString: the element's content as XML text (its own tag left out)."""
    out: list[str] = []
    depth = 0
    while True:
        ev = cur.next()
        kind = ev[0]
        if kind == START:
            out.append("<" + ev[1])
            attrs = ev[2]
            for k in range(0, len(attrs), 2):
                out.append(f' {attrs[k]}="{attrs[k + 1]}"')
            out.append(">")
            depth += 1
        elif kind == END:
            out.append(f"</{ev[1]}>")
            depth -= 1
        elif kind == TEXT:
            out.append(ev[1])
        nxt = cur.peek()
        if nxt[0] in (END, EOD) and depth <= 0:
            break
    _skip_end(cur)
    return "".join(out)


def _skip(cur: Cursor):
    """Past the end of the element whose start tag was just read."""
    depth = 1
    while depth:
        kind = cur.next()[0]
        if kind == START:
            depth += 1
        elif kind == END:
            depth -= 1
        elif kind == EOD:
            return


def _skip_end(cur: Cursor):
    """Spark's skipNextEndElement: white space, then the element's end tag."""
    while True:
        ev = cur.next()
        if ev[0] == TEXT and _ws(ev[1]):
            continue
        if ev[0] in (END, EOD):
            return
        raise BadValue("expected an end tag")
