"""compact-table: combine a Delta or Iceberg table's small files, safely while the stream runs.

The decisions (which files to combine) are pure, in s3sqs.sinks.compaction; the table reads and commits are
the sinks' own, in s3sqs.sinks.delta and s3sqs.sinks.iceberg; cli.py is the command line.
"""
from ops.errors import OperatorError


class CompactionError(OperatorError):
    """A problem the operator can fix; printed without a traceback."""
