"""redrive-dlq: look into a dead-letter queue and send its messages back.

dlq.py decides (pure: decoding, matching, grouping, pacing, reports), aws.py makes the SQS calls,
cli.py reads the command line and prints the outcome.
"""
from ops.errors import OperatorError


class RedriveError(OperatorError):
    """A problem the operator must fix; the message says what and how."""
