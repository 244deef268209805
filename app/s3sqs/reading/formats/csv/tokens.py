"""CSV text into records of tokens, the way Spark's CSV reader (the univocity parser, as Spark sets it up)
splits them: the Python path for files and options pyarrow cannot read exactly like Spark.

A token is a str, or None where Spark's parser gives its null value (an unquoted empty field). Quoted
empty fields give EMPTY, so the caller can apply `emptyValue`. Rules that matter, checked against Spark:
- without multiLine, lines are split first (\\n, \\r\\n, \\r or lineSep); blank lines (only chars <= ' ')
  and lines starting with the comment char are skipped; a quoted value never spans lines;
- with multiLine, a quoted value may hold line breaks; the first line break found is the separator and is
  read as \\n inside quoted values; empty lines are skipped, blank ones are records;
- the escape char escapes the quote (and itself before a quote) only inside quoted values; `""` inside a
  quoted value is NOT an escaped quote unless escape is the quote char; text after a closing quote makes the
  value literal up to the next delimiter (univocity's STOP_AT_DELIMITER);
- whitespace around a quoted value: before the quote it makes the value unquoted (unless
  ignoreLeadingWhiteSpace), after the closing quote it is dropped.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterator

from ....config.format_options import CsvOptions


@dataclass(frozen=True)
class Dialect:
    sep: str
    quote: str | None        # None: quoting off
    escape: str | None
    comment: str | None
    trim_leading: bool
    trim_trailing: bool
    multi_line: bool
    line_sep: str | None     # None: \n, \r\n and \r

    @staticmethod
    def of(opts: CsvOptions) -> "Dialect":
        return Dialect(opts.sep, opts.quote or None, opts.escape or None, opts.comment or None,
                       bool(opts.ignore_leading_white_space), bool(opts.ignore_trailing_white_space),
                       bool(opts.multi_line), opts.line_sep or None)


class QuotedEmpty(str):
    """A quoted empty value ("" in the file), told apart from an unquoted empty one."""


QUOTED_EMPTY = QuotedEmpty("")
_BREAKS = re.compile(r"\r\n|\r|\n")


def _blank(line: str) -> bool:
    return not line.strip("".join(map(chr, range(33))))


def records(text: str, d: Dialect) -> Iterator[list]:
    """Every record of the text (header included), as token lists."""
    if d.multi_line:
        yield from _multi_line_records(text, d)
        return
    lines = text.split(d.line_sep) if d.line_sep else _BREAKS.split(text)
    for line in lines:
        if _blank(line) or (d.comment and line.startswith(d.comment)):
            continue
        if d.quote is None or d.quote not in line:
            yield split_line(line, d)
        else:
            yield tokenize(line, d, d.line_sep or "\n")[0]


def _multi_line_records(text: str, d: Dialect) -> Iterator[list]:
    text, newline, back = one_char_newline(text, d.line_sep)
    for tokens, _start, _end in record_spans(text, d, newline):
        if back is not None:
            tokens = [t.replace(newline, "\n") if t and newline in t else t for t in tokens]
        yield tokens


def one_char_newline(text: str, line_sep: str | None) -> tuple[str, str, str | None]:
    """The text, the char that ends its records, and the line break that char stands in for (None: the
    text is as it was). Without lineSep the first line break decides: only that one ends records (a lone
    \\n in a \\r\\n file is a char of the value), and inside quotes it reads as \\n. A stand-in char keeps
    it apart from the others."""
    if line_sep and len(line_sep) == 1:
        return text, line_sep, None
    if line_sep:
        back = line_sep
    else:
        m = _BREAKS.search(text)
        back = m.group() if m else "\n"
    if back == "\n":
        return text, back, None
    newline = next(c for c in _STAND_INS if c not in text)
    return text.replace(back, newline), newline, back


def record_spans(text: str, d: Dialect, newline: str) -> Iterator[tuple[list, int, int]]:
    """Each multiLine record of the text (records end at `newline`, one char): its tokens, where it starts
    and where the next begins (after its line break; len(text) for the last). Empty and comment lines
    between records are skipped."""
    pos, n = 0, len(text)
    while pos < n:
        if text[pos] == newline:  # an empty line
            pos += 1
            continue
        if d.comment and text.startswith(d.comment, pos):
            end = text.find(newline, pos)
            pos = n if end < 0 else end + 1
            continue
        start = pos
        tokens, pos = tokenize(text, d, newline, pos)
        if tokens:
            yield tokens, start, pos


_STAND_INS = ("\ue000", "\ue001", "\ue002", "\x00")
_WS = "".join(map(chr, range(1, 33)))  # univocity's whitespace: chars above \0 up to ' '


def tokenize(text: str, d: Dialect, newline: str, pos: int = 0) -> tuple[list, int]:
    """One record from `pos`: its tokens and the position after its line break."""
    sep, quote = d.sep, d.quote
    n = len(text)
    tokens: list = []
    while True:
        began = pos
        if d.trim_leading:
            while pos < n and text[pos] in _WS and text[pos] != sep and text[pos] != newline:
                pos += 1
        if pos >= n or text[pos] == newline:
            if tokens or (pos > began and pos >= n):  # after a delimiter (or whitespace at the very end)
                tokens.append(None)
            break
        c = text[pos]
        if c == sep:
            tokens.append(None)
            pos += 1
            continue
        if quote is not None and c == quote:
            value, pos = _quoted(text, pos + 1, d, newline)
        else:
            value, pos = _unquoted(text, pos, d, newline)
        tokens.append(value)
        if pos >= n or text[pos] == newline:
            break
        pos += 1  # the delimiter
    return tokens, (pos + 1 if pos < n else n)


def split_line(line: str, d: Dialect) -> list:
    """A line without the quote char: a plain split, as the tokenizer would give it."""
    tokens = line.split(d.sep)
    if d.trim_leading or d.trim_trailing:
        strip = str.strip if d.trim_leading and d.trim_trailing else (str.lstrip if d.trim_leading else str.rstrip)
        tokens = [strip(t, _WS) for t in tokens]
    return [t or None for t in tokens]


def _end_of_value(text: str, pos: int, sep: str, newline: str) -> int:
    e1 = text.find(sep, pos)
    e2 = text.find(newline, pos)
    if e1 < 0:
        return len(text) if e2 < 0 else e2
    return e1 if e2 < 0 or e1 < e2 else e2


def _unquoted(text: str, pos: int, d: Dialect, newline: str) -> tuple[str | None, int]:
    end = _end_of_value(text, pos, d.sep, newline)
    value = text[pos:end]
    if d.trim_trailing:
        value = value.rstrip(_WS)
    return (value or None), end


def _quoted(text: str, pos: int, d: Dialect, newline: str) -> tuple[str | None, int]:
    """A value that starts with the quote (at pos - 1); returns the value and the position of the char
    that ends it (delimiter, line break or end)."""
    quote, esc, sep = d.quote, d.escape, d.sep
    esc_esc = esc if esc and esc != quote else None  # Spark's charToEscapeQuoteEscaping default
    n = len(text)
    out: list[str] = []
    prev = ""
    if pos >= n:  # a quote alone at the end: univocity keeps it as the value
        return quote, pos
    while True:
        if pos >= n:  # the quote never closed: the value runs to the end
            return ("".join(out) or QUOTED_EMPTY), n
        c = text[pos]
        if prev == quote and (c == sep or c == newline or c in _WS):
            break
        if c != quote and c != esc:
            if prev == quote:  # text after a closing quote: the value is literal to the next delimiter
                return _literal_after_quote(text, pos, out, d, newline)
            if prev == esc and esc:
                out.append(esc)
            end = pos
            while end < n and text[end] != quote and text[end] != esc:
                end += 1
            out.append(text[pos:end])
            if end >= n:
                return ("".join(out) or QUOTED_EMPTY), n
            prev = text[end]
            pos = end + 1
            continue
        # c is the quote or the escape
        if esc_esc and c == esc and prev == esc_esc:
            out.append(esc)
            prev = ""
        elif prev == esc and esc:
            if c == quote:
                out.append(quote)
                prev = ""
            else:
                out.append(prev)
                prev = c
        elif c == quote and prev == quote:
            out.append(quote)
            prev = c
        elif prev == quote:  # the escape right after a closing quote: univocity reads on, escapes and all
            out.append(quote + esc)
            stop = _escaped_run(text, pos + 1, out, d, newline)
            if stop >= n:
                return "".join(out), n
            prev, pos = text[stop], stop + 1  # the delimiter (or line break) is dropped, the value goes on
            continue
        else:
            prev = c
        pos += 1
    # after the closing quote: whitespace is dropped; anything else makes the value literal
    value = "".join(out)
    ws = pos
    while pos < n and text[pos] in _WS and text[pos] != sep and text[pos] != newline:
        pos += 1
    if pos < n and text[pos] != sep and text[pos] != newline:
        return _literal_after_quote(text, pos, out + [quote + text[ws:pos]], d, newline, closed=True)
    return (value or QUOTED_EMPTY), pos


def _escaped_run(text: str, pos: int, out: list, d: Dialect, newline: str) -> int:
    """After a closing quote and the escape char, univocity appends what follows up to the delimiter or
    line break, applying the escape to quotes and to itself, dropping a quote that is not followed by a
    char; returns where it stopped."""
    quote, esc, sep = d.quote, d.escape, d.sep
    n, prev = len(text), ""
    while pos < n and text[pos] != sep and text[pos] != newline:
        c = text[pos]
        if c != quote and c != esc:
            if prev == quote:
                out.append(quote)
            out.append(c)
            prev = c
        elif c == esc and prev == esc:
            out.append(esc)
            prev = ""
        elif prev == esc:  # c is the quote
            out.append(quote)
            prev = ""
        elif c == quote and prev == quote:
            out.append(quote)
            prev = c
        elif prev == quote:  # c is the escape
            out.append(quote + esc)
            prev = ""
        else:
            prev = c
        pos += 1
    return pos


def _literal_after_quote(text, pos, out, d, newline, closed=False):
    """univocity's STOP_AT_DELIMITER: the opening quote, what was read, the quote and the rest up to the
    delimiter, all as they are."""
    head = d.quote + "".join(out) + ("" if closed else d.quote)
    end = _end_of_value(text, pos, d.sep, newline)
    value = head + text[pos:end]
    if closed and end >= len(text) and text[pos] != d.quote and text[pos + 1:pos + 2] == d.quote:
        value += d.quote  # univocity's end-of-input quirk: the quote it had read ahead is added again
    if d.trim_trailing:
        value = value.rstrip(_WS)
    return value, end
