"""Every option of the s3-sqs source, parsed and validated in one place, before any AWS call.

Names follow the original connector without its `spark.s3conn.` prefix; the prefixed forms are
accepted too, and all names are matched case-insensitively (Spark lower-cases them anyway). An unknown
name fails with the nearest valid one; a wrong value with the option's name, what it must be and what
it got (config/fields.py).

To add an option: a field below (its alias is the option's name), and a row in docs/source.md's options table.
"""
from __future__ import annotations

import ipaddress
import os
import re
from typing import Any
from urllib.parse import urlparse

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ..core import layout
from ..core.errors import UsageError
from ..core.names import closest
from ..core.vocabulary import BadFileAction, FileFormat, Mode, SchemaEvolution
from . import format_options
from .fields import Bool, Choice, Duration, Int, Number, Size, Text, blank_to_none, one_line
from .source_options import SourceOptions

LEGACY_PREFIX = "spark.s3conn."
# Accepted for compatibility with the original connector, where they had a meaning; not offered as hints.
COMPAT_OPTIONS = ("queueType",)

_HINTS = {
    "fileFormat": f"one of {', '.join(f.value for f in FileFormat)}",
    "stateLocation": ("give the source a durable place for its file index, e.g. .option('stateLocation', "
                      "'s3://my-checkpoints/my-query/source-state'); the job's --checkpoint sets it for you"),
}


class OptionError(UsageError):
    """An option is unknown, missing or invalid; the message names it and says how to fix it."""


