"""submit-job and job-runs: run the packaged job on the stack's EMR Serverless application, and follow it.

request.py builds the StartJobRun request and runs.py reads job runs (both pure), aws.py makes the S3 and
EMR Serverless calls, cli.py holds the two command lines.
"""
from ops.errors import OperatorError


class SubmitError(OperatorError):
    """A problem the operator can fix; printed without a traceback."""
