"""Suggesting the name that was probably meant, for every "unknown X" message of the operator tools."""
from __future__ import annotations

import difflib
from typing import Iterable


def did_you_mean(word: str, known: Iterable[str]) -> str:
    """" (did you mean 'x'?)" for the closest known name (case-insensitively), or "" when none is close."""
    by_lower = {k.lower(): k for k in known}
    close = difflib.get_close_matches(word.lower(), list(by_lower), n=1, cutoff=0.6)
    return f" (did you mean {by_lower[close[0]]!r}?)" if close else ""