class OptionsModel(BaseModel):
    """The definition of every source option: its name (alias), type, default and checks. parse_options
    validates with it and hands on a plain SourceOptions of the values."""
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    file_format: Choice(FileFormat) = Field(alias="fileFormat")
    queue_url: Text = Field(alias="queueUrl")
    queue_region: Text | None = Field(None, alias="queueRegion")
    state_location: Text = Field(alias="stateLocation")
    max_files_per_trigger: Int(-1) | None = Field(100, alias="maxFilesPerTrigger")  # None: unlimited
    max_bytes_per_trigger: Size | None = Field(None, alias="maxBytesPerTrigger")
    max_file_age_seconds: Duration() = Field(15 * 86400, alias="maxFileAge")
    latest_first: Bool = Field(False, alias="latestFirst")
    path_glob_filter: Text | None = Field(None, alias="pathGlobFilter")
    base_path: Text | None = Field(None, alias="basePath")
    partition_columns: tuple[str, ...] = Field((), alias="partitionColumns")
    queue_fetch_wait_timeout_seconds: Number(0) | None = Field(None, alias="queueFetchWaitTimeoutSeconds")  # 2 polls
    long_poll_wait_seconds: Int(0, 20) = Field(10, alias="sqs.longPollingWaitTimeSeconds")
    max_concurrency: Int(1, 1000) = Field(50, alias="sqs.maxConcurrency")
    max_retries: Int(0, 100) = Field(10, alias="sqs.maxRetries")
    visibility_timeout_seconds: Int(1, 43200) = Field(60, alias="sqs.visibilityTimeoutSeconds")
    keep_message_for_consumer_error: Bool = Field(False, alias="sqs.keepMessageForConsumerError")
    reprocess_start_batch_id: Int(0) | None = Field(None, alias="reprocessStartBatchId")
    reprocess_end_batch_id: Int(0) | None = Field(None, alias="reprocessEndBatchId")
    reprocess_dry_run: Bool = Field(False, alias="reprocessDryRun")
    endpoint_url: Text | None = Field(None, alias="endpointUrl")
    allow_overwrites: Bool = Field(False, alias="allowOverwrites")
    max_partition_bytes: Size = Field(128 << 20, alias="maxPartitionBytes")
    min_partitions: Int(1, 100_000) | None = Field(None, alias="minPartitions")  # None: the driver's cores
    # Where the job keeps the live executor cores (planning/slots.py); None: minPartitions alone decides.
    executor_cores_file: Text | None = Field(None, alias="executorCoresFile")
    quarantine_location: Text = Field(alias="quarantineLocation")  # default STATELOCATION/quarantine
    on_bad_file: Choice(BadFileAction) = Field(BadFileAction.QUARANTINE, alias="onBadFile")
    rescued_data_column: Text = Field("_rescued_data", alias="rescuedDataColumn")
    include_existing_files: Bool = Field(False, alias="includeExistingFiles")
    backfill_interval_seconds: Duration() | None = Field(None, alias="backfillInterval")
    backfill_from_inventory: Text | None = Field(None, alias="backfillFromInventory")
    queue_type: Text | None = Field(None, alias="queueType")
    schema_location: Text | None = Field(None, alias="schemaLocation")
    schema_evolution_mode: Choice(SchemaEvolution) | None = Field(None, alias="schemaEvolutionMode")
    schema_hints: Text | None = Field(None, alias="schemaHints")
    infer_column_types: Bool = Field(False, alias="inferColumnTypes")
    schema_inference_max_files: Int(1, 1_000_000) = Field(1000, alias="schemaInferenceMaxFiles")
    schema_inference_max_bytes: Size = Field(1 << 30, alias="schemaInferenceMaxBytes")
    schema_inference_wait_seconds: Duration() = Field(60.0, alias="schemaInferenceWait")
    mode: Choice(Mode, fold=str.upper) = Mode.PERMISSIVE
    reader_options: dict = Field(default_factory=dict)

    @field_validator("schema_hints")
    @classmethod
    def _hints(cls, v: str | None) -> str | None:
        if v is not None:
            from .ddl import SchemaError, parse_schema
            try:
                parse_schema(v, flag="the hints")
            except SchemaError as e:
                raise ValueError(f"must list columns as DDL, e.g. 'ts TIMESTAMP, amount DECIMAL(10,2)'; {e}") from None
        return v

    # -- single values --
    @field_validator("partition_columns", mode="before")
    @classmethod
    def _columns(cls, v: Any) -> tuple[str, ...]:
        return tuple(c.strip() for c in str(v).split(",") if c.strip()) if isinstance(v, str) else tuple(v)

    @field_validator("queue_url")
    @classmethod
    def _queue_url(cls, url: str) -> str:
        p = urlparse(url)
        if p.scheme not in ("http", "https") or not p.netloc or len([s for s in p.path.split("/") if s]) != 2:
            raise ValueError("must be an SQS queue URL like https://sqs.us-east-1.amazonaws.com/123456789012/"
                             f"my-queue, got {url!r}")
        return url

    @field_validator("state_location", "quarantine_location")
    @classmethod
    def _location(cls, v: str) -> str:
        return v.rstrip("/")

    @field_validator("queue_type")
    @classmethod
    def _queue_type(cls, v: str | None) -> str | None:
        if v is not None and v.upper() != "SQS":
            raise ValueError(f"must be SQS (the only queue type), got {v!r}")
        return v

    @field_validator("max_files_per_trigger")
    @classmethod
    def _max_files(cls, n: int | None) -> int | None:
        if n == 0:
            raise ValueError("must be a positive number of files, or -1 for unlimited; got 0")
        return None if n == -1 else n

    @field_validator("endpoint_url")
    @classmethod
    def _endpoint(cls, url: str | None) -> str | None:
        return None if url is None else check_endpoint(url)

    @field_validator("base_path")
    @classmethod
    def _base_path(cls, path: str | None) -> str | None:
        if path is None:
            return None
        # file:// is for local files, as tests and benchmarks use them.
        if not (path.startswith("s3://") and len(path) > 5) and not (path.startswith("file:///") and len(path) > 8):
            raise ValueError(f"must be an s3:// URI like s3://bucket/data/, got {path!r}")
        return path.rstrip("/") + "/"

    @field_validator("executor_cores_file")
    @classmethod
    def _cores_file(cls, path: str | None) -> str | None:
        if path is not None and ("://" in path or not os.path.isabs(path)):
            raise ValueError(f"must be an absolute local path on the driver (the job keeps it up to date), got {path!r}")
        return path

    @field_validator("backfill_from_inventory")
    @classmethod
    def _inventory(cls, uri: str | None) -> str | None:
        if uri is not None and not (uri.startswith("s3://") and uri.endswith(".json") and uri.count("/") >= 3):
            raise ValueError(f"must name an S3 Inventory report's manifest, s3://bucket/.../manifest.json; got {uri!r}")
        return uri

    # -- options that depend on each other --
    @model_validator(mode="before")
    @classmethod
    def _defaults(cls, values: dict) -> dict:
        """Defaults that come from other options: the region from the queue URL, the quarantine beside the state."""
        values = dict(values)
        if values.get("queueRegion") is None and isinstance(values.get("queueUrl"), str):
            values["queueRegion"] = region_from_queue_url(values["queueUrl"])
        if values.get("quarantineLocation") is None and isinstance(values.get("stateLocation"), str):
            values["quarantineLocation"] = layout.quarantine_location(values["stateLocation"].strip())
        return values

    @model_validator(mode="after")
    def _together(self) -> "OptionsModel":
        start, end = self.reprocess_start_batch_id, self.reprocess_end_batch_id
        if (start is None) != (end is None):
            raise ValueError("options 'reprocessStartBatchId' and 'reprocessEndBatchId' must be given together")
        if start is not None and end < start:
            raise ValueError(f"option 'reprocessEndBatchId' ({end}) is before 'reprocessStartBatchId' ({start})")
        if (self.include_existing_files or self.backfill_interval_seconds) and not self.base_path:
            name = "includeExistingFiles" if self.include_existing_files else "backfillInterval"
            raise ValueError(f"option '{name}' lists the files under basePath; set basePath to the prefix to list, "
                             "e.g. .option('basePath', 's3://my-bucket/landing/')")
        if problem := _latest_first_problem(self):
            raise ValueError(problem)
        if self.queue_fetch_wait_timeout_seconds is None:  # two long polls: a default that follows another option
            object.__setattr__(self, "queue_fetch_wait_timeout_seconds", 2.0 * self.long_poll_wait_seconds)
        return self



