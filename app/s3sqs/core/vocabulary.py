"""The words the connector decides with, each defined once: file formats, modes, bad-file actions, what
becomes of a file and of a message, and a file's status in the state. StrEnums, so they compare equal to
the strings users type and JSON records hold."""
from __future__ import annotations

from enum import StrEnum


class FileFormat(StrEnum):
    """The formats the source reads, spelled as Spark's readers are (matched case-insensitively)."""
    CSV = "csv"
    JSON = "json"
    PARQUET = "parquet"
    ORC = "orc"
    AVRO = "avro"
    TEXT = "text"
    BINARY_FILE = "binaryFile"
    XML = "xml"


class SchemaEvolution(StrEnum):
    """What a file with columns the schema lacks does to the stream (`schemaEvolutionMode`, Auto Loader's names)."""
    ADD_NEW_COLUMNS = "addNewColumns"      # stop, store the merged schema; the restart reads them
    RESCUE = "rescue"                      # never change; unknown columns go to the rescued-data column
    FAIL_ON_NEW_COLUMNS = "failOnNewColumns"
    NONE = "none"                          # ignore them (counted, and rescued when the column is declared)


class Mode(StrEnum):
    """What a row that does not fit its schema does (CSV and JSON), with Spark's names."""
    PERMISSIVE = "PERMISSIVE"
    DROPMALFORMED = "DROPMALFORMED"
    FAILFAST = "FAILFAST"


class BadFileAction(StrEnum):
    """What a file that cannot be read does to its batch."""
    QUARANTINE = "quarantine"
    FAIL = "fail"


class FileOutcome(StrEnum):
    """What becomes of an announced (or listed) file."""
    NEW = "new"
    DUPLICATE = "duplicate"
    TOO_OLD = "too_old"
    GLOB_MISMATCH = "glob_mismatch"


class MessageFate(StrEnum):
    """What becomes of a received message."""
    NEW = "new"                  # announced at least one new file
    DUPLICATE = "duplicate"      # announced only files already recorded
    FILTERED = "filtered"        # announced only files filtered out (too old, not matching the glob)
    UNPARSEABLE = "unparseable"
    TEST_EVENT = "test_event"    # S3's s3:TestEvent
    NOT_CREATED = "not_created"  # events other than ObjectCreated
    NO_RECORDS = "no_records"


class FileStatus(StrEnum):
    """Where a tracked file stands, in the order it moves through them. The last three are problems a
    committed batch may record for a file (its quarantine record)."""
    PENDING = "pending"
    PLANNED = "planned"
    COMMITTED = "committed"
    QUARANTINED = "quarantined"
    MISSING = "missing"
    MALFORMED_ROWS = "malformed_rows"
    NEW_COLUMNS = "new_columns"  # read, but it has columns the schema lacks (not a problem: the file is in)


class CleanSource(StrEnum):
    """What the stack's source cleaner does with a file every consumer that reads it has committed."""
    OFF = "off"
    ARCHIVE = "archive"  # copy to sourceArchiveLocation, check the copy, then delete the original
    DELETE = "delete"


class CleanStatus(StrEnum):
    """Where a committed file stands with the source cleaner (source-state clean)."""
    WAITING = "waiting"          # a consumer whose filters match it has not committed it yet
    RETENTION = "retention"      # every matching consumer has; the retention has not passed since the last
    DUE = "due"                  # to be archived or deleted now
    ARCHIVED = "archived"
    DELETED = "deleted"
    CHANGED = "changed"          # its eTag or size is not what the consumers committed: left alone
    GONE = "gone"                # no longer in the source, and not cleaned by the cleaner
    UNMATCHED = "unmatched"      # no consumer of the stack reads its key any more: left alone
    FAILED = "failed"            # the copy or the delete failed this run; the next run tries again


PROBLEM_STATUSES = (FileStatus.QUARANTINED, FileStatus.MISSING, FileStatus.MALFORMED_ROWS)


def names(enum) -> str:
    """'a, b, c': the values of an enum, for messages."""
    return ", ".join(m.value for m in enum)
