"""The source's options once validated (config/options.py validates them): a plain, frozen, typed value.

It crosses processes light. Spark's streaming runner and planner, which start after the query does,
unpickle it without importing the validator: pydantic's import alone costs about as much as reading a
batch of small files. Its fields are OptionsModel's, by field name (a test holds the two together).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from ..core.endpoint import Endpoint
from ..core.vocabulary import BadFileAction, FileFormat, Mode, SchemaEvolution


@dataclass(frozen=True, slots=True)
class SourceOptions:
    # what and where
    file_format: FileFormat
    queue_url: str
    queue_region: str | None
    state_location: str
    quarantine_location: str
    endpoint_url: str | None
    queue_type: str | None
    # which files, and how many a batch
    max_files_per_trigger: int | None        # None: unlimited
    max_bytes_per_trigger: int | None
    max_file_age_seconds: float
    latest_first: bool
    path_glob_filter: str | None
    base_path: str | None
    partition_columns: tuple[str, ...]
    allow_overwrites: bool
    include_existing_files: bool
    backfill_interval_seconds: float | None
    backfill_from_inventory: str | None
    # the queue
    queue_fetch_wait_timeout_seconds: float
    long_poll_wait_seconds: int
    max_concurrency: int
    max_retries: int
    visibility_timeout_seconds: int
    keep_message_for_consumer_error: bool
    # reprocessing
    reprocess_start_batch_id: int | None
    reprocess_end_batch_id: int | None
    reprocess_dry_run: bool
    # reading
    max_partition_bytes: int
    min_partitions: int | None               # None: the driver's cores
    executor_cores_file: str | None
    on_bad_file: BadFileAction
    rescued_data_column: str
    mode: Mode
    reader_options: dict[str, Any]           # the format's options, by canonical name (config/format_options.py)
    # the schema
    schema_location: str | None
    schema_evolution_mode: SchemaEvolution | None
    schema_hints: str | None
    infer_column_types: bool
    schema_inference_max_files: int
    schema_inference_max_bytes: int
    schema_inference_wait_seconds: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __hash__(self) -> int:  # reader_options is a dict: hash what it holds
        return hash(tuple((k, repr(v)) for k, v in self.as_dict().items()))

    # -- derived --
    @property
    def reprocessing(self) -> bool:
        return self.reprocess_start_batch_id is not None

    @property
    def endpoint(self) -> Endpoint:
        return Endpoint(self.endpoint_url, self.queue_region, self.max_retries + 1)
