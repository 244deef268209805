"""Every option of the s3-sqs source, parsed and validated in one place, before any AWS call.

Names follow the original connector without its `spark.s3conn.` prefix; the prefixed forms are
accepted too, and all names are matched case-insensitively (Spark lower-cases them anyway).
"""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from urllib.parse import urlparse

LEGACY_PREFIX = "spark.s3conn."
FORMATS = ("csv", "json", "parquet")

# Reader options handed to the file reader, by format (canonical spelling).
READER_OPTIONS = {
    "csv": ("header", "delimiter", "sep", "quote", "escape", "nullValue", "encoding", "mode"),
    "json": ("mode",),
    "parquet": (),
}
MODES = ("PERMISSIVE", "DROPMALFORMED", "FAILFAST")
BAD_FILE_ACTIONS = ("quarantine", "fail")

SOURCE_OPTIONS = (
    "fileFormat", "queueUrl", "queueRegion", "maxFilesPerTrigger", "maxBytesPerTrigger", "maxFileAge",
    "pathGlobFilter", "basePath", "partitionColumns", "queueFetchWaitTimeoutSeconds",
    "sqs.longPollingWaitTimeSeconds", "sqs.maxConcurrency", "sqs.maxRetries", "sqs.visibilityTimeoutSeconds",
    "sqs.keepMessageForConsumerError", "reprocessStartBatchId", "reprocessEndBatchId", "reprocessDryRun",
    "stateLocation", "endpointUrl", "allowOverwrites", "maxPartitionBytes", "minPartitions", "quarantineLocation",
    "onBadFile", "rescuedDataColumn", "includeExistingFiles", "backfillInterval",
)
# Accepted for compatibility with the original connector, where they had a meaning; not offered as hints.
COMPAT_OPTIONS = ("queueType",)

_DURATION_UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "d": 86400, "w": 604800}
_SIZE_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "m": 1 << 20, "mb": 1 << 20,
               "g": 1 << 30, "gb": 1 << 30, "t": 1 << 40, "tb": 1 << 40}


class OptionError(ValueError):
    """An option is unknown, missing or invalid; the message names it and says how to fix it."""


@dataclass(frozen=True)
class SourceOptions:
    file_format: str
    queue_url: str
    queue_region: str | None
    state_location: str
    max_files_per_trigger: int | None  # None = unlimited
    max_bytes_per_trigger: int | None
    max_file_age_seconds: float
    path_glob_filter: str | None
    base_path: str | None
    partition_columns: tuple[str, ...]
    queue_fetch_wait_timeout_seconds: float
    long_poll_wait_seconds: int
    max_concurrency: int
    max_retries: int
    visibility_timeout_seconds: int
    keep_message_for_consumer_error: bool
    reprocess_start_batch_id: int | None
    reprocess_end_batch_id: int | None
    reprocess_dry_run: bool
    endpoint_url: str | None
    allow_overwrites: bool
    max_partition_bytes: int
    min_partitions: int | None  # None: as many as the driver machine has cores
    quarantine_location: str  # default: STATELOCATION/quarantine
    on_bad_file: str
    mode: str
    rescued_data_column: str
    include_existing_files: bool
    backfill_interval_seconds: float | None
    reader_options: dict = field(default_factory=dict)

    @property
    def reprocessing(self) -> bool:
        return self.reprocess_start_batch_id is not None


