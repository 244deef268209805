"""What every operator command line shares: its parser, common flags, argument types and the way it ends.

The conventions (docs/operations.md, "Command-line conventions") live here so that each tool's cli.py
cannot drift from them:

- a command that changes AWS previews by default; `--apply` acts, `--dry-run` says "preview" explicitly;
- `--outputs-file` (default cdk-outputs.json) and `--stack` say where the stack's ids come from;
  `--region` and `--endpoint-url` which AWS; `--debug` shows the traceback of an error;
- a URL flag ends in `-url`, a file flag in `-file`, a count of items is `--limit N`;
- flags are spelled out (no abbreviations), enum values are checked with a did-you-mean;
- exit codes: 0 done, 1 ran but did not succeed (a failed run, an unfinished redrive), 2 a problem to fix
  before anything ran (one line on stderr, no traceback), 130 interrupted.
"""
from __future__ import annotations

import argparse
import os
import shlex
import sys
import traceback
from pathlib import Path
from typing import Callable

from botocore.exceptions import BotoCoreError, ClientError, EndpointConnectionError, NoCredentialsError

from s3sqs.core.errors import EXIT_INTERRUPTED as INTERRUPTED
from s3sqs.core.errors import EXIT_NOT_DONE as NOT_DONE
from s3sqs.core.errors import EXIT_USAGE as ERROR_EXIT
from s3sqs.core.errors import UsageError
from s3sqs.job.flags import choice, comma_list, positive_int  # noqa: F401  (the argument types every tool uses)

from ops.stack_outputs import OutputsError, StackOutputs, load_outputs

DEFAULT_OUTPUTS_FILE = "cdk-outputs.json"


# ---------------------------------------------------------------- parsers and common flags

def parser(prog: str, description: str, **kwargs) -> argparse.ArgumentParser:
    """A tool's parser. Abbreviations are off: `--max` must not silently mean `--max-failed-attempts-per-hour`,
    and a retired flag must not match the start of its replacement."""
    return argparse.ArgumentParser(prog=prog, description=description, allow_abbrev=False, **kwargs)


def add_debug_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--debug", action="store_true", help="on an error, show its traceback too")


def add_stack_args(p: argparse.ArgumentParser, *, used_for: str = "") -> None:
    """--outputs-file and --stack: where the stack's ids and ARNs come from, so nobody copies them by hand.

    Left out, --outputs-file is cdk-outputs.json; tools that can work without the file read it only when
    they need something from it (`used_for` says when).
    """
    when = f"; read {used_for}" if used_for else ""
    p.add_argument("--outputs-file", metavar="FILE",
                   help=f"`cdk deploy --outputs-file` JSON (default {DEFAULT_OUTPUTS_FILE}{when})")
    p.add_argument("--stack", metavar="NAME", help="stack in the outputs file, when it holds several")


def add_aws_args(p: argparse.ArgumentParser) -> None:
    """--profile, --region and --endpoint-url: whose credentials, which AWS, or which local stand-in for it."""
    p.add_argument("--profile", metavar="NAME",
                   help="AWS profile to use (default: AWS_PROFILE, or the default credential chain)")
    p.add_argument("--region", metavar="REGION",
                   help="AWS region (default: the stack's Region output when the outputs file is read, else "
                        "AWS_REGION or the profile's)")
    p.add_argument("--endpoint-url", metavar="URL",
                   help="AWS API endpoint, e.g. the local stack's http://127.0.0.1:5000")


def add_json_arg(p: argparse.ArgumentParser, *, what: str = "one JSON object") -> None:
    """--json: what a read command prints, for scripts (`| jq`)."""
    p.add_argument("--json", action="store_true", help=f"print {what} instead of text")


