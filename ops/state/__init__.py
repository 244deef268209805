"""source-state: what a checkpoint's source state holds, read-only and safe while the job runs.

s3sqs.state.view reads the state (pure once it is open); show.py turns what it reads into lines and JSON
and reads --since (pure); cli.py resolves the locations, opens the state and prints.
"""
from ops.errors import OperatorError


class SourceStateError(OperatorError):
    """A problem the operator can fix; the message says what and how."""
