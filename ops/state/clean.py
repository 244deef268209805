"""`source-state clean`, the pure part: the stack's cleaning settings and consumers from its outputs, and how
a key's cleaning status is shown. The run itself is s3sqs.cleaning.cleaner; cli.py wires the two."""
from __future__ import annotations

import json

from s3sqs.cleaning.cleaner import Row
from s3sqs.cleaning.rule import Consumer
from s3sqs.config.clean import NAMES, CleanSettings, parse_clean_settings
from s3sqs.core.units import human_bytes, iso

from infra.contract import commit_markers_location
from ops.stack_outputs import StackOutputs
from ops.state import SourceStateError

OUTPUT = "SourceCleaning"
CLEAN_HEADER = f"{'STATUS':<10}  {'WHEN (UTC)':<20}  {'SIZE':>10}  {'URI':<40}  DETAIL"


def settings_of(outputs: StackOutputs) -> tuple[CleanSettings, dict]:
    """The stack's cleaning settings (as cdk.json's sourceCleaning set them) and the rest of its SourceCleaning
    output: the journal location and the notified prefix and suffix."""
    if OUTPUT not in outputs.values:
        raise SourceStateError(f"stack {outputs.stack_name} does not clean its source (no {OUTPUT} output): set "
                               "sourceCleaning.cleanSource to archive or delete in cdk.json and deploy it, or pass "
                               "the outputs file of a stack that does")
    raw = outputs.values[OUTPUT]
    try:
        published = json.loads(raw) if isinstance(raw, str) else dict(raw)
    except (json.JSONDecodeError, TypeError, ValueError) as e:
        raise SourceStateError(f"output {OUTPUT} is not a JSON object: {e}") from None
    for needed in ("journalUri", "eventFilter"):
        if needed not in published:
            raise SourceStateError(f"output {OUTPUT} lacks {needed!r}: re-run `cdk deploy --outputs-file` with the "
                                   "current infra/ code")
    settings = parse_clean_settings({k: v for k, v in published.items() if k in NAMES},
                                    name_of=lambda n: f"output {OUTPUT}'s {n}")
    return settings, published


def consumers_of(outputs: StackOutputs, event_filter: dict) -> list[tuple[Consumer, str]]:
    """Every consumer of the stack, with the prefix and suffix it reads, and where its commit markers are."""
    out = []
    for name in outputs.consumer_names():
        c = outputs.consumer(name)
        if not c.checkpoint_uri:
            raise SourceStateError(f"the outputs file has no checkpointUri for consumer {name!r}: its commit markers "
                                   "cannot be found, so nothing it reads could be cleaned safely")
        prefix = c.prefix or event_filter.get("prefix", "")
        out.append((Consumer(name, prefix, event_filter.get("suffix", "")), commit_markers_location(c.checkpoint_uri)))
    return out


def row_line(r: Row) -> str:
    size = human_bytes(r.size) if r.size is not None else "-"
    return f"{r.status:<10}  {iso(r.at_ms) or '-':<20}  {size:>10}  {f's3://{r.bucket}/{r.key}':<40}  {r.detail}"


def row_json(r: Row) -> str:
    return json.dumps({"uri": f"s3://{r.bucket}/{r.key}", "status": str(r.status), "at": iso(r.at_ms),
                       "size": r.size, "detail": r.detail})
