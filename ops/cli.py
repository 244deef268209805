"""What every operator command line shares: its common flags, argument types and the way it ends.

Each tool's cli.py builds its parser from these and runs its command through `run`, so all of them
report a problem alike: one line on stderr, no traceback, and the tool's documented exit code.
"""
from __future__ import annotations

import argparse
import sys
from typing import Callable

from botocore.exceptions import BotoCoreError, ClientError

from ops.errors import OperatorError
from ops.stack_outputs import StackOutputs, load_outputs

DEFAULT_OUTPUTS_FILE = "cdk-outputs.json"
INTERRUPTED = 130  # what a shell reports for a command stopped by Ctrl-C (128 + SIGINT)


# ---------------------------------------------------------------- common flags

def add_stack_args(p: argparse.ArgumentParser, *, outputs_default: str | None = DEFAULT_OUTPUTS_FILE,
                   outputs_help: str = "`cdk deploy --outputs-file` JSON") -> None:
    """--outputs-file and --stack: where the stack's ids and ARNs come from, so nobody copies them by hand."""
    default = f" (default {outputs_default})" if outputs_default else ""
    p.add_argument("--outputs-file", default=outputs_default, metavar="FILE", help=outputs_help + default)
    p.add_argument("--stack", metavar="NAME", help="stack in the outputs file, when it holds several")


def add_aws_args(p: argparse.ArgumentParser) -> None:
    """--region and --endpoint-url: which AWS, or which local stand-in for it."""
    p.add_argument("--region", metavar="REGION", help="AWS region (default: AWS_REGION or the profile's)")
    p.add_argument("--endpoint-url", metavar="URL", help="AWS API endpoint, e.g. a local moto server")


def add_consumer_arg(p: argparse.ArgumentParser, *, required: bool = False,
                     help: str = "consumer name, as in the stack's Consumers output") -> None:
    p.add_argument("--consumer", metavar="NAME", required=required, help=help)


def stack_outputs(args: argparse.Namespace) -> StackOutputs | None:
    """The stack outputs that --outputs-file and --stack name; None when a tool's optional --outputs-file is
    not given."""
    if not args.outputs_file:
        if args.stack:
            raise OperatorError("--stack needs --outputs-file")
        return None
    return load_outputs(args.outputs_file, args.stack)


# ---------------------------------------------------------------- argument types (argparse reports their errors)

def positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be at least 1")
    return v


def positive_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not v > 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be greater than 0")
    return v


def comma_list(text: str) -> tuple[str, ...]:
    """"a, b,,c" -> ("a", "b", "c")."""
    return tuple(item.strip() for item in text.split(",") if item.strip())


# ---------------------------------------------------------------- how a command ends

def say(msg: str) -> None:
    """Progress and diagnostics go to stderr, so stdout carries only results (RUN=$(scripts/submit-job ...))."""
    print(msg, file=sys.stderr, flush=True)


def run(prog: str, command: Callable[[], int], *, error_exit: int, interrupted: str) -> int:
    """Run one command and return its exit code.

    A problem the operator can act on (an OperatorError, or an error AWS answered with) ends it with one
    line on stderr and `error_exit`, the code the tool documents for it; Ctrl-C ends it with
    `interrupted`, which says what state it leaves, and 130. Anything else is a bug and keeps its traceback.
    """
    try:
        return command()
    except OperatorError as e:
        say(f"{prog}: error: {e}")
        return error_exit
    except (BotoCoreError, ClientError) as e:  # AWS's own message names the call and the reason
        say(f"{prog}: AWS error: {e}")
        return error_exit
    except KeyboardInterrupt:
        say(f"{prog}: interrupted; {interrupted}")
        return INTERRUPTED
