"""latestFirst's fresh files come out of the ledger oldest first by their events' times, not in the order
SQS delivered (and the ledger numbered) them."""
from s3sqs.config.options import parse_options
from s3sqs.core.files import S3File
from s3sqs.planning.ledger import Ledger


def test_fresh_files_are_ordered_by_event_time_not_by_seq(tmp_path):
    opts = parse_options({"fileFormat": "csv", "queueUrl": "https://sqs.eu-west-1.amazonaws.com/1/q",
                          "stateLocation": str(tmp_path / "state"), "latestFirst": "true",
                          "maxFilesPerTrigger": "10"})
    ledger = Ledger(opts)
    try:
        received = [("new", 3_000), ("old", 1_000), ("mid", 2_000)]  # SQS's order, not the uploads'
        files = [(name, S3File("b", f"k/{name}", 1, event_ms=ms)) for name, ms in received]
        ledger.record(files, {}, announced=True)
        seq = {f.key: f.seq for f in ledger.index.records(1, 3)}
        assert ledger.take_fresh() == [seq["k/old"], seq["k/mid"], seq["k/new"]]
        assert ledger.take_fresh() == []  # taken once
        ledger.record([("listed", S3File("b", "k/listed", 1, event_ms=4_000))], {}, announced=False)
        assert ledger.take_fresh() == []  # a listing's files are history, never fresh
    finally:
        ledger.close()