def parse_options(raw: dict[str, str]) -> SourceOptions:
    """Build SourceOptions from Spark's string options, or raise OptionError naming the culprit."""
    opts = _normalise(raw)
    fmt_guess = str(opts.get("fileformat") or "").strip().lower()
    known = {n.lower(): n for n in SOURCE_OPTIONS + COMPAT_OPTIONS}
    reader_known = {n.lower(): n for names in READER_OPTIONS.values() for n in names}
    if "path" in opts:
        raise OptionError("the s3-sqs source takes no path: the files come from the queue. Call .load() "
                          "without an argument, and use pathGlobFilter or basePath to narrow what is read")
    for key in opts:
        if key not in known and key not in reader_known:
            shown = next((k for k in raw if k.lower().endswith(key)), key)  # as the user spelled it
            raise OptionError(_unknown_message(shown, list(SOURCE_OPTIONS) + list(reader_known.values())))
        if key in reader_known and reader_known[key] not in READER_OPTIONS.get(fmt_guess, ()):
            allowed = ", ".join(READER_OPTIONS.get(fmt_guess, ())) or "none"
            raise OptionError(
                f"option '{reader_known[key]}' does not apply to fileFormat {fmt_guess or '(unset)'}; "
                f"reader options for that format: {allowed}")

    g = _Getter(opts)
    file_format = g.choice("fileFormat", FORMATS, required=True)
    queue_url = g.string("queueUrl", required=True)
    _check_queue_url(queue_url)
    if "queuetype" in opts and opts["queuetype"].upper() != "SQS":
        raise OptionError(f"option 'queueType' must be SQS (the only queue type), got {opts['queuetype']!r}")
    long_poll = g.integer("sqs.longPollingWaitTimeSeconds", 10, 0, 20)
    max_files = g.integer("maxFilesPerTrigger", 100, -1, None)
    if max_files == 0:
        raise OptionError("option 'maxFilesPerTrigger' must be a positive number of files, or -1 for unlimited; got 0")
    start_id = g.integer("reprocessStartBatchId", None, 0, None)
    end_id = g.integer("reprocessEndBatchId", None, 0, None)
    if (start_id is None) != (end_id is None):
        raise OptionError("options 'reprocessStartBatchId' and 'reprocessEndBatchId' must be given together")
    if start_id is not None and end_id < start_id:
        raise OptionError(f"option 'reprocessEndBatchId' ({end_id}) is before 'reprocessStartBatchId' ({start_id})")
    partition_cols = tuple(c.strip() for c in (g.string("partitionColumns") or "").split(",") if c.strip())
    state_location = g.string("stateLocation", required=True, hint=(
        "give the source a durable place for its file index, e.g. .option('stateLocation', "
        "'s3://my-checkpoints/my-query/source-state'); the job's --checkpoint sets it for you"))
    reader = {reader_known[k]: v for k, v in opts.items() if k in reader_known}
    include_existing = g.boolean("includeExistingFiles", False)
    backfill = g.duration("backfillInterval", None) if g.string("backfillInterval") else None
    if (include_existing or backfill) and not g.string("basePath"):
        name = "includeExistingFiles" if include_existing else "backfillInterval"
        raise OptionError(f"option '{name}' lists the files under basePath; set basePath to the prefix to list, "
                          "e.g. .option('basePath', 's3://my-bucket/landing/')")
    mode = str(reader.pop("mode", "PERMISSIVE")).strip().upper()
    if mode not in MODES:
        raise OptionError(f"option 'mode' must be one of {', '.join(MODES)}; got {mode!r}")
    if "sep" in reader:
        reader.setdefault("delimiter", reader.pop("sep"))
    for k in ("header",):
        if k in reader:
            reader[k] = _bool(k, reader[k])
    for k in ("delimiter", "quote", "escape"):
        if k in reader and len(reader[k]) != 1:
            raise OptionError(f"option '{k}' must be a single character, got {reader[k]!r}")

    return SourceOptions(
        file_format=file_format,
        queue_url=queue_url,
        queue_region=g.string("queueRegion") or region_from_queue_url(queue_url),
        state_location=state_location.rstrip("/"),
        max_files_per_trigger=None if max_files == -1 else max_files,
        max_bytes_per_trigger=g.size("maxBytesPerTrigger"),
        max_file_age_seconds=g.duration("maxFileAge", "15d"),
        path_glob_filter=g.string("pathGlobFilter"),
        base_path=_check_base_path(g.string("basePath")),
        partition_columns=partition_cols,
        queue_fetch_wait_timeout_seconds=g.number("queueFetchWaitTimeoutSeconds", 2 * long_poll, 0, None),
        long_poll_wait_seconds=long_poll,
        max_concurrency=g.integer("sqs.maxConcurrency", 50, 1, 1000),
        max_retries=g.integer("sqs.maxRetries", 10, 0, 100),
        visibility_timeout_seconds=g.integer("sqs.visibilityTimeoutSeconds", 60, 1, 43200),
        keep_message_for_consumer_error=g.boolean("sqs.keepMessageForConsumerError", False),
        reprocess_start_batch_id=start_id,
        reprocess_end_batch_id=end_id,
        reprocess_dry_run=g.boolean("reprocessDryRun", False),
        endpoint_url=_check_endpoint(g.string("endpointUrl")),
        allow_overwrites=g.boolean("allowOverwrites", False),
        max_partition_bytes=g.size("maxPartitionBytes") or 128 << 20,
        min_partitions=g.integer("minPartitions", None, 1, 100_000),
        quarantine_location=(g.string("quarantineLocation") or "").rstrip("/")
        or state_location.rstrip("/") + "/quarantine",
        on_bad_file=g.choice("onBadFile", BAD_FILE_ACTIONS) or "quarantine",
        mode=mode,
        rescued_data_column=g.string("rescuedDataColumn") or "_rescued_data",
        include_existing_files=include_existing,
        backfill_interval_seconds=backfill,
        reader_options=reader,
    )