def _latest_first_problem(o: OptionsModel) -> str | None:
    max_files, max_bytes = o.max_files_per_trigger, o.max_bytes_per_trigger
    if not o.latest_first or (max_files is not None and max_bytes is None):
        return None
    return "option 'latestFirst' orders the files of a batch limited by maxFilesPerTrigger: " + (
        "set maxFilesPerTrigger to a number of files (without a limit every pending file is in the next batch, "
        "newest or not)" if max_files is None else "leave maxBytesPerTrigger out (latestFirst counts files, not bytes)")


_FIELDS_BY_OPTION = {f.alias or name: name for name, f in OptionsModel.model_fields.items()}
SOURCE_OPTIONS = tuple(a for a in _FIELDS_BY_OPTION if a not in ("mode", "reader_options", *COMPAT_OPTIONS))

# Auto Loader's options (and the Spark file-source options its users reach for), as this source spells them.
# Same name: `cloudFiles.<name>` is read as `<name>`. Same meaning under another name: read as that name, so
# an Auto Loader query's options work as written. A near equivalent that works differently: refused, naming
# it. Not supported: refused, saying why. docs/source.md, "Coming from Auto Loader", lists them.
AUTO_LOADER_PREFIX = "cloudfiles."
AUTO_LOADER_SAME = ("maxFilesPerTrigger", "maxBytesPerTrigger", "maxFileAge", "includeExistingFiles",
                    "allowOverwrites", "backfillInterval", "partitionColumns", "schemaLocation",
                    "schemaEvolutionMode", "schemaHints", "inferColumnTypes", "queueUrl")
