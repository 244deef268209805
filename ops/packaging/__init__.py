"""package-job: build what an EMR Serverless job run needs into dist/, without Docker.

target.py decides what is built for a runtime (pure), build.py downloads wheels and writes the archives,
lock.py pins every dependency, cli.py is the command line. submit-job reads the result through
build.load_manifest.
"""
from ops.errors import OperatorError


class PackagingError(OperatorError):
    """Something the user can fix: wrong inputs, missing wheels, inconsistent pins."""
