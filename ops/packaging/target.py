"""What package-job builds for one EMR runtime, decided without I/O: the target, the names under which
dist/ hands its artifacts to submit-job and EMR, the pinned dependency set and which wheels fit."""
from __future__ import annotations

import re
from dataclasses import dataclass

from ops.packaging import PackagingError
from ops.packaging.lock import PINS, PROVIDED_BY_RUNTIME

# ---------------------------------------------------------------- what dist/ holds

MANIFEST_NAME = "manifest.json"
ENTRY_POINT_NAME = "job.py"
CONNECTOR_NAME = "s3sqs.zip"
CONNECTOR_PACKAGE = "s3sqs"  # the connector's import name, at the root of its archive
# The names Spark unpacks the archives under (spark.archives=<uri>#<alias>) in the container's working directory.
CONNECTOR_ARCHIVE_ALIAS = "connector"
ENV_ARCHIVE_ALIAS = "environment"

# ---------------------------------------------------------------- the runtime

PYTHON_VERSIONS = ("3.11", "3.12")
ARCHES = ("x86_64", "aarch64")
# The same CPUs as the EMR application spells them (cdk.json's emr.architecture, the EmrArchitecture output).
EMR_ARCHES = {"X86_64": "x86_64", "ARM64": "aarch64"}


def arch_for(name: str) -> str:
    """x86_64/aarch64 from either spelling (X86_64, ARM64, arm64, amd64...); unknown names are returned as given,
    for the Target's own check."""
    folded = {**{k.lower(): v for k, v in EMR_ARCHES.items()}, "amd64": "x86_64", "x86-64": "x86_64",
              "x86_64": "x86_64", "aarch64": "aarch64"}
    return folded.get(name.strip().lower(), name)
# Amazon Linux 2023, which EMR's images run, has glibc 2.34: newer manylinux wheels would not load.
DEFAULT_GLIBC = "2.34"
DEFAULT_PYTHON_HOME = "/usr/bin"


@dataclass(frozen=True)
class Target:
    python: str = "3.11"
    arch: str = "x86_64"
    glibc: str = DEFAULT_GLIBC
    python_home: str = DEFAULT_PYTHON_HOME

    def __post_init__(self):
        if self.python not in PYTHON_VERSIONS:
            raise PackagingError(f"unsupported Python {self.python!r}; choose one of {', '.join(PYTHON_VERSIONS)}")
        if self.arch not in ARCHES:
            raise PackagingError(f"unsupported architecture {self.arch!r}; choose one of {', '.join(ARCHES)}")
        if not re.fullmatch(r"2\.\d+", self.glibc):
            raise PackagingError(f"glibc must look like 2.34, got {self.glibc!r}")
        if not self.python_home.startswith("/"):
            raise PackagingError(f"--python-home must be an absolute directory, got {self.python_home!r}")

    # What pip is asked for: wheels of the target's interpreter, ABIs, platforms and markers.
    @property
    def cp(self) -> str:
        return "cp" + self.python.replace(".", "")

    def abis(self) -> list[str]:
        return [self.cp, "abi3", "none"]

    def platforms(self) -> list[str]:
        """Every manylinux tag the target's glibc can load, newest first (pip does not expand them)."""
        minor = int(self.glibc.split(".")[1])
        tags = [f"manylinux_2_{m}_{self.arch}" for m in range(minor, 16, -1)]
        return tags + [f"manylinux2014_{self.arch}"]

    def marker_environment(self) -> dict[str, str]:
        """The values a requirement's environment marker is evaluated against on the target."""
        return {
            "python_version": self.python, "python_full_version": self.python + ".0",
            "implementation_name": "cpython", "platform_python_implementation": "CPython",
            "sys_platform": "linux", "platform_system": "Linux", "os_name": "posix",
            "platform_machine": self.arch, "extra": "",
        }

    # What the built archive is called, and what runs it.
    @property
    def tag(self) -> str:
        """The target in messages and file names: cp311-x86_64."""
        return f"{self.cp}-{self.arch}"

    @property
    def emr_architecture(self) -> str:
        """The EMR Serverless application's `architecture` value that can run this archive."""
        return {"x86_64": "X86_64", "aarch64": "ARM64"}[self.arch]

    @property
    def env_archive_name(self) -> str:
        return f"s3sqs-env-{self.tag}.tar.gz"


