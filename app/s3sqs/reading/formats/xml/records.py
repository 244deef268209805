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
from typing import Iterator

_NON_ASCII_TAIL = re.compile(r"[^\x00-\x7f]*\Z")
# Java's Character.isWhitespace, for the characters a tag name can be followed by.
_WS = " \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f"


def _patterns(tag: str) -> tuple[re.Pattern, re.Pattern]:
    t = re.escape(tag)
    between = re.compile(rf"<!--|<!\[CDATA\[|<{t}(?=[>{_WS}])")
    inside = re.compile(rf"<!--|</{t}>|<{t}(?=[>{_WS}])")
    return between, inside


def records(text: str, tag: str) -> list[str]:
    """The text of every row, in file order (a row cut short by the end of the file included as it is)."""
    return [row for _, _, row, _ in _scan(text, tag) if row is not None]


def block_end(text: str, tag: str) -> int:
    """Where a block of a big file's text may end, so that the next block starts where the scan above is
    between rows and reads on as it would through the whole text: after the last row that ends in `text`,
    before a row, comment or CDATA section it cuts short, and before a last '<' that may begin one. 0: no
    such place yet (a row longer than the block: read more). With no '<' after the last row, the block
    ends after the last ASCII character, never inside a multi-byte one."""
    quick = _plain_end(text, tag)
    if quick:
        return quick
    pos = 0
    for start, end, _, whole in _scan(text, tag):
        if not whole:
            return start
        pos = end
    lt = text.rfind("<", pos)
    return _NON_ASCII_TAIL.search(text, pos).start() if lt < 0 else lt


def _scan(text: str, tag: str) -> Iterator[tuple[int, int, str | None, bool]]:
    """Spark's scan: for each row, comment or CDATA section between rows, in file order, (where it starts,
    where it ends, the row's text without comments or None, whether it ends in `text`)."""
    between, inside = _patterns(tag)
    pos, n = 0, len(text)
    while pos < n:
        m = between.search(text, pos)
        if m is None:
            return
        tok = m.group()
        if tok == "<!--" or tok.startswith("<!["):
            close = text.find("-->" if tok == "<!--" else "]]>", m.end())
            pos = n if close < 0 else close + 3
            yield m.start(), pos, None, close >= 0
            continue
        row, pos, whole = _row(text, m.start(), m.end(), inside)
        yield m.start(), pos, row, whole


def _plain_end(text: str, tag: str) -> int:
    """block_end at C speed for the usual text: no comments or CDATA, and its rows' start and end tags
    strictly alternate (no row in a row, no self-closing row, no stray end tag), so that the scan is between
    rows just after the last end tag. 0 when the text is not so (block_end then scans it)."""
    if "<!--" in text or "<![CDATA[" in text:
        return 0
    end = f"</{tag}>"
    tokens = _tokens(tag).findall(text)
    pairs = len(tokens) // 2
    if not pairs or "".join(tokens[:2 * pairs]) != (f"<{tag}" + end) * pairs or (
            len(tokens) % 2 and tokens[-1] == end):
        return 0
    return text.rfind(end) + len(end)


def _tokens(tag: str) -> re.Pattern:
    t = re.escape(tag)
    return re.compile(rf"</{t}>|<{t}(?=[>{_WS}])")


def _after(text: str, end: str, start: int) -> int:
    i = text.find(end, start)
    return len(text) if i < 0 else i + len(end)


def _row(text: str, start: int, name_end: int, inside: re.Pattern) -> tuple[str, int, bool]:
    """One row from its start tag at `start`: (its text without comments, where scanning goes on, whether
    it ends in `text` rather than being cut short by its end)."""
    n = len(text)
    pos = name_end
    if text[name_end] != ">":  # the start tag has attributes: it may close itself with '/>'
        gt = text.find(">", name_end + 1)
        if gt < 0:
            return text[start:], n, False
        if text[gt - 1] == "/" and gt - 1 > name_end:
            return text[start:gt + 1], gt + 1, True
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
            return "".join(parts), n, False
        tok = m.group()
        if tok == "<!--":
            parts.append(text[seg:m.start()])
            seg = pos = _after(text, "-->", m.end())
            continue
        if tok.startswith("</"):
            if depth == 0:
                parts.append(text[seg:m.end()])
                return "".join(parts), m.end(), True
            depth -= 1
        else:
            depth += 1
        pos = m.end()
