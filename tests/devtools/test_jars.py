"""devtools/jars.py: a jar is taken only when its SHA-1 and size match the pins, and a missing one is named
with the make target that fetches it. A file:// "repository" stands in for Maven Central."""
import hashlib

import pytest

from devtools import jars


@pytest.fixture
def repo(tmp_path, monkeypatch):
    body = b"PK\x03\x04 not really a jar"
    folder = tmp_path / "maven" / "org" / "example" / "thing" / "1.0"
    folder.mkdir(parents=True)
    (folder / "thing-1.0.jar").write_bytes(body)
    monkeypatch.setattr(jars, "MAVEN", (tmp_path / "maven").as_uri())
    monkeypatch.setenv("S3SQS_JAR_CACHE", str(tmp_path / "cache"))
    return body


def use(monkeypatch, sha1: str, size: int) -> None:
    monkeypatch.setitem(jars.SETS, "delta", (jars.Artifact("org.example", "thing", "1.0", sha1, size),))


def test_a_matching_jar_is_cached_once_and_then_found(repo, monkeypatch, tmp_path):
    use(monkeypatch, hashlib.sha1(repo).hexdigest(), len(repo))
    with pytest.raises(FileNotFoundError, match=r"thing-1.0.jar not in .*cache; run `make setup`"):
        jars.paths("delta")
    lines = []
    assert jars.fetch("delta", lines.append) == [tmp_path / "cache" / "thing-1.0.jar"]
    assert "SHA-1 checked" in lines[0] and jars.available("delta")
    jars.fetch("delta", lines.append)
    assert "cached" in lines[1]


def test_a_jar_that_does_not_match_its_pin_is_refused_and_not_kept(repo, monkeypatch, tmp_path):
    use(monkeypatch, "0" * 40, len(repo))
    with pytest.raises(SystemExit, match="expected 0000.*refusing it"):
        jars.fetch("delta", print)
    assert list((tmp_path / "cache").iterdir()) == []


def test_s3a_settings_take_the_credentials_from_the_environment_never_from_the_command_line(repo, monkeypatch):
    monkeypatch.setitem(jars.SETS, "s3a", (jars.Artifact("org.example", "thing", "1.0",
                                                         hashlib.sha1(repo).hexdigest(), len(repo)),))
    jars.fetch("s3a", lambda _: None)
    conf = jars.s3a_conf("http://127.0.0.1:5000")
    assert conf["spark.hadoop.fs.s3a.endpoint"] == "http://127.0.0.1:5000"
    assert conf["spark.hadoop.fs.s3a.path.style.access"] == "true"
    assert conf["spark.hadoop.fs.s3a.aws.credentials.provider"].endswith("EnvironmentVariableCredentialsProvider")
    assert not [k for k in conf if "key" in k.lower() or "secret" in k.lower()]