# Where the job keeps the source's file index and quarantined files, under its checkpoint.
STATE_DIR, QUARANTINE_DIR = "source-state", "quarantine"


def job_source_options(fmt: str, queue_url: str, checkpoint: str, options: dict[str, str],
                       region: str | None = None, endpoint_url: str | None = None,
                       state_location: str | None = None) -> dict[str, str]:
    """The source options the job builds from its flags: its own first, then --option, which win.
    One owner, so that what submit-job checks is what the job runs."""
    base = checkpoint.rstrip("/")
    raw = {"fileFormat": fmt, "queueUrl": queue_url, "stateLocation": state_location or f"{base}/{STATE_DIR}",
           "quarantineLocation": f"{base}/{QUARANTINE_DIR}"}
    if endpoint_url:
        raw["endpointUrl"] = endpoint_url
    if region:
        raw["queueRegion"] = region
    raw.update(options)
    return raw


def region_from_queue_url(url: str) -> str | None:
    """`https://sqs.eu-west-1.amazonaws.com/...` -> eu-west-1; None for endpoints without one."""
    m = re.match(r"^sqs[.-]([a-z]{2}(?:-[a-z]+)+-\d)\.", urlparse(url).hostname or "")
    return m.group(1) if m else None


def parse_duration_seconds(text: str) -> float:
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*", text.lower())
    if not m:
        raise ValueError(text)
    unit = m.group(2) or "ms"  # a bare number is milliseconds, as in Spark
    if unit in ("day", "days"):
        unit = "d"
    if unit not in _DURATION_UNITS:
        raise ValueError(text)
    return float(m.group(1)) * _DURATION_UNITS[unit]


def parse_size_bytes(text: str) -> int:
    m = re.fullmatch(r"\s*(\d+)\s*([a-z]*)\s*", text.lower())
    if not m or m.group(2) not in _SIZE_UNITS:
        raise ValueError(text)
    return int(m.group(1)) * _SIZE_UNITS[m.group(2)]


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


def _unknown_message(key: str, valid: list[str]) -> str:
    lowered = {v.lower(): v for v in valid}
    close = difflib.get_close_matches(key.lower(), list(lowered), n=1, cutoff=0.6)
    hint = f"; did you mean '{lowered[close[0]]}'?" if close else f"; valid options: {', '.join(sorted(valid))}"
    return f"unknown option '{key}' for format s3-sqs{hint}"


def _check_queue_url(url: str) -> None:
    p = urlparse(url)
    if p.scheme not in ("http", "https") or not p.netloc or len([s for s in p.path.split("/") if s]) != 2:
        raise OptionError(
            f"option 'queueUrl' must be an SQS queue URL like https://sqs.us-east-1.amazonaws.com/123456789012/"
            f"my-queue, got {url!r}")


