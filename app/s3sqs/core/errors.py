"""The one error root of the connector, and the exit codes every command line shares (the job and the
operator tools in ops/).

A `UsageError` is something to fix before anything runs (a flag, an option, a schema, a setting): its
message is one line that names the culprit and the fix, and a command line ends with EXIT_USAGE.
"""
from __future__ import annotations

EXIT_OK = 0
EXIT_NOT_DONE = 1      # the command ran and did not succeed: a failed query, a failed run, an unfinished redrive
EXIT_USAGE = 2         # a problem to fix before anything ran (argparse uses 2 for bad command lines too)
EXIT_INTERRUPTED = 130  # what a shell reports for a command stopped by Ctrl-C (128 + SIGINT)


class S3SqsError(Exception):
    """Root of every error this project raises on purpose."""


class UsageError(S3SqsError, ValueError):
    """A flag, option, schema or setting is wrong; the message names it and says how to fix it."""


class StateError(S3SqsError, RuntimeError):
    """The durable state is missing or inconsistent; the message says what and where."""


class FileReadError(S3SqsError, RuntimeError):
    """A file could not be read or does not fit the schema; the message names the file and the fix."""


class NewColumnsFound(FileReadError):
    """A file has columns the stream's schema lacks, and schemaEvolutionMode says to stop (addNewColumns,
    failOnNewColumns). Its name is what the job looks for in a failed query to restart it."""
