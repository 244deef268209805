"""The package-job command line: build dist/ for the EMR application's Python and CPU, then show what was built."""
from __future__ import annotations

import argparse
from pathlib import Path

from ops import cli
from ops.packaging.build import DEFAULT_COMPRESS_LEVEL, DEFAULT_DIST, DEFAULT_WHEEL_CACHE, build, report
from ops.packaging.target import ARCHES, DEFAULT_GLIBC, DEFAULT_PYTHON_HOME, EMR_ARCHES, PYTHON_VERSIONS, Target, arch_for

PROG = "package-job"


def parser() -> argparse.ArgumentParser:
    p = cli.parser(PROG, "Build the EMR Serverless artifacts (entry point, connector, dependency archive) into dist/.")
    p.add_argument("--python", default="3.11", type=cli.choice("a runtime Python", PYTHON_VERSIONS),
                   metavar="{" + ",".join(PYTHON_VERSIONS) + "}", help="the runtime's Python (default 3.11)")
    p.add_argument("--arch", type=_arch, metavar="{" + ",".join(ARCHES) + "}",
                   help="the EMR application's CPU: x86_64 (X86_64) or aarch64 (ARM64), either spelling; default: "
                        "the stack's EmrArchitecture output when the outputs file exists, else x86_64")
    cli.add_stack_args(p, used_for="for the application's EmrArchitecture when --arch is left out")
    p.add_argument("--python-home", default=DEFAULT_PYTHON_HOME,
                   help="directory holding pythonX.Y on the runtime image (default /usr/bin)")
    p.add_argument("--glibc", default=DEFAULT_GLIBC, help="newest glibc the runtime has (default 2.34, AL2023)")
    p.add_argument("--dist", type=Path, default=DEFAULT_DIST, help="output directory (default dist/)")
    p.add_argument("--transform-module", type=Path, action="append", default=[], metavar="PATH",
                   help="the module of the job's --transform (a .py file or a package folder), shipped inside the "
                        "connector archive; repeatable")
    p.add_argument("--compress-level", type=_level, default=DEFAULT_COMPRESS_LEVEL, metavar="{1..9}",
                   help=f"gzip level of the environment archive (default {DEFAULT_COMPRESS_LEVEL}); 1 writes it in "
                        "about half the time, some 12%% bigger, for a build you will not upload")
    p.add_argument("--wheel-cache", type=Path, default=DEFAULT_WHEEL_CACHE,
                   help="downloaded wheels are kept here (default build/wheel-cache/)")
    cli.add_debug_arg(p)
    return p


def _level(text: str) -> int:
    if text not in {str(n) for n in range(1, 10)}:
        raise argparse.ArgumentTypeError(f"{text!r} is not a gzip level; give a whole number from 1 (fastest) to 9 "
                                         "(smallest)")
    return int(text)


_ARCH_CHOICE = cli.choice("a CPU architecture", ARCHES + tuple(EMR_ARCHES), fold=str.lower)


def _arch(text: str) -> str:
    return arch_for(_ARCH_CHOICE(arch_for(text)))


def target_arch(args) -> str:
    """--arch, else the stack's EmrArchitecture (the outputs file, when there is one), else x86_64."""
    if args.arch:
        return args.arch
    if args.outputs_file or args.stack or Path(cli.DEFAULT_OUTPUTS_FILE).is_file():
        outputs = cli.stack_outputs(args, needed_for="the application's architecture")
        declared = outputs.values.get("EmrArchitecture")
        if declared:
            cli.say(f"building for {declared}, the stack's EmrArchitecture")
            return _arch(declared)
    return "x86_64"


def _command(args) -> int:
    result = build(Target(args.python, target_arch(args), args.glibc, args.python_home), args.dist, args.wheel_cache,
                   compresslevel=args.compress_level, transform_modules=tuple(args.transform_module))
    print(report(result))
    return 0


def main(argv: list[str] | None = None) -> int:
    args = cli.parse_args(parser(), argv)
    return cli.run(PROG, lambda: _command(args), debug=args.debug,
                   interrupted="half-written files keep a .partial name; run package-job again")
