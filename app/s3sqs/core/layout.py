"""Where everything the job and the stack keep lives: every folder and object name, in one place that the
source, the state, the cleaner, the stack (infra/contract.py) and the operator tools import.

    checkpoint bucket (the stack's; any folder or bucket for a query of the source)
    checkpoints/<consumer>/              the job's --checkpoint: Spark's own offsets/, commits/, sources/
        source-state/                    the source's state location (stateLocation)
            versions/<n>.json            a snapshot of the file index: its manifest, the commit point
            versions/<n>/<file>          the snapshot's small RocksDB files
            sst/<file>                   its immutable SST files, each uploaded once
            committed/<last seq>.json    commit markers: the files of committed batches, for the cleaner
        quarantine/                      quarantineLocation
            batches/<end seq>/<seq>.json what became of each file not read cleanly, by batch
            files/<seq>-<name>           the quarantined copies
        _schemas/                        schemaLocation: versions/<n>.json, proposals/<seq>.json
    output/<consumer>/                   the sink's default location
    source-cleaning/                     the source cleaner's journal
    artifacts bucket (the stack's)
    jobs/<consumer>/                     submit-job's uploads: the job's code and packed environment
    emr-logs/<consumer>/                 EMR Serverless's job logs

No imports: the executors, Spark's planners and the CDK app all read it.
"""
from __future__ import annotations

# --- below a checkpoint (the job's defaults for the source's locations) ---
STATE_DIR = "source-state"
QUARANTINE_DIR = "quarantine"
SCHEMA_DIR = "_schemas"
SPARK_COMMITS_DIR = "commits"          # Spark's own: a batch's commit in its checkpoint

# --- below the state location ---
SNAPSHOT_VERSIONS_DIR = "versions"
SST_DIR = "sst"
MARKER_DIR = "committed"

# --- below the quarantine location ---
QUARANTINE_BATCHES_DIR = "batches"
QUARANTINE_FILES_DIR = "files"

# --- below the schema location ---
SCHEMA_VERSIONS_DIR = "versions"
SCHEMA_PROPOSALS_DIR = "proposals"

# --- the stack's buckets: each consumer's prefixes ---
CHECKPOINTS_PREFIX = "checkpoints/"
OUTPUT_PREFIX = "output/"
SOURCE_CLEANING_PREFIX = "source-cleaning/"
JOB_ARTIFACTS_PREFIX = "jobs/"
EMR_LOGS_PREFIX = "emr-logs/"


def state_location(checkpoint: str) -> str:
    return f"{checkpoint.rstrip('/')}/{STATE_DIR}"


def quarantine_location(base: str) -> str:
    """The quarantine below a checkpoint (the job's default) or a state location (the source's)."""
    return f"{base.rstrip('/')}/{QUARANTINE_DIR}"


def schema_location(checkpoint: str) -> str:
    return f"{checkpoint.rstrip('/')}/{SCHEMA_DIR}"


def checkpoint_prefix(consumer: str) -> str:
    return f"{CHECKPOINTS_PREFIX}{consumer}/"


def output_prefix(consumer: str) -> str:
    return f"{OUTPUT_PREFIX}{consumer}/"


def commit_markers_prefix(consumer: str) -> str:
    """Where a consumer's job writes its commit markers in the stack's checkpoint bucket; the source cleaner
    reads them there, and nothing else of its state."""
    return f"{checkpoint_prefix(consumer)}{STATE_DIR}/{MARKER_DIR}/"


def job_artifacts_prefix(consumer: str) -> str:
    return f"{JOB_ARTIFACTS_PREFIX}{consumer}/"


def emr_logs_prefix(consumer: str) -> str:
    return f"{EMR_LOGS_PREFIX}{consumer}/"
