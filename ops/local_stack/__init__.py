"""local-stack (`make local-stack`): a moto server that outlives the command, holding the stack's wiring, and the
cdk-outputs.json a `cdk deploy --outputs-file` would write, so every operator script can be tried locally.

stack.py starts and stops it (the server process, the wiring, the files it leaves), cli.py is the command line.
"""
from ops.errors import OperatorError


class LocalStackError(OperatorError):
    """The local stack cannot be started or stopped as asked; the message says why and what to do."""
