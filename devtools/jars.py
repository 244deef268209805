"""Spark's own table writers and S3A filesystem for local runs: the exact jars EMR's emr-spark-8.0.0 bundles
for Spark 4.0.2 / Scala 2.13, fetched once from Maven Central into the user's cache and checked against the
SHA-1 pinned here, so that tests and benchmarks start Spark with `--jars` and resolve nothing at run time.

    python -m devtools.jars fetch tables     # Delta + Iceberg (make setup, for .venv-spark40)
    python -m devtools.jars fetch s3a        # hadoop-aws + the AWS SDK bundle (make s3a-jars; ~560 MB)
    python -m devtools.jars path tables      # the comma-separated jar paths, for spark-submit --jars

The pins are Maven Central's own .sha1 files, copied here so that a changed or corrupted download is
refused rather than trusted. What each set needs beyond Spark's own jars was read from the POMs:
delta-spark 4.0.0 needs delta-storage 4.0.0 and antlr4-runtime 4.13.1 (in Spark already); hadoop-aws
3.4.1 (the Hadoop of PySpark 4.0.2's hadoop-client-api) needs the AWS SDK v2 bundle 2.24.6 (its
wildfly-openssl dependency is only for the OpenSSL TLS channel, unused here).
"""
from __future__ import annotations

import hashlib
import os
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

MAVEN = "https://repo1.maven.org/maven2"
SPARK_FOR_JARS = (4, 0)  # the Scala 2.13 / Spark 4.0 builds; Spark 4.3's Delta/Iceberg would need others


@dataclass(frozen=True)
class Artifact:
    group: str
    name: str
    version: str
    sha1: str
    size: int

    @property
    def file_name(self) -> str:
        return f"{self.name}-{self.version}.jar"


def maven_url(a: Artifact) -> str:
    """Where the repository keeps the jar: its group's dots become folders."""
    return f"{MAVEN}/{a.group.replace('.', '/')}/{a.name}/{a.version}/{a.file_name}"


DELTA = (
    Artifact("io.delta", "delta-spark_2.13", "4.0.0", "60c55e6243f4543771602ea5733767a4d8a1af2f", 7727374),
    Artifact("io.delta", "delta-storage", "4.0.0", "4526f775e104c5b8db3deea7cc825bcfddea25d1", 69732),
)
ICEBERG = (
    Artifact("org.apache.iceberg", "iceberg-spark-runtime-4.0_2.13", "1.10.1",
             "aa296e2a410cac2270e4d4130de0e7bfde714e11", 47083764),
)
S3A = (
    Artifact("org.apache.hadoop", "hadoop-aws", "3.4.1", "641d8fe1d7683cdcc05cc3a794c0374553f6bd6a", 865554),
    Artifact("software.amazon.awssdk", "bundle", "2.24.6", "242317b028d951dbbf6a142241e041b684696a3b",
             558001584),
)
SETS = {"delta": DELTA, "iceberg": ICEBERG, "tables": DELTA + ICEBERG, "s3a": S3A}


def cache_dir() -> Path:
    """$S3SQS_JAR_CACHE, else $XDG_CACHE_HOME/s3sqs/jars, else ~/.cache/s3sqs/jars."""
    if os.environ.get("S3SQS_JAR_CACHE"):
        return Path(os.environ["S3SQS_JAR_CACHE"])
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "s3sqs" / "jars"


def _set(name: str) -> tuple[Artifact, ...]:
    if name not in SETS:
        raise SystemExit(f"unknown jar set {name!r}; one of: {', '.join(SETS)}")
    return SETS[name]


def missing(name: str) -> list[Artifact]:
    """The set's jars not (yet) in the cache; a present file is trusted once its size matches (fetch checked
    its SHA-1 before moving it into place)."""
    return [a for a in _set(name) if not _present(a)]


def _present(a: Artifact) -> bool:
    p = cache_dir() / a.file_name
    return p.is_file() and p.stat().st_size == a.size


def paths(name: str) -> list[Path]:
    """The set's jar files; raises FileNotFoundError naming the make target when one is missing."""
    absent = missing(name)
    if absent:
        target = "make s3a-jars" if name == "s3a" else "make setup"
        raise FileNotFoundError(f"{', '.join(a.file_name for a in absent)} not in {cache_dir()}; run `{target}` "
                                f"(or python -m devtools.jars fetch {name})")
    return [cache_dir() / a.file_name for a in _set(name)]


def available(name: str) -> bool:
    return not missing(name)


def fetch(name: str, progress=print) -> list[Path]:
    """Download the set's missing jars, check each against its pinned SHA-1 and size, then move it into place."""
    folder = cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    for a in _set(name):
        if _present(a):
            progress(f"  {a.file_name}: cached ({a.size / 1e6:.1f} MB)")
            continue
        started = time.monotonic()
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{a.file_name}.")
        digest, size = hashlib.sha1(), 0
        try:
            with os.fdopen(fd, "wb") as out, urllib.request.urlopen(maven_url(a), timeout=60) as resp:
                while chunk := resp.read(1 << 20):
                    digest.update(chunk)
                    size += len(chunk)
                    out.write(chunk)
            if digest.hexdigest() != a.sha1 or size != a.size:
                raise SystemExit(f"{maven_url(a)}: got SHA-1 {digest.hexdigest()} and {size} bytes, expected {a.sha1} "
                                 f"and {a.size}; refusing it")
            os.replace(tmp, folder / a.file_name)
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)
        progress(f"  {a.file_name}: {size / 1e6:.1f} MB in {time.monotonic() - started:.1f} s, SHA-1 checked")
    return paths(name)


def s3a_conf(endpoint_url: str, region: str = "us-east-1") -> dict[str, str]:
    """Spark settings for its file source to read s3a:// from an S3-compatible endpoint (the local moto
    server): path-style requests over plain HTTP, and the credentials of the process's environment (the
    stand-in's fake keys), so that no key is ever on a command line or in a log."""
    return {
        "spark.jars": ",".join(str(p) for p in paths("s3a")),
        "spark.hadoop.fs.s3a.endpoint": endpoint_url,
        "spark.hadoop.fs.s3a.endpoint.region": region,
        "spark.hadoop.fs.s3a.path.style.access": "true",
        "spark.hadoop.fs.s3a.connection.ssl.enabled": "false",
        "spark.hadoop.fs.s3a.aws.credentials.provider":
            "software.amazon.awssdk.auth.credentials.EnvironmentVariableCredentialsProvider",
    }


def s3a_problem(sparks: list[str]) -> str | None:
    """Why a benchmark's --s3 cannot run with these Spark versions here, or None."""
    if sparks != ["4.0.2"]:
        return "--s3: the S3A jars fit Spark 4.0.2's Hadoop only; give --spark 4.0.2"
    if not available("s3a"):
        return f"--s3 needs the S3A jars in {cache_dir()}; run make s3a-jars"
    return None


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("fetch", "path"):
        print(__doc__, file=sys.stderr)
        return 2
    command, name = argv
    if command == "fetch":
        print(f"==> jars ({name}) into {cache_dir()}")
        fetch(name)
    else:
        print(",".join(str(p) for p in paths(name)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

