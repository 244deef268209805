"""State inspection on real state: the driver on the moto server writes it, the executors' reader records a
quarantined and a missing file, and the view reads a private copy of it, as scripts/source-state does."""
import json

import pyarrow as pa
import pytest

from s3sqs.planning.controller import Controller
from s3sqs.core.endpoint import Endpoint
from s3sqs.reading.formats import FormatOptions
from s3sqs.config.options import parse_options
from s3sqs.planning.batch_limits import Limit
from s3sqs.reading.reader import ReadSpec, read_partition
from s3sqs.state.view import StateViewError, files_table, open_state, to_table
from tests.support.aws import bucket_to_queue
from tests.support.checkpoint import log_batch


def drain(d):
    while msgs := d.intake.queue.receive_round(5, 1):
        d.intake.ingest(msgs)


@pytest.fixture(scope="module")
def checkpoint(moto_endpoint, tmp_path_factory):
    """A job-shaped checkpoint: batch 0 read and committed (2 good files, 1 quarantined, 1 missing), batch 1
    planned, one file recorded and not planned. Spark's own logs are written as Spark writes them."""
    ck = tmp_path_factory.mktemp("ck")
    w = bucket_to_queue(moto_endpoint)
    for key, body in (("in/a.csv", b"1\n2\n"), ("in/b c.csv", b"3\n"), ("in/bad.csv.gz", b"\x1f\x8b not gzip"),
                      ("in/gone.csv", b"4\n")):
        w.put(key, body)
    opts = parse_options({"fileFormat": "csv", "queueUrl": w.queue_url, "stateLocation": str(ck / "source-state"),
                          "quarantineLocation": str(ck / "quarantine"), "endpointUrl": w.endpoint,
                          "queueRegion": "us-east-1", "sqs.longPollingWaitTimeSeconds": "1",
                          "maxFilesPerTrigger": "4"})
    d = Controller(opts)
    d.open()
    drain(d)
    end0 = d.latest_offset(0, Limit(4, None))
    files = d.files_between(0, end0)
    w.s3.delete_object(Bucket=w.bucket, Key="in/gone.csv")  # deleted after it was announced
    spec = ReadSpec(FormatOptions("csv"), Endpoint(w.endpoint, "us-east-1"), quarantine_location=opts.quarantine_location)
    list(read_partition(files, spec, pa.schema([("x", pa.int64())]), end0))  # what a task does
    log_batch(ck, 0, end0, committed=True)
    w.put("in/c.csv", b"5\n")
    drain(d)
    end1 = d.latest_offset(end0, Limit(4, None))  # batch 0 is in the sink: acknowledged with its problems
    d.files_between(end0, end1)
    log_batch(ck, 1, end1, committed=False)
    w.put("in/d.csv", b"6\n")
    drain(d)  # recorded, not planned
    d.close()
    return ck, w.bucket, end0, end1


def test_every_file_has_its_batch_and_what_became_of_it(checkpoint):
    ck, bucket, end0, end1 = checkpoint
    assert (end0, end1) == (4, 5)
    with open_state(checkpoint=str(ck)) as view:
        files = {f.key: f for f in view.files()}
    assert {k: (f.batch_id, f.status) for k, f in files.items()} == {
        "in/a.csv": (0, "committed"), "in/b c.csv": (0, "committed"), "in/bad.csv.gz": (0, "quarantined"),
        "in/gone.csv": (0, "missing"), "in/c.csv": (1, "planned"), "in/d.csv": (None, "pending")}
    bad = files["in/bad.csv.gz"]
    assert bad.uri == f"s3://{bucket}/in/bad.csv.gz" and bad.error and bad.quarantine_copy.startswith(str(ck))
    assert "gone.csv" in files["in/gone.csv"].error and "inflate" in bad.error
    assert files["in/a.csv"].committed_ms is not None and files["in/a.csv"].origin == "notification"
    assert files["in/a.csv"].size == 4 and files["in/a.csv"].event_ms > 0


