"""Schema decisions, pure: files' schemas merged into the stream's (inference), a stored schema grown by
the columns new files bring (evolution), hints applied, partition columns found in keys. Schemas are
Spark's StructType JSON (`jsonValue()`), which Spark's Python side rebuilds without a JVM."""
from __future__ import annotations

from urllib.parse import urlparse

_INTEGRAL = ("byte", "short", "integer", "long")
_FRACTIONAL = ("float", "double")


def merge_types(a, b):
    """The type both values fit, for inference: the same type; a struct with both field sets; integers
    widened; integers and fractions as double; anything else as string (as Spark's JSON inference does)."""
    if a == b:
        return a
    if a == "void":
        return b
    if b == "void":
        return a
    nested = _inside(a, b, widen=True)
    if nested is not None:
        return nested
    numeric = _INTEGRAL + _FRACTIONAL
    if a in numeric and b in numeric:
        if a in _INTEGRAL and b in _INTEGRAL:
            return max(a, b, key=_INTEGRAL.index)
        return "double"
    return "string"


def merge_structs(a: dict, b: dict, widen: bool) -> dict:
    """`a`'s fields, then `b`'s that `a` lacks. `widen`: same-named fields take merge_types (inference);
    otherwise `a`'s type stays and only nested structs gain `b`'s new fields (evolution)."""
    by_name = {f["name"]: f for f in b["fields"]}
    fields = []
    for f in a["fields"]:
        other = by_name.pop(f["name"], None)
        if other is not None:
            f = {**f, "type": merge_types(f["type"], other["type"]) if widen else _grow(f["type"], other["type"])}
        fields.append(f)
    fields.extend({**f, "nullable": True} for f in b["fields"] if f["name"] in by_name)
    return {"type": "struct", "fields": fields}


def _grow(old, new):
    """`old` with the struct fields `new` adds, at any depth; never a changed type."""
    grown = _inside(old, new, widen=False)
    return old if grown is None else grown


def _inside(a, b, widen: bool):
    """Two structs, arrays or maps of one kind, combined inside: structs by merge_structs, an array's
    elements and a map's values by merge_types (`widen`) or _grow. None when they are not of one such kind."""
    if not (isinstance(a, dict) and isinstance(b, dict) and a["type"] == b["type"]):
        return None
    inner = merge_types if widen else _grow
    if a["type"] == "struct":
        return merge_structs(a, b, widen)
    if a["type"] == "array":
        return {**a, "elementType": inner(a["elementType"], b["elementType"])}
    if a["type"] == "map":
        return {**a, "valueType": inner(a["valueType"], b["valueType"])}
    return None


def evolve(current: dict, additions: list[dict]) -> dict:
    """The stored schema with the new columns the files in `additions` bring (existing types unchanged)."""
    out = current
    for schema in additions:
        out = merge_structs(out, no_void(schema), widen=False)
    return out


def no_void(t):
    """Columns that held only nulls in the sample are strings, as Auto Loader infers them."""
    if t == "void":
        return "string"
    if isinstance(t, dict):
        if t["type"] == "struct":
            return {**t, "fields": [{**f, "type": no_void(f["type"])} for f in t["fields"]]}
        if t["type"] == "array":
            return {**t, "elementType": no_void(t["elementType"])}
        if t["type"] == "map":
            return {**t, "keyType": no_void(t["keyType"]), "valueType": no_void(t["valueType"])}
    return t


def with_hints(schema: dict, hints: dict) -> dict:
    """schemaHints: a hinted column takes the hint's type; one the files did not have is added."""
    by_name = {f["name"].lower(): f for f in hints["fields"]}
    fields = [by_name.pop(f["name"].lower(), f) for f in schema["fields"]]
    return {"type": "struct", "fields": fields + [f for f in hints["fields"] if f["name"].lower() in by_name]}


def with_columns(schema: dict, names: list[str], type_="string") -> dict:
    """`schema` with each named column added at the end (as `type_`) unless it has it already."""
    have = {f["name"] for f in schema["fields"]}
    extra = [{"name": n, "type": type_, "nullable": True, "metadata": {}} for n in names if n not in have]
    return {"type": "struct", "fields": schema["fields"] + extra}


def partition_columns(keys: list[str], base_path: str | None) -> list[str]:
    """Hive-style `name=value` folders shared by every sampled key (below basePath), in path order."""
    prefix = urlparse(base_path).path.lstrip("/") if base_path else ""
    found: list[list[str]] = []
    for key in keys:
        rel = key[len(prefix):] if prefix and key.startswith(prefix) else key
        found.append([seg.split("=", 1)[0] for seg in rel.split("/")[:-1] if "=" in seg and seg.index("=") > 0])
    if not found:
        return []
    common = set(found[0]).intersection(*map(set, found[1:]))
    return [n for n in found[0] if n in common]