def parse_args(p: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace:
    """Parse, then apply --profile to every AWS client this process makes (boto3, and the table libraries,
    read AWS_PROFILE), so no call can use other credentials than the ones named."""
    args = p.parse_args(argv)
    if getattr(args, "profile", None):
        os.environ["AWS_PROFILE"] = args.profile
    return args


def add_consumer_arg(p: argparse.ArgumentParser, *, required: bool = False,
                     help: str = "consumer name, as in the stack's Consumers output") -> None:
    p.add_argument("--consumer", metavar="NAME", required=required, help=help)


def add_apply_args(p: argparse.ArgumentParser, *, act: str) -> None:
    """The one way to choose between a preview and the real thing: --apply acts, anything else previews."""
    g = p.add_mutually_exclusive_group()
    g.add_argument("--apply", action="store_true", help=f"{act} (without it, only show what would be done)")
    g.add_argument("--dry-run", action="store_true", help="show what would be done and change nothing (the default)")


def add_limit_arg(p: argparse.ArgumentParser, *, what: str, default: int | None = None) -> None:
    """--limit N: the one name for "at most this many"."""
    shown = f" (default {default})" if default is not None else " (default: all)"
    p.add_argument("--limit", type=positive_int, default=default, metavar="N", help=f"at most N {what}{shown}")


class _Retired(argparse.Action):
    def __init__(self, option_strings, dest, message: str = "", **kwargs):
        self.message = message
        super().__init__(option_strings, dest, nargs="?", help=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        parser.error(f"{option_string} is retired: {self.message}")


def retire(p: argparse.ArgumentParser, flag: str, message: str) -> None:
    """Keep a renamed flag as a clear error (not an unknown-flag message, and never a prefix of another)."""
    p.add_argument(flag, action=_Retired, dest=f"_retired_{flag.strip('-').replace('-', '_')}", message=message)


def stack_outputs(args: argparse.Namespace, *, needed_for: str | None = "") -> StackOutputs | None:
    """The stack outputs --outputs-file (default cdk-outputs.json) and --stack name.

    `needed_for` says what the tool takes from them, for the message when the default file is missing ("":
    the tool always needs them). None means the tool has what it needs from other flags: then the file is read
    only when --outputs-file or --stack was given, and otherwise None is returned.
    """
    if needed_for is None and not args.outputs_file and not args.stack:
        return None
    path = args.outputs_file or DEFAULT_OUTPUTS_FILE
    if needed_for and not args.outputs_file and not Path(path).is_file():
        raise OutputsError(f"{needed_for} comes from the stack outputs, but {path} (the default --outputs-file) "
                           "does not exist: pass --outputs-file FILE, or give the value by its flag")
    outputs = load_outputs(path, args.stack)
    if hasattr(args, "region"):
        args.region = stack_region(args.region, outputs, path)
    return outputs


def stack_region(given: str | None, outputs: StackOutputs, path: str) -> str | None:
    """The region to call for this stack: its `Region` output. A --region that names another region is refused
    (every id in the file lives in the stack's region); outputs without one leave the choice to --region or the
    environment, as before."""
    stack = outputs.values.get("Region")
    if not stack:
        return given
    if given and given != stack:
        raise OutputsError(f"--region {given}, but stack {outputs.stack_name} in {path} is in {stack}: leave "
                           f"--region out (the stack's region is used), or pass the outputs file of the stack "
                           f"deployed in {given}")
    from ops.aws import configured_region

    configured = configured_region()
    if configured and configured != stack:
        say(f"note: using region {stack} from {path} (the environment says {configured})")
    return stack


def passthrough(args: argparse.Namespace) -> list[str]:
    """The stack and AWS flags this command was given, to repeat in a command it suggests next."""
    flags: list[str] = []
    for name in ("outputs_file", "stack", "region", "endpoint_url"):
        value = getattr(args, name, None)
        if value:
            flags += ["--" + name.replace("_", "-"), str(value)]
    return flags


# ---------------------------------------------------------------- argument types (argparse reports their errors)

def positive_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not v > 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be greater than 0")
    return v


# ---------------------------------------------------------------- how a command ends

TOOLS = ("package-job", "submit-job", "job-runs", "onboard-account", "redrive-dlq", "local-stack",
         "compact-table", "source-state")


def command(name: str) -> str:
    """How to run the sibling tool `name` as printed: from the folder this tool was run from when it was run by
    path (.venv/bin/submit-job -> .venv/bin/job-runs), else by its bare name (on PATH with the venv active)."""
    me = sys.argv[0] if sys.argv else ""
    folder, base = os.path.split(me)
    return os.path.join(folder, name) if folder and base in TOOLS else name


def command_line(name: str, *args: str) -> str:
    """The sibling tool `name` with its arguments, quoted for the shell: a hint that runs as printed."""
    return " ".join([command(name), *map(shlex.quote, args)])


def say(msg: str) -> None:
    """Progress and diagnostics go to stderr, so stdout carries only results (RUN=$(submit-job ...))."""
    print(msg, file=sys.stderr, flush=True)


def aws_problem(e: BaseException) -> str:
    """One line for an error botocore raised, with the fix where there is an obvious one."""
    if isinstance(e, NoCredentialsError):
        return ("error: no AWS credentials found: set AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY "
                "(for the local stack: source .local-stack/env)")
    if isinstance(e, EndpointConnectionError):
        return f"error: {e}: check --endpoint-url and --region (for the local stack: is `make local-stack` running?)"
    return f"AWS error: {e}"  # AWS's own message names the call and the reason


def run(prog: str, command: Callable[[], int], *, interrupted: str, debug: bool = False) -> int:
    """Run one command and return its exit code.

    A problem the operator can act on (an OperatorError, or an error AWS answered with) ends it with one
    line on stderr and exit code 2 (with --debug, after its traceback); Ctrl-C ends it with `interrupted`,
    which says what state it leaves, and 130. Anything else is a bug and keeps its traceback.
    """
    try:
        return command()
    except UsageError as e:  # an OperatorError, or a setting the connector refused (s3sqs.core.errors)
        _debug(debug)
        say(f"{prog}: error: {e}")
        return ERROR_EXIT
    except (BotoCoreError, ClientError) as e:
        _debug(debug)
        say(f"{prog}: {aws_problem(e)}")
        return ERROR_EXIT
    except KeyboardInterrupt:
        _debug(debug)
        say(f"{prog}: interrupted; {interrupted}")
        return INTERRUPTED


def _debug(enabled: bool) -> None:
    if enabled:
        traceback.print_exc(file=sys.stderr)
