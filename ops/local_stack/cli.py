"""The local-stack command line: `start` and `stop` (what `make local-stack` and `make local-stack-stop` run)."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from ops import cli
from ops.local_stack import stack

PROG = "local-stack"


def parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    common.add_argument("--state-dir", type=Path, default=stack.DEFAULT_STATE_DIR, metavar="DIR",
                        help=f"where the server's PID, log and env file live (default {stack.DEFAULT_STATE_DIR})")
    cli.add_debug_arg(common)
    p = cli.parser(PROG, "A local moto server with the stack's wiring and its cdk-outputs.json, to try every "
                         "operator script on.")
    sub = p.add_subparsers(dest="command", required=True, metavar="{start,stop}")
    start = sub.add_parser("start", parents=[common], allow_abbrev=False,
                           help="start the server, build the stack's wiring on it, write the outputs file")
    start.add_argument("--port", type=cli.positive_int, default=stack.DEFAULT_PORT, metavar="N",
                       help=f"port on 127.0.0.1 (default {stack.DEFAULT_PORT})")
    start.add_argument("--outputs-file", type=Path, default=Path(cli.DEFAULT_OUTPUTS_FILE), metavar="FILE",
                       help=f"where to write the stack outputs (default {cli.DEFAULT_OUTPUTS_FILE}); an existing "
                            "file that is not a local stack's is never overwritten")
    sub.add_parser("stop", parents=[common], allow_abbrev=False,
                   help="stop the server by its recorded PID and remove the outputs file it wrote")
    return p


def _command(args) -> int:
    if args.command == "stop":
        stack.stop(args.state_dir, log=cli.say)
        return 0
    outputs = stack.start(args.port, args.outputs_file, args.state_dir, log=cli.say)
    endpoint = f"http://127.0.0.1:{args.port}"
    print("\n".join([
        f"local stack on {endpoint}: consumers {', '.join(sorted(json.loads(outputs['Consumers'])))}; "
        f"outputs in {args.outputs_file}",
        f"try the scripts with its fake credentials and endpoint:  source {args.state_dir / 'env'}",
        f"  {cli.command('job-runs')} list",
        f"  {cli.command('redrive-dlq')} inspect --consumer {sorted(json.loads(outputs['Consumers']))[0]}",
        f"stop it with:  make local-stack-stop  (or {cli.command('local-stack')} stop --state-dir {args.state_dir})",
    ]))
    return 0


def main(argv: list[str] | None = None) -> int:
    args = cli.parse_args(parser(), argv)
    return cli.run(PROG, lambda: _command(args), debug=args.debug,
                   interrupted="run `make local-stack-stop` to end anything already started")
