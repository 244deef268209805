"""The value grammar every settings surface shares (the source's options, the job's sink flags, cdk.json):
pydantic types whose errors read as one line, and the conversion of pydantic's ValidationError to it.

A validator here raises ValueError("must be ..., got ..."); `one_line` puts the setting's name in front,
as each surface spells names ("option 'maxFileAge'", "--target-file-size", "consumers[1].name").
"""
from __future__ import annotations

from enum import Enum
from typing import Annotated, Any, Callable, Iterable

from pydantic import BeforeValidator, ValidationError

from ..core.names import closest
from ..core.units import parse_duration_seconds
from .format_options import positive_size

TRUE, FALSE = ("true", "1", "yes"), ("false", "0", "no")


def blank_to_none(values: dict) -> dict:
    """Settings given as empty strings count as not given: their defaults apply."""
    return {k: v for k, v in values.items() if not (isinstance(v, str) and not v.strip())}


def parse_bool(v: Any) -> bool:
    if isinstance(v, bool):
        return v
    s = str(v).strip().lower()
    if s in TRUE:
        return True
    if s in FALSE:
        return False
    raise ValueError(f"must be true or false, got {v!r}")


def _integer(lo: int | None, hi: int | None) -> Callable[[Any], int]:
    def parse(v: Any) -> int:
        if isinstance(v, bool):
            raise ValueError(f"must be a whole number, got {v!r}")
        try:
            n = int(str(v).strip())
        except ValueError:
            raise ValueError(f"must be a whole number, got {v!r}") from None
        if (lo is not None and n < lo) or (hi is not None and n > hi):
            raise ValueError(f"must be {f'{lo} to {hi}' if hi is not None else f'at least {lo}'}, got {n}")
        return n
    return parse


def _number(lo: float, hi: float | None) -> Callable[[Any], float]:
    def parse(v: Any) -> float:
        try:
            n = float(str(v).strip())
        except ValueError:
            raise ValueError(f"must be a number, got {v!r}") from None
        if n < lo or (hi is not None and n > hi):
            raise ValueError(f"must be at least {lo:g}" + (f" and at most {hi:g}" if hi is not None else "")
                             + f", got {n:g}")
        return n
    return parse


def _duration(bare_unit: str | None) -> Callable[[Any], float]:
    def parse(v: Any) -> float:
        if isinstance(v, (int, float)) and not isinstance(v, bool) and bare_unit is None:
            raise ValueError(f"must be a duration with a unit, like 90s, 30m or '10 seconds'; got {v!r}")
        try:
            n = parse_duration_seconds(str(v), bare_unit)
        except ValueError:
            unit = " (a bare number is milliseconds)" if bare_unit == "ms" else ""
            raise ValueError(f"must be a duration like 15d, 12h, 30m, 90s or '10 seconds'{unit}; got {v!r}") from None
        if n <= 0:
            raise ValueError(f"must be positive, got {v!r}")
        return n
    return parse


def _size(v: Any) -> int:
    return positive_size(v, "512m, 1g or 1048576;")


def _text(v: Any) -> str:
    return str(v).strip()


def _choice(values: Iterable[str], fold: Callable[[str], str]) -> Callable[[Any], str]:
    allowed = tuple(values)
    canonical = {fold(a): a for a in allowed}  # matched folded, returned as spelled ("binaryfile" -> "binaryFile")

    def parse(v: Any) -> str:
        s = fold(str(v).strip())
        if s not in canonical:
            near = closest(s, allowed)
            hint = f" (did you mean {near!r}?)" if near else ""
            raise ValueError(f"must be one of {', '.join(allowed)}; got {v!r}{hint}")
        return canonical[s]
    return parse


Bool = Annotated[bool, BeforeValidator(parse_bool)]
Text = Annotated[str, BeforeValidator(_text)]
Size = Annotated[int, BeforeValidator(_size)]


def Int(lo: int | None = None, hi: int | None = None):  # noqa: N802 (a type, as pydantic spells them)
    return Annotated[int, BeforeValidator(_integer(lo, hi))]


def Number(lo: float = 0, hi: float | None = None):  # noqa: N802
    return Annotated[float, BeforeValidator(_number(lo, hi))]


def Duration(bare_unit: str | None = "ms"):  # noqa: N802
    """Seconds, from '90s', '30 minutes', '15d'; a bare number is in `bare_unit` (None: a unit is needed)."""
    return Annotated[float, BeforeValidator(_duration(bare_unit))]


def Choice(values: Iterable[str] | type[Enum], fold: Callable[[str], str] = str.lower):  # noqa: N802
    allowed = [m.value for m in values] if isinstance(values, type) else list(values)
    return Annotated[str, BeforeValidator(_choice(allowed, fold))]


def one_line(error: ValidationError, name_of: Callable[[tuple], str], hints: dict[str, str] | None = None) -> str:
    """The first error of a ValidationError as one line: '<name> <what is wrong>'. `name_of` turns the
    error's location (field aliases) into the name the user wrote; `hints` add advice to a missing setting."""
    e = error.errors()[0]
    loc = tuple(e.get("loc") or ())
    if e["type"] == "missing":
        hint = (hints or {}).get(str(loc[-1]) if loc else "", "")
        return f"{name_of(loc)} is required" + (f": {hint}" if hint else "")
    cause = (e.get("ctx") or {}).get("error")
    message = str(cause) if cause is not None else e["msg"]
    return f"{name_of(loc)} {message}" if loc else message