AUTO_LOADER_ALIASES = {
    "cloudFiles.format": "fileFormat",
    "cloudFiles.region": "queueRegion",
    "cloudFiles.fetchParallelism": "sqs.maxConcurrency",
    "cloudFiles.schemaInference.sampleSize.numFiles": "schemaInferenceMaxFiles",
    "cloudFiles.schemaInference.sampleSize.numBytes": "schemaInferenceMaxBytes",
}
AUTO_LOADER_RENAMED = {
    "badRecordsPath": "quarantineLocation",
    "ignoreCorruptFiles": "onBadFile (quarantine, the default, sets a bad file aside and goes on)",
}
# Cleaning the source is the stack's, not a query's: one consumer that archived what it had read would take
# files from the others (config/clean.py). These names point there.
_STACK_CLEANING = ("set once for the whole stack: every consumer reads the same files, so one query must not move "
                   "them. Put {name} in cdk.json's sourceCleaning, deploy, and run `source-state clean`; it "
                   "cleans a file only once every consumer that reads it has committed it")
AUTO_LOADER_UNSUPPORTED = {
    "cloudFiles.useNotifications": "not needed: this source always reads S3 notifications from its queue",
    "cloudFiles.useManagedFileEvents": "not supported: the files come from the stack's SQS queue",
    "cloudFiles.useIncrementalListing": "not supported: the source lists only for includeExistingFiles and "
                                        "backfillInterval, always in full",
    "cloudFiles.validateOptions": "not needed: every option is always validated when the query starts",
    "cloudFiles.cleanSource": _STACK_CLEANING.format(name="cleanSource"),
    "cloudFiles.cleanSource.retentionDuration": _STACK_CLEANING.format(name="cleanSourceRetention"),
    "cloudFiles.cleanSource.moveDestination": _STACK_CLEANING.format(name="sourceArchiveLocation"),
    "cleanSource": _STACK_CLEANING.format(name="cleanSource"),
    "cleanSourceRetention": _STACK_CLEANING.format(name="cleanSourceRetention"),
    "sourceArchiveLocation": _STACK_CLEANING.format(name="sourceArchiveLocation"),
    "sourceArchiveDir": _STACK_CLEANING.format(name="sourceArchiveLocation"),
    "cloudFiles.resourceTag": "not supported: the stack (cdk.json) creates and tags the queues",
    "cloudFiles.queueName": "not supported: give the queue's URL as queueUrl",
    "ignoreMissingFiles": "not needed: a file deleted before it is read is always recorded as missing (source-state "
                          "shows it), and the batch goes on",
    "recursiveFileLookup": "not supported: the files come from the queue, at any depth",
    "modifiedBefore": "not supported: use maxFileAge",
    "modifiedAfter": "not supported: use maxFileAge",
}


def option_name(key: str) -> str | None:
    """The source option `key` sets, however it is spelled (any case; `spark.s3conn.`, `cloudFiles.` or an
    Auto Loader alias), or None when it names none. One answer for the source, the job and submit-job."""
    return _OPTION_NAMES.get(key.lower().removeprefix(LEGACY_PREFIX).replace("sqs..", "sqs."))


def auto_loader_message(key: str) -> str | None:
    """Why an Auto Loader (or Spark file-source) option is refused, and what to use instead; None if it is none."""
    for name, ours in AUTO_LOADER_RENAMED.items():
        if name.lower() == key.lower():
            return f"option '{key}' is named differently here: use {ours}"
    for name, why in AUTO_LOADER_UNSUPPORTED.items():
        if name.lower() == key.lower():
            return f"option '{key}' is {why}"
    if key.lower().startswith(AUTO_LOADER_PREFIX):
        return (f"option '{key}' is an Auto Loader option this source does not have; the ones it understands "
                f"(cloudFiles.<name>): {', '.join(AUTO_LOADER_SAME)}; and "
                f"{', '.join(k.removeprefix('cloudFiles.') for k in AUTO_LOADER_ALIASES)}")
    return None


def source_options_help() -> str:
    """The source's options, for `job.py --help` and `submit-job --help` (docs/source.md has their meanings)."""
    import textwrap

    def wrap(label: str, names) -> str:
        return textwrap.fill(", ".join(names), width=110, initial_indent=f"  {label}: ",
                             subsequent_indent="    ")
    lines = ["source options (--option KEY=VALUE; docs/source.md, \"Options\", says what each does):",
             wrap("the source", SOURCE_OPTIONS + ("mode",))]
    lines += [wrap(fmt, sorted(opts) or ["none"]) for fmt, opts in format_options.FORMAT_OPTIONS.items()]
    lines.append(wrap("Auto Loader's cloudFiles.<name>, read as <name>", AUTO_LOADER_SAME))
    lines.append(wrap("and read as this source's", [f"{k} as {v}" for k, v in AUTO_LOADER_ALIASES.items()]))
    return "\n".join(lines)