def packaging_library():
    """The `packaging` library, or pip's vendored copy when the running Python lacks it."""
    try:
        import packaging.requirements
        import packaging.utils
        return packaging
    except ImportError:
        from pip._vendor import packaging
        import pip._vendor.packaging.requirements  # noqa: F401
        import pip._vendor.packaging.utils  # noqa: F401
        return packaging


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


# ---------------------------------------------------------------- the pinned set

def pinned_requirements(specs: list[str], where: str) -> dict[str, str]:
    """The connector's dependencies as {name: version}; each must be pinned with ==."""
    Requirement = packaging_library().requirements.Requirement

    reqs = {}
    for spec in specs:
        req = Requirement(spec)
        pins = [s for s in req.specifier if s.operator == "=="]
        if len(pins) != 1 or len(req.specifier) != 1:
            raise PackagingError(f"{where}: dependency {spec!r} must be pinned exactly (name==version)")
        reqs[canonical(req.name)] = pins[0].version
    return reqs


def resolve_pins(direct: dict[str, str], lock: dict[str, str] = PINS) -> dict[str, str]:
    """Direct pins plus the lock's transitive ones; a disagreement between the two is an error."""
    lock = {canonical(k): v for k, v in lock.items()}
    for name, version in direct.items():
        if name in PROVIDED_BY_RUNTIME:
            raise PackagingError(f"{name} is provided by EMR and must not be a connector dependency")
        if lock.get(name) != version:
            raise PackagingError(
                f"pyproject.toml pins {name}=={version} but ops/packaging/lock.py has "
                f"{name}=={lock.get(name, '(nothing)')}; update the lock"
            )
    return dict(sorted(lock.items()))


def closure_problems(requires: dict[str, list[str]], pins: dict[str, str], target: Target) -> list[str]:
    """What is wrong with the pinned set, given each wheel's Requires-Dist lines: every requirement that
    applies on the target must be pinned and satisfied, or provided by the runtime."""
    Requirement = packaging_library().requirements.Requirement

    env = target.marker_environment()
    problems = []
    for name, lines in sorted(requires.items()):
        for line in lines:
            req = Requirement(line)
            if req.marker is not None and not req.marker.evaluate(env):
                continue
            dep = canonical(req.name)
            if dep in PROVIDED_BY_RUNTIME:
                continue
            if dep not in pins:
                problems.append(f"{name} needs {req}, which ops/packaging/lock.py does not pin")
            elif not req.specifier.contains(pins[dep], prereleases=True):
                problems.append(f"{name} needs {req}, but the lock pins {dep}=={pins[dep]}")
    return problems


# ---------------------------------------------------------------- which wheels fit

def wheel_supported(wheel_name: str, target: Target) -> bool:
    """Whether a wheel file's tags let it load on the target."""
    parse_wheel_filename = packaging_library().utils.parse_wheel_filename

    _, _, _, tags = parse_wheel_filename(wheel_name)
    platforms = set(target.platforms()) | {"any"}
    interpreters = {target.cp, "py3", f"py{target.python.replace('.', '')}", "py2.py3"}
    for t in tags:
        abi_ok = t.abi in target.abis() and (t.abi != "abi3" or t.interpreter.startswith("cp3"))
        if t.platform in platforms and abi_ok and (t.interpreter in interpreters or t.abi == "abi3"):
            return True
    return False


def pip_platform_args(target: Target) -> list[str]:
    """`pip download` flags that fetch binary wheels for the target rather than for this machine."""
    args = ["--only-binary=:all:", "--implementation", "cp", "--python-version", target.python]
    for p in target.platforms():
        args += ["--platform", p]
    for a in target.abis():
        args += ["--abi", a]
    return args