def _check_endpoint(url: str | None) -> str | None:
    """Plain http:// would send signed requests and object data in clear text, so it is only accepted for a
    loopback or private-network address (a local stand-in, an on-premises store), or when
    S3SQS_ALLOW_HTTP_ENDPOINT=1 says so. Host names are not resolved: no lookup before the query starts."""
    if url is not None:
        import ipaddress
        import os

        p = urlparse(url)
        if p.scheme not in ("http", "https") or not p.netloc:
            raise OptionError(f"option 'endpointUrl' must be an http(s) URL like http://127.0.0.1:5000, got {url!r}")
        if p.scheme == "http" and os.environ.get("S3SQS_ALLOW_HTTP_ENDPOINT") != "1":
            host = p.hostname or ""
            try:
                ip = ipaddress.ip_address(host)
                local = ip.is_loopback or ip.is_private
            except ValueError:
                local = host == "localhost" or host.endswith(".localhost")
            if not local:
                raise OptionError(
                    f"option 'endpointUrl' {url!r} uses plain http:// to {host!r}, which is neither loopback nor a "
                    "private address; use https://, or set S3SQS_ALLOW_HTTP_ENDPOINT=1 in the environment to allow it"
                )
    return url


def _check_base_path(path: str | None) -> str | None:
    if path is None:
        return None
    # file:// is for local files, as tests and benchmarks use them.
    if not (path.startswith("s3://") and len(path) > 5) and not (path.startswith("file:///") and len(path) > 8):
        raise OptionError(f"option 'basePath' must be an s3:// URI like s3://bucket/data/, got {path!r}")
    return path.rstrip("/") + "/"


def _bool(name: str, v: str) -> bool:
    s = str(v).strip().lower()
    if s in ("true", "1", "yes"):
        return True
    if s in ("false", "0", "no"):
        return False
    raise OptionError(f"option '{name}' must be true or false, got {v!r}")


class _Getter:
    def __init__(self, opts: dict[str, str]):
        self.opts = opts

    def _raw(self, name: str, required: bool = False, hint: str = ""):
        v = self.opts.get(name.lower())
        if v is not None and str(v).strip() == "":
            v = None
        if v is None and required:
            raise OptionError(f"option '{name}' is required" + (f": {hint}" if hint else ""))
        return v

    def string(self, name, required=False, hint=""):
        v = self._raw(name, required, hint)
        return None if v is None else str(v).strip()

    def choice(self, name, choices, required=False):
        v = self._raw(name, required, f"one of {', '.join(choices)}")
        if v is None:
            return None
        s = str(v).strip().lower()
        if s not in choices:
            raise OptionError(f"option '{name}' must be one of {', '.join(choices)}; got {v!r}")
        return s

    def integer(self, name, default, lo, hi):
        v = self._raw(name)
        if v is None:
            return default
        try:
            n = int(str(v).strip())
        except ValueError:
            raise OptionError(f"option '{name}' must be a whole number, got {v!r}") from None
        if (lo is not None and n < lo) or (hi is not None and n > hi):
            rng = f"{lo} to {hi}" if hi is not None else f"at least {lo}"
            raise OptionError(f"option '{name}' must be {rng}, got {n}")
        return n

    def number(self, name, default, lo, hi):
        v = self._raw(name)
        if v is None:
            return float(default)
        try:
            n = float(str(v).strip())
        except ValueError:
            raise OptionError(f"option '{name}' must be a number, got {v!r}") from None
        if n < lo or (hi is not None and n > hi):
            raise OptionError(f"option '{name}' must be at least {lo}, got {n}")
        return n

    def boolean(self, name, default):
        v = self._raw(name)
        return default if v is None else _bool(name, v)

    def duration(self, name, default):
        return self._positive(name, self._raw(name) or default, parse_duration_seconds,
                              "a duration like 15d, 12h, 30m or 90s")

    def size(self, name):
        v = self._raw(name)
        return None if v is None else self._positive(name, v, parse_size_bytes, "a size like 512m, 1g or 1048576")

    @staticmethod
    def _positive(name, v, parse, what):
        try:
            n = parse(str(v))
        except ValueError:
            raise OptionError(f"option '{name}' must be {what}; got {v!r}") from None
        if n <= 0:
            raise OptionError(f"option '{name}' must be positive, got {v!r}")
        return n
