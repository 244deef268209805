"""The package-job command line: build dist/ for the EMR application's Python and CPU, then show what was built."""
from __future__ import annotations

import argparse
from pathlib import Path

from ops import cli
from ops.packaging.build import DEFAULT_DIST, DEFAULT_WHEEL_CACHE, build, report
from ops.packaging.target import ARCHES, DEFAULT_GLIBC, DEFAULT_PYTHON_HOME, PYTHON_VERSIONS, Target

PROG = "package-job"


def parser() -> argparse.ArgumentParser:
    p = cli.parser(PROG, "Build the EMR Serverless artifacts (entry point, connector, dependency archive) into dist/.")
    p.add_argument("--python", default="3.11", type=cli.choice("a runtime Python", PYTHON_VERSIONS),
                   metavar="{" + ",".join(PYTHON_VERSIONS) + "}", help="the runtime's Python (default 3.11)")
    p.add_argument("--arch", default="x86_64", type=cli.choice("a CPU architecture", ARCHES, fold=str.lower),
                   metavar="{" + ",".join(ARCHES) + "}",
                   help="the EMR application's CPU: x86_64 (X86_64) or aarch64 (ARM64); default x86_64")
    p.add_argument("--python-home", default=DEFAULT_PYTHON_HOME,
                   help="directory holding pythonX.Y on the runtime image (default /usr/bin)")
    p.add_argument("--glibc", default=DEFAULT_GLIBC, help="newest glibc the runtime has (default 2.34, AL2023)")
    p.add_argument("--dist", type=Path, default=DEFAULT_DIST, help="output directory (default dist/)")
    p.add_argument("--transform-module", type=Path, action="append", default=[], metavar="PATH",
                   help="the module of the job's --transform (a .py file or a package folder), shipped inside the "
                        "connector archive; repeatable")
    p.add_argument("--wheel-cache", type=Path, default=DEFAULT_WHEEL_CACHE,
                   help="downloaded wheels are kept here (default build/wheel-cache/)")
    cli.add_debug_arg(p)
    return p


def _command(args) -> int:
    result = build(Target(args.python, args.arch, args.glibc, args.python_home), args.dist, args.wheel_cache,
                   transform_modules=tuple(args.transform_module))
    print(report(result))
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    return cli.run(PROG, lambda: _command(args), debug=args.debug,
                   interrupted="half-written files keep a .partial name; run package-job again")