def parse_options(raw: dict[str, str]) -> SourceOptions:
    """Build SourceOptions from Spark's string options, or raise OptionError naming the culprit."""
    opts = _normalise(raw)
    if "path" in opts:
        raise OptionError("the s3-sqs source takes no path: the files come from the queue. Call .load() "
                          "without an argument, and use pathGlobFilter or basePath to narrow what is read")
    values: dict[str, Any] = {}
    reader: dict[str, str] = {}
    for key, value in opts.items():
        if (name := option_name(key)) is not None:
            if name in values and values[name] != value:  # e.g. `cloudFiles.<name>` and `<name>` both given
                raise OptionError(f"option '{name}' is given twice, under two names, with different values "
                                  f"({values[name]!r} and {value!r}); give it once")
            values[name] = value
        elif key == "mode":
            reader["mode"] = value
        elif (name := format_options.canonical(key)) is not None:
            if name in reader and reader[name] != value:
                raise OptionError(f"option '{name}' is given twice, under two names, with different values "
                                  f"({reader[name]!r} and {value!r})")
            reader[name] = value
        else:
            shown = next((k for k in raw if k.lower().endswith(key)), key)  # as the user spelled it
            raise OptionError(auto_loader_message(shown) or _unknown_message(shown, opts))
    try:
        model = OptionsModel.model_validate(blank_to_none(values))
    except ValidationError as e:
        raise OptionError(one_line(e, lambda loc: f"option '{loc[0]}'", _HINTS)) from None
    fmt = model.file_format
    if "mode" in reader:
        if fmt not in format_options.ROW_FORMATS:
            raise OptionError(f"option 'mode' does not apply to fileFormat {fmt}: it has no rows that can be "
                              f"malformed (mode applies to {', '.join(format_options.ROW_FORMATS)})")
        values["mode"] = reader.pop("mode")
    try:
        values["reader_options"] = format_options.reader_options(fmt, reader)
        return SourceOptions(**OptionsModel.model_validate(blank_to_none(values)).model_dump())
    except ValidationError as e:
        raise OptionError(one_line(e, lambda loc: f"option '{loc[0]}'", _HINTS)) from None
    except ValueError as e:
        raise OptionError(str(e)) from None


def job_source_options(fmt: str, queue_url: str, checkpoint: str, options: dict[str, str],
                       region: str | None = None, endpoint_url: str | None = None,
                       state_location: str | None = None, flag_names: dict[str, str] | None = None) -> dict[str, str]:
    """The source options the job builds from its flags, then --option. An --option that gives a flag's option
    another value is refused (`flag_names` says how the caller names those flags). One owner, so that what
    submit-job checks is what the job runs."""
    # The checkpoint's places, unless an --option names one (under any spelling: cloudFiles.schemaLocation too).
    places = {"stateLocation": state_location or layout.state_location(checkpoint),
              "quarantineLocation": layout.quarantine_location(checkpoint), "schemaLocation": layout.schema_location(checkpoint)}
    given = {option_name(k) for k in options}
    raw = {"fileFormat": fmt, "queueUrl": queue_url, **{k: v for k, v in places.items() if k not in given}}
    if endpoint_url:
        raw["endpointUrl"] = endpoint_url
    if region:
        raw["queueRegion"] = region
    by_flag = {"fileFormat": ("--format", fmt), "queueUrl": ("--queue-url", queue_url),
               "queueRegion": ("--region", region), "endpointUrl": ("--endpoint-url", endpoint_url),
               "stateLocation": ("--state-location", state_location)}
    for name, (flag, value) in by_flag.items():
        _check_clash(name, flag_names.get(name, flag) if flag_names else flag, value, options)
    raw.update(options)
    return raw


