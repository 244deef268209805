"""Where a file's rows are: the text of each rowTag element, found the way Spark 4.0's XML reader finds them.

Spark does not parse the whole document: it scans the text for `<rowTag>` or `<rowTag` followed by white
space, skipping comments and CDATA sections between rows, and takes everything up to the matching
`</rowTag>` (counting nested rowTag elements, and `/>` while still inside the start tag). Comments inside a
row are cut out of its text. Each row's text is then parsed on its own, so one broken row spoils only
itself, and a prefixed `<ns:rowTag>` is not a row. Scanning with str.find and regular expressions keeps
this at C speed.
"""
from __future__ import annotations

import re

# Java's Character.isWhitespace, for the characters a tag name can be followed by.
_WS = " \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f"


def _patterns(tag: str) -> tuple[re.Pattern, re.Pattern]:
    t = re.escape(tag)
    between = re.compile(rf"<!--|<!\[CDATA\[|<{t}(?=[>{_WS}])")
    inside = re.compile(rf"<!--|</{t}>|<{t}(?=[>{_WS}])")
    return between, inside


def records(text: str, tag: str) -> list[str]:
    """The text of every row, in file order (a row cut short by the end of the file included as it is)."""
    between, inside = _patterns(tag)
    out: list[str] = []
    pos, n = 0, len(text)
    while pos < n:
        m = between.search(text, pos)
        if m is None:
            break
        tok = m.group()
        if tok == "<!--":
            pos = _after(text, "-->", m.end())
            continue
        if tok.startswith("<!["):
            pos = _after(text, "]]>", m.end())
            continue
        record, pos = _row(text, m.start(), m.end(), inside)
        out.append(record)
    return out


def _after(text: str, end: str, start: int) -> int:
    i = text.find(end, start)
    return len(text) if i < 0 else i + len(end)


def _row(text: str, start: int, name_end: int, inside: re.Pattern) -> tuple[str, int]:
    """One row from its start tag at `start`: (its text without comments, where scanning goes on)."""
    n = len(text)
    pos = name_end
    if text[name_end] != ">":  # the start tag has attributes: it may close itself with '/>'
        gt = text.find(">", name_end + 1)
        if gt < 0:
            return text[start:], n
        if text[gt - 1] == "/" and gt - 1 > name_end:
            return text[start:gt + 1], gt + 1
        pos = gt + 1
    else:
        pos = name_end + 1
    parts: list[str] = []
    seg = start
    depth = 0
    while True:
        m = inside.search(text, pos)
        if m is None:
            parts.append(text[seg:])
            return "".join(parts), n
        tok = m.group()
        if tok == "<!--":
            parts.append(text[seg:m.start()])
            seg = pos = _after(text, "-->", m.end())
            continue
        if tok.startswith("</"):
            if depth == 0:
                parts.append(text[seg:m.end()])
                return "".join(parts), m.end()
            depth -= 1
        else:
            depth += 1
        pos = m.end()
