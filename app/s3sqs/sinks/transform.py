"""The user's transform, `--transform module:function`: found, checked and applied.

The function takes the source's streaming DataFrame (with any `_file_*` metadata columns declared in
--schema) and returns the DataFrame to write. It is called once, on the driver, before the query
starts, so what it builds runs in every micro-batch. Import errors, a wrong signature, a failure while
building the plan and a wrong return value all stop the job before the stream starts, naming the flag.
"""
from __future__ import annotations

import importlib
import inspect
import os
import re
import sys
from typing import Callable

from .target import SinkError

FLAG = "--transform"
_SPEC_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*):([A-Za-z_][A-Za-z0-9_]*)$")


class TransformError(SinkError):
    pass


def parse_spec(spec: str) -> tuple[str, str]:
    m = _SPEC_RE.match(spec or "")
    if not m:
        raise TransformError(f"{FLAG} {spec!r} must look like module:function, e.g. my_transforms:clean_orders")
    return m.group(1), m.group(2)


def load_transform(spec: str, search_dirs: tuple[str, ...] | None = None) -> Callable:
    """Import the function and check it takes exactly one argument. Modules are found on sys.path,
    which on EMR holds the connector archive (where package-job puts --transform-module files),
    plus the working directory for local runs."""
    module_name, func_name = parse_spec(spec)
    for d in (os.getcwd(),) if search_dirs is None else search_dirs:
        if d not in sys.path:
            sys.path.append(d)
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        if e.name and module_name.startswith(e.name):
            raise TransformError(
                f"{FLAG} {spec}: no module named {module_name!r}. Run from the folder that holds it or put it on "
                "PYTHONPATH; for EMR, ship it with package-job --transform-module PATH") from e
        raise TransformError(f"{FLAG} {spec}: importing {module_name!r} failed: {e}") from e
    except Exception as e:
        raise TransformError(f"{FLAG} {spec}: importing {module_name!r} failed: {type(e).__name__}: {e}") from e
    fn = getattr(module, func_name, None)
    if fn is None:
        names = sorted(n for n, v in vars(module).items() if callable(v) and not n.startswith("_"))
        raise TransformError(f"{FLAG} {spec}: module {module_name!r} has no {func_name!r}"
                             + (f"; it has {', '.join(names[:10])}" if names else ""))
    if not callable(fn):
        raise TransformError(f"{FLAG} {spec}: {func_name!r} is a {type(fn).__name__}, not a function")
    check_signature(fn, spec)
    return fn


def check_signature(fn: Callable, spec: str) -> None:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return  # builtins without a signature: the call itself will tell
    try:
        sig.bind(object())
    except TypeError:
        raise TransformError(f"{FLAG} {spec}: the function must take one argument, the DataFrame, "
                             f"and return a DataFrame; its signature is {fn.__name__}{sig}") from None


def apply_transform(fn: Callable, df, spec: str):
    """Call the transform on the streaming DataFrame; what it returns must be a streaming DataFrame."""
    from pyspark.sql import DataFrame

    try:
        result = fn(df)
    except Exception as e:
        raise TransformError(f"{FLAG} {spec} failed while building the query: {type(e).__name__}: {e}") from e
    if not isinstance(result, DataFrame):
        raise TransformError(f"{FLAG} {spec} returned {type(result).__name__}, not a DataFrame; "
                             "return the transformed DataFrame")
    if not result.isStreaming:
        raise TransformError(f"{FLAG} {spec} returned a batch DataFrame; build the result from the "
                             "streaming DataFrame it is given")
    return result