def _check_clash(name: str, flag: str, value: str | None, options: dict[str, str]) -> None:
    """An --option that sets what a flag already set, to another value: one of the two would be ignored
    silently (`--format csv --option fileFormat=json` read JSON), so it is refused, naming both."""
    if value is None:
        return
    for key, given in options.items():
        if option_name(key) != name:
            continue
        same = given.strip().lower() == value.lower() if name == "fileFormat" else given.strip().rstrip("/") == value.rstrip("/")
        if not same:
            raise OptionError(f"--option {key}={given} clashes with {flag} {value}: the job would use only one of "
                              "them; leave the --option out")


def region_from_queue_url(url: str) -> str | None:
    """`https://sqs.eu-west-1.amazonaws.com/...` -> eu-west-1; None for endpoints without one."""
    m = re.match(r"^sqs[.-]([a-z]{2}(?:-[a-z]+)+-\d)\.", urlparse(url).hostname or "")
    return m.group(1) if m else None


def name_in_queue_url(queue_url: str) -> str:
    """`https://sqs.eu-west-1.amazonaws.com/123456789012/orders` -> `orders`."""
    return urlparse(queue_url).path.rstrip("/").rsplit("/", 1)[-1]


def check_endpoint(url: str) -> str:
    """Plain http:// would send signed requests and object data in clear text, so it is only accepted for a
    loopback or private-network address (a local stand-in, an on-premises store), or when
    S3SQS_ALLOW_HTTP_ENDPOINT=1 says so. Host names are not resolved: no lookup before the query starts."""
    p = urlparse(url)
    if p.scheme not in ("http", "https") or not p.netloc:
        raise ValueError(f"must be an http(s) URL like http://127.0.0.1:5000, got {url!r}")
    if p.scheme == "http" and os.environ.get("S3SQS_ALLOW_HTTP_ENDPOINT") != "1":
        host = p.hostname or ""
        try:
            ip = ipaddress.ip_address(host)
            local = ip.is_loopback or ip.is_private
        except ValueError:
            local = host == "localhost" or host.endswith(".localhost")
        if not local:
            raise ValueError(f"{url!r} uses plain http:// to {host!r}, which is neither loopback nor a private "
                             "address; use https://, or set S3SQS_ALLOW_HTTP_ENDPOINT=1 in the environment to allow it")
    return url


def _normalise(raw: dict[str, str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for k, v in raw.items():
        key = k.lower()
        if key.startswith(LEGACY_PREFIX):
            key = key[len(LEGACY_PREFIX):]
        key = key.replace("sqs..", "sqs.")  # the original documented `spark.s3conn..sqs.` in places
        if key in out and out[key] != v:
            raise OptionError(f"option '{k}' is given twice with different values ({out[key]!r} and {v!r})")
        out[key] = v
    return out


def _unknown_message(key: str, opts: dict[str, str]) -> str:
    """Unknown `key`: the nearest option of the source or of the format read (any format's, when it is unknown)."""
    fmt = next((v.strip().lower() for k, v in opts.items() if option_name(k) == "fileFormat"), None)
    if fmt in format_options.FORMAT_OPTIONS:
        valid, where = [*SOURCE_OPTIONS, *format_options.FORMAT_OPTIONS[fmt], "mode"], f"fileFormat {fmt}"
    else:
        valid, where = [*SOURCE_OPTIONS, *format_options.ALL_NAMES, "mode"], "any fileFormat"
    near = closest(key, valid)
    hint = f"; did you mean '{near}'?" if near else f"; valid options: {', '.join(sorted(valid))}"
    return f"unknown option '{key}': neither a source option nor a reader option of {where}{hint}"


_OPTION_NAMES = {**{n.lower(): n for n in SOURCE_OPTIONS + COMPAT_OPTIONS},
                 **{AUTO_LOADER_PREFIX + n.lower(): n for n in AUTO_LOADER_SAME},
                 **{k.lower(): v for k, v in AUTO_LOADER_ALIASES.items()}}
