"""The source's options once validated (config/options.py validates them): a plain, frozen value.

It crosses processes light. Spark's streaming runner and planner, which start after the query does,
unpickle it without importing the validator: pydantic's import alone costs about as much as reading a
batch of small files. Its attributes are the validated options by field name (see OptionsModel).
"""
from __future__ import annotations

from typing import Any

from ..core.endpoint import Endpoint
from ..core.vocabulary import Mode


class SourceOptions:
    __slots__ = ("_values",)

    def __init__(self, values: dict[str, Any]):
        object.__setattr__(self, "_values", dict(values))

    def __getattr__(self, name: str) -> Any:
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(f"the source has no option {name!r}") from None

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("source options are read-only")

    def __reduce__(self):
        return SourceOptions, (self._values,)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SourceOptions) and self._values == other._values

    def __hash__(self) -> int:
        return hash(tuple(sorted((k, repr(v)) for k, v in self._values.items())))

    def __repr__(self) -> str:
        return "SourceOptions(" + ", ".join(f"{k}={v!r}" for k, v in self._values.items()) + ")"

    def as_dict(self) -> dict[str, Any]:
        return dict(self._values)

    # -- derived --
    @property
    def reprocessing(self) -> bool:
        return self.reprocess_start_batch_id is not None

    @property
    def endpoint(self) -> Endpoint:
        return Endpoint(self.endpoint_url, self.queue_region, self.max_retries + 1)

    @property
    def mode(self) -> str:
        """What a row that does not fit does (CSV, JSON); other formats have no rows of their own to misfit."""
        return self._values.get("mode", Mode.PERMISSIVE)
