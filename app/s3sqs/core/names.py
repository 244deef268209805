"""The name that was probably meant, for every "unknown X" message."""
from __future__ import annotations

import difflib
from typing import Iterable


def closest(word: str, known: Iterable[str]) -> str | None:
    """The known name nearest to `word` (case-insensitively), as it is spelled in `known`; None if none is close."""
    by_lower = {k.lower(): k for k in known}
    close = difflib.get_close_matches(word.lower(), list(by_lower), n=1, cutoff=0.6)
    return by_lower[close[0]] if close else None


def did_you_mean(word: str, known: Iterable[str]) -> str:
    """" (did you mean 'x'?)" for the closest known name, or "" when none is close."""
    near = closest(word, known)
    return f" (did you mean {near!r}?)" if near else ""