def test_sparks_commit_log_decides_what_is_in_the_sink(checkpoint):
    ck, _, _, end1 = checkpoint
    log_batch(ck, 1, end1, committed=True)  # Spark committed batch 1; the source learns it at its next plan
    try:
        with open_state(checkpoint=str(ck)) as view:
            (planned,) = view.files(batch=1)
            assert planned.status == "committed" and planned.committed_ms is None
        with open_state(str(ck / "source-state")) as view:  # without the checkpoint: the source's own record
            assert [f.status for f in view.files(batch=1)] == ["planned"]
    finally:
        (ck / "commits" / "1").unlink()


def test_lookup_answers_whether_a_key_was_seen_in_which_batch_and_its_fate(checkpoint):
    ck, bucket, _, _ = checkpoint
    with open_state(checkpoint=str(ck)) as view:
        (bad,) = view.lookup(f"s3://{bucket}/in/bad.csv.gz")
        assert (bad.batch_id, bad.status) == (0, "quarantined")
        assert [f.seq for f in view.lookup("in/b c.csv")] == [f.seq for f in view.lookup(f"s3://{bucket}/in/b c.csv")]
        assert view.lookup("in/never.csv") == [] and view.lookup(f"s3://{bucket}/in/a.cs") == []
        with pytest.raises(StateViewError, match="names no object"):
            view.lookup("s3://bucket-only")


def test_filters_summary_and_table(checkpoint):
    ck, _, _, _ = checkpoint
    with open_state(checkpoint=str(ck)) as view:
        assert [f.key for f in view.files(status="pending")] == ["in/d.csv"]
        assert sorted(f.key for f in view.files(batch=0, status="committed")) == ["in/a.csv", "in/b c.csv"]
        assert len(list(view.files(since_ms=0))) == 6 and list(view.files(since_ms=2**62)) == []
        with pytest.raises(StateViewError, match="batch 7 is not in the source state, which holds batches 0..1"):
            list(view.files(batch=7))
        s = view.summary()
    assert s["files_tracked"] == 6 and s["by_status"] == {"pending": 1, "planned": 1, "committed": 2,
                                                          "quarantined": 1, "missing": 1, "malformed_rows": 0, "new_columns": 0}
    assert s["batches"] == 2 and s["last_batch"]["id"] == 1 and s["last_batch"]["files"] == 1
    assert s["sink_committed_seq"] == 4 and s["source_committed_seq"] == 4 and s["last_seq"] == 6
    assert s["counters"]["new"] == 6 and s["state_bytes"] > 0 and s["state_version"] >= 1
    json.dumps(s)  # plain data, for --json
    table = files_table(checkpoint=str(ck), status="quarantined")
    assert table.num_rows == 1 and table.column("status").to_pylist() == ["quarantined"]
    assert str(table.schema.field("event_time").type) == "timestamp[ms, tz=UTC]"
    assert to_table([]).num_rows == 0


def test_no_state_is_a_clear_error(tmp_path):
    with pytest.raises(StateViewError, match="no source state in .*: it has no versions/ manifest"):
        with open_state(str(tmp_path / "nothing-here")):
            pass


# -- scripts/source-state on the same state, in-process ---------------------------------------------------

def run_cli(*argv):
    import io

    from ops.state.cli import main
    out = io.StringIO()
    return main(list(argv), out=out), out.getvalue()


