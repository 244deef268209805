"""onboard-account: grant (or revoke) a consumer in another AWS account access to the source data.

policy.py builds and merges policy statements and request.py validates what was asked (both pure),
aws.py reads and writes the resource policies, cli.py reads the command line and prints the plan.
"""
from ops.errors import OperatorError


class OnboardError(OperatorError):
    """A problem the operator must fix; the message says what and how."""


class ConcurrentEditError(OnboardError):
    """Someone else kept changing a policy while it was being updated; nothing of theirs was dropped."""
