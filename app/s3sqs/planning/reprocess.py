"""Reprocessing: a run with reprocessStartBatchId/reprocessEndBatchId re-queues the files of those planned
batches under new dedup keys (core.files.reprocess_key), once per range, and reads no new messages; with
reprocessDryRun it lists them instead. The job lists them before Spark starts (`dry_run`); a query of the
source itself lists them in its log and stops with ReprocessDryRunComplete."""
from __future__ import annotations

import logging

from ..config.source_options import SourceOptions
from ..core.counters import Stat
from ..core.errors import S3SqsError
from ..core.files import reprocess_key
from ..state.keys import u64
from .ledger import Ledger

log = logging.getLogger("s3sqs")


class ReprocessDryRunComplete(S3SqsError):
    """Raised to stop a query of the source after a reprocess dry run has listed its files."""


def dry_run_summary(first: int, last: int, files: list) -> str:
    return f"reprocess dry run: batches {first}..{last} hold {len(files)} files"


def dry_run(opts: SourceOptions) -> int:
    """The job's dry run: list the files a reprocess would ingest again, from the durable state, without Spark."""
    from ..core import aws
    from ..state.snapshots import Snapshots, private_copy
    from ..state.store import open_store

    first, last = opts.reprocess_start_batch_id, opts.reprocess_end_batch_id
    with private_copy(Snapshots(open_store(opts.state_location, aws.lazy_client("s3", opts.endpoint)))) as index:
        files = index.files_of_batches(first, last)
    for f in files:
        print(f"{f.seq}\t{f.uri}\t{f.size if f.size is not None else '-'} bytes")
    print(f"[job] {dry_run_summary(first, last, files)}; run without reprocessDryRun to ingest them again",
          flush=True)
    return 0


def marker(first: int, last: int) -> str:
    return f"reprocess:{first}-{last}"


def requeue(opts: SourceOptions, ledger: Ledger) -> None:
    first, last = opts.reprocess_start_batch_id, opts.reprocess_end_batch_id
    with ledger.lock:
        records = ledger.index.files_of_batches(first, last)
        if opts.reprocess_dry_run:
            for r in records:
                log.warning("s3-sqs reprocess dry run: %s\t%s bytes", r.uri, r.size)
            shown = ", ".join(r.uri for r in records[:5]) + (" ..." if len(records) > 5 else "")
            raise ReprocessDryRunComplete(f"{dry_run_summary(first, last, records)} ({shown}); set "
                                          "reprocessDryRun=false to ingest them again")
        m = marker(first, last)
        if ledger.index.meta(m) is not None:
            log.warning("s3-sqs: batches %d..%d were already re-queued; remove the reprocess options to go on "
                        "with new data", first, last)
            return
        ledger.record([(reprocess_key(r, m), r) for r in records], {Stat.REPROCESSED: len(records)}, {m: u64(1)})
    log.warning("s3-sqs: re-queued %d files of batches %d..%d; this run reads no new messages",
                len(records), first, last)
