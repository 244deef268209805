"""source-state: what a checkpoint's source state holds, read-only and safe while the job runs; and
`clean`, the stack's source cleaner.

s3sqs.state.view reads the state (pure once it is open); show.py turns what it reads into lines and JSON
and reads --since (pure); clean.py reads the stack's cleaning settings and consumers from its outputs and
shows a file's cleaning status (pure); cli.py resolves the locations, opens the state (or runs
s3sqs.cleaning) and prints.
"""
from ops.errors import OperatorError


class SourceStateError(OperatorError):
    """A problem the operator can fix; the message says what and how."""
