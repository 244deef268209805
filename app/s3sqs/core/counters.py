"""The source's cumulative counters: one schema for the code that counts (the driver, into the index's
stats, saved with every snapshot) and the code that reads them (the job's metrics, source-state).

Files are counted under their outcome's name (`FileOutcome`), messages under `messages_<fate>`
(`MessageFate`), SQS calls under `sqs_calls_<API name>`; everything else is a `Stat`.
"""
from __future__ import annotations

from enum import StrEnum

from .vocabulary import FileOutcome, MessageFate


class Stat(StrEnum):
    LISTED = "listed"                        # files the backfill listed
    LISTED_NEW = "listed_new"                # ... of which new
    REPROCESSED = "reprocessed"              # files re-queued by a reprocess run
    PLANS = "plans"                          # offset calls that planned a batch
    PLAN_MS = "plan_ms"                      # time spent planning
    SNAPSHOTS = "snapshots"                  # durable state versions written
    SNAPSHOT_MS = "snapshot_ms"
    SNAPSHOT_BYTES = "snapshot_bytes"
    MESSAGES_NOT_DELETED = "messages_not_deleted"
    FILES_QUARANTINED = "files_quarantined"  # recorded when their batch commits
    FILES_MISSING = "files_missing"
    ROWS_MALFORMED = "rows_malformed"


def files(outcome: FileOutcome) -> str:
    return outcome.value


def messages(fate: MessageFate) -> str:
    return f"messages_{fate.value}"


def sqs_calls(api: str) -> str:
    return f"sqs_calls_{api}"


# What the job's metrics report, by the counters behind each figure.
DUPLICATES = (files(FileOutcome.DUPLICATE),)
FILTERED = (files(FileOutcome.TOO_OLD), files(FileOutcome.GLOB_MISMATCH))
UNPARSEABLE = (messages(MessageFate.UNPARSEABLE),)
