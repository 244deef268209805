"""Each row's text as the stream of events Spark's StAX reader gives (start, text, end), from expat.

As in Spark: namespaces are not resolved (`p:a` is the name), adjacent text and CDATA are one text
event, comments and processing instructions are dropped, and nothing after the row element is read.
A row that is not well-formed XML ends in an ERROR event at the point where the parser stopped, so that
the conversion sees the events before it, as Spark does.

No document type declaration can occur inside an element, so no entity is ever declared: `&name;` for
anything but the five predefined entities is an error, and neither entity expansion nor external
fetches can happen. expat is asked to refuse a DTD anyway.
"""
from __future__ import annotations

from xml.parsers import expat

START, END, TEXT, ERROR, EOD = 0, 1, 2, 3, 4
_ROOT = "s3sqs-rows"


class _Collector:
    """Collects one document's events; the rows are the children of a synthetic root when `wrapped`."""

    def __init__(self, wrapped: bool):
        self.events: list[tuple] = []
        self.text: list[str] = []
        self.depth = 0
        self.top = 1 if wrapped else 0  # depth of the row elements
        self.done = False  # the (single) row element has ended
        self.rows: list[int] = []  # where each row's events begin (wrapped)

    def flush(self):
        if self.text:
            self.events.append((TEXT, "".join(self.text)))
            self.text = []

    def start(self, name, attrs):
        if self.done:
            raise _Done
        if self.depth == self.top:
            self.flush()
            self.rows.append(len(self.events))
        elif self.depth > self.top:
            self.flush()
        else:
            self.text = []
        self.depth += 1
        if self.depth > self.top:
            self.events.append((START, name, attrs))

    def end(self, name):
        if self.depth > self.top:
            self.flush()
            self.events.append((END, name))
        self.depth -= 1
        if self.depth == self.top:
            self.events.append((EOD,))
            if not self.top:
                self.done = True
        self.text = [] if self.depth < self.top else self.text

    def chars(self, data):
        if self.depth > self.top:
            self.text.append(data)
        elif self.top and self.depth == self.top and data.strip():
            raise _NotRows


class _Done(Exception):
    """The row element has ended: what follows is not read (as in Spark)."""


class _NotRows(Exception):
    """Text between the rows of the wrapped document: the rows are not one element each."""


def _refuse_dtd(*_):
    raise ValueError("a document type declaration is not allowed")


def _parser(c: _Collector):
    p = expat.ParserCreate()
    p.buffer_text = True
    p.buffer_size = 1 << 16
    p.ordered_attributes = True
    p.StartElementHandler = c.start
    p.EndElementHandler = c.end
    p.CharacterDataHandler = c.chars
    p.StartDoctypeDeclHandler = _refuse_dtd
    p.EntityDeclHandler = _refuse_dtd
    return p


def row_events(records: list[str]) -> list[list[tuple]]:
    """The events of every row: one parse of all rows together when they are all well-formed, else one
    parse per row."""
    if not records:
        return []
    c = _Collector(wrapped=True)
    try:
        _parser(c).Parse(f"<{_ROOT}>{''.join(records)}</{_ROOT}>", True)
    except (expat.ExpatError, _NotRows, ValueError):
        return [_one(r) for r in records]
    if len(c.rows) != len(records):
        return [_one(r) for r in records]
    bounds = c.rows + [len(c.events)]
    return [c.events[bounds[i]:bounds[i + 1]] for i in range(len(records))]


def _one(record: str) -> list[tuple]:
    c = _Collector(wrapped=False)
    try:
        _parser(c).Parse(record, True)
    except _Done:
        pass
    except (expat.ExpatError, ValueError) as e:
        if not c.done:
            c.flush()
            c.events.append((ERROR, _message(e)))
    if not c.done and (not c.events or c.events[-1][0] != ERROR):
        c.events.append((ERROR, "the row element is not closed"))
    return c.events


def _message(e: Exception) -> str:
    if isinstance(e, expat.ExpatError):
        return f"{expat.ErrorString(e.code)} (line {e.lineno}, column {e.offset + 1} of the row)"
    return str(e)
