"""The stack's scheduled source cleaner: the AWS Lambda handler that runs one cleaning run, acting on what is
due, on cdk.json's `sourceCleaning.schedule`.

The stack builds its whole configuration at synth time and hands it over in one environment variable
(`S3SQS_CLEANER`, JSON): the three settings, the source bucket, each consumer with the prefix and suffix it
reads and where its commit markers are, and the journal. The function runs as the stack's one cleaner role.
A run stops taking new keys a minute before Lambda's time limit; the next run takes up the rest. What it did
goes to its log (one line a status) and is returned, so a failed or partial run shows in the function's
metrics and logs.
"""
from __future__ import annotations

import json
import logging
import os
import time
from dataclasses import dataclass
from typing import Any, Mapping

from ..config.clean import CleanSettings, parse_clean_settings
from ..core.errors import UsageError
from ..state.store import open_store
from .cleaner import Cleaner, ConsumerMarkers, summary
from .rule import Consumer

ENV = "S3SQS_CLEANER"
MARGIN_SECONDS = 60  # left of Lambda's time when the run stops taking new keys

log = logging.getLogger("s3sqs.cleaning")


@dataclass(frozen=True)
class ScheduledConfig:
    settings: CleanSettings
    source_bucket: str
    consumers: tuple[tuple[Consumer, str], ...]  # each consumer, and the location of its commit markers
    journal: str


def config_json(settings: CleanSettings, source_bucket: str, consumers: list[tuple[Consumer, str]],
                journal: str) -> dict:
    """What the stack puts in S3SQS_CLEANER (values may be CloudFormation tokens at synth time)."""
    return {"settings": settings.as_settings(), "sourceBucket": source_bucket, "journal": journal,
            "consumers": [{"name": c.name, "prefix": c.prefix, "suffix": c.suffix, "markers": where}
                          for c, where in consumers]}


def parse_config(raw: Mapping[str, Any]) -> ScheduledConfig:
    """S3SQS_CLEANER's value, checked: a wrong one (a hand-edited function) fails the run, naming what is wrong."""
    try:
        consumers = tuple((Consumer(str(c["name"]), str(c["prefix"]), str(c["suffix"])), str(c["markers"]))
                          for c in raw["consumers"])
        settings = parse_clean_settings(raw["settings"], name_of=lambda n: f"{ENV}'s settings.{n}")
        config = ScheduledConfig(settings, str(raw["sourceBucket"]), consumers, str(raw["journal"]))
    except (KeyError, TypeError) as e:
        raise UsageError(f"{ENV} lacks {e} or has the wrong shape; deploy the stack again to rewrite it") from None
    if not config.settings.enabled or not config.consumers:
        raise UsageError(f"{ENV}: cleaning is off or there are no consumers; the stack defines this function only "
                         "when sourceCleaning is on")
    return config


def handler(event: Any, context: Any) -> dict:
    """One run with --apply: every committed file judged, what is due archived or deleted."""
    logging.getLogger().setLevel(logging.INFO)
    import boto3

    config = parse_config(json.loads(os.environ[ENV]))
    s3 = boto3.client("s3")
    cleaner = Cleaner(s3, config.settings, config.source_bucket,
                      [ConsumerMarkers(c, open_store(where, lambda: s3)) for c, where in config.consumers],
                      open_store(config.journal, lambda: s3), progress=log.info, progress_seconds=30)
    remaining = context.get_remaining_time_in_millis() / 1000 if context is not None else 900
    counts = cleaner.run(True, until=time.monotonic() + max(0.0, remaining - MARGIN_SECONDS))
    log.info("source cleaning of s3://%s: %s committed files: %s", config.source_bucket,
             f"{sum(counts.values()):,}", summary(counts))
    return {str(status): n for status, n in counts.items()}
