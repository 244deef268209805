from s3sqs.sinks.iceberg import BATCH_ID_SUMMARY, MARKER_PREFIX, QUERY_ID_SUMMARY, last_committed_batch


def batch(query: str, n: int) -> dict:
    return {"operation": "append", QUERY_ID_SUMMARY: query, BATCH_ID_SUMMARY: str(n)}


def test_the_newer_of_property_and_summaries_counts_per_query():
    summaries = [batch("q1", 0), batch("q1", 1), {"operation": "overwrite", "s3sqs.operation": "compact"},
                 batch("q2", 7)]
    assert last_committed_batch({MARKER_PREFIX + "q1": "1"}, summaries, "q1") == 1
    # The property was removed by hand: the summaries still know batch 1 is in.
    assert last_committed_batch({}, summaries, "q1") == 1
    # Old snapshots expired: the property still knows.
    assert last_committed_batch({MARKER_PREFIX + "q1": "5"}, [], "q1") == 5
    assert last_committed_batch({MARKER_PREFIX + "q1": "5"}, summaries, "q2") == 7
    assert last_committed_batch({}, summaries, "q3") == -1