def test_source_state_summary_files_and_lookup(checkpoint, capsys):
    ck, bucket, _, _ = checkpoint
    code, text = run_cli("summary", "--checkpoint", str(ck))
    print(text)
    assert code == 0 and "files tracked: 6" in text and "quarantined" in text
    assert "sink: Spark committed through offset 4" in text
    code, text = run_cli("files", "--checkpoint", str(ck), "--batch", "0")
    print(text)
    rows = text.splitlines()
    assert code == 0 and rows[0].split()[:3] == ["SEQ", "BATCH", "STATUS"] and len(rows) == 5
    code, text = run_cli("files", "--checkpoint", str(ck), "--json", "--status", "pending")
    (row,) = [json.loads(line) for line in text.splitlines()]
    assert row["key"] == "in/d.csv" and row["status"] == "pending" and row["event_time"].endswith("Z")
    code, text = run_cli("files", "--state-location", str(ck / "source-state"), "--since", "1h", "--limit", "2")
    assert code == 0 and len(text.splitlines()) == 3
    code, text = run_cli("lookup", "--checkpoint", str(ck), f"s3://{bucket}/in/bad.csv.gz")
    print(text)
    assert code == 0 and "batch 0, quarantined" in text and "inflate" in text and "copy" in text
    code, text = run_cli("lookup", "--checkpoint", str(ck), "--json", "in/never.csv")
    assert code == 1 and json.loads(text) == {"key": "in/never.csv", "found": False, "files": []}
    assert "2 files (--limit 2)" in capsys.readouterr().err


@pytest.mark.parametrize("argv, message", [
    (["files", "--checkpoint", "CK", "--status", "quarantine"], "'quarantine' is not a file status (did you mean "
                                                                 "'quarantined'?)"),
    (["files", "--checkpoint", "CK", "--batch", "-1"], "batch ids count from 0"),
    (["files", "--checkpoint", "CK", "--batch", "1", "--since", "1h"], "not allowed with argument"),
])
def test_bad_flags_are_refused_by_the_parser(checkpoint, capsys, argv, message):
    ck = str(checkpoint[0])
    with pytest.raises(SystemExit) as e:
        run_cli(*[ck if a == "CK" else a for a in argv])
    assert e.value.code == 2 and message in capsys.readouterr().err


@pytest.mark.parametrize("argv, message", [
    (["files", "--checkpoint", "CK", "--batch", "9"], "batch 9 is not in the source state, which holds batches 0..1"),
    (["files", "--checkpoint", "CK", "--since", "last tuesday"], "--since 'last tuesday' is not a time"),
    (["summary"], "say where the state is"),
    (["summary", "--checkpoint", "gs://bucket/ck"], "must be a local path or an s3:// URI"),
    (["summary", "--checkpoint", "s3://"], "has no bucket"),
    (["summary", "--state-location", "EMPTY"], "no source state in"),
    (["lookup", "--checkpoint", "CK", "s3://only-a-bucket"], "names no object"),
])
def test_problems_are_one_line_and_exit_2(checkpoint, capsys, tmp_path, argv, message):
    ck = str(checkpoint[0])
    code, _ = run_cli(*[ck if a == "CK" else str(tmp_path) if a == "EMPTY" else a for a in argv])
    err = capsys.readouterr().err
    assert code == 2 and message in err and "Traceback" not in err


def test_a_consumers_checkpoint_from_the_outputs_file_and_state_on_s3(checkpoint, moto_endpoint, tmp_path):
    ck, bucket, _, _ = checkpoint
    outputs = tmp_path / "cdk-outputs.json"
    outputs.write_text(json.dumps({"S3SqsStreaming": {"Consumers": json.dumps({"ingest": {
        "queueUrl": "q", "queueArn": "a", "dlqUrl": "d", "dlqArn": "da", "jobRoleArn": "r",
        "checkpointUri": str(ck)}})}}))
    code, text = run_cli("lookup", "--consumer", "ingest", "--outputs-file", str(outputs), "in/a.csv")
    assert code == 0 and "batch 0, committed" in text
    code, _ = run_cli("summary", "--consumer", "ingst", "--outputs-file", str(outputs))
    assert code == 2

    import boto3
    s3 = boto3.client("s3", endpoint_url=moto_endpoint, region_name="us-east-1")
    for path in (ck / "source-state").rglob("*"):
        if path.is_file():
            s3.upload_file(str(path), bucket, f"copy/source-state/{path.relative_to(ck / 'source-state')}")
    code, text = run_cli("files", "--state-location", f"s3://{bucket}/copy/source-state", "--status", "missing",
                         "--endpoint-url", moto_endpoint, "--region", "us-east-1")
    assert code == 0 and text.splitlines()[1].endswith("/in/gone.csv")
