"""The one error type every operator tool raises for a problem the operator can fix."""
from __future__ import annotations

from s3sqs.core.errors import UsageError


class OperatorError(UsageError):
    """Something the operator can fix: the message says what, and which flag or value to change.

    The command lines print it as one line, without a traceback (ops/cli.py); each tool has its own
    subclass, so a caller can still tell them apart.
    """
