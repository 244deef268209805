"""What a run of the source cleaner costs, on the moto server, counted request by request: a key is looked at
(HEAD) only when its commits make it due; a run that applies leaves a watermark per consumer, and the next
one reads only the markers (and journal chunks) after it; a key committed again is judged again; a consumer
whose seqs start over is read from its first marker; a run killed before it writes its progress loses
nothing and cleans nothing twice."""
from __future__ import annotations

import json
import time
from collections import Counter
from urllib.parse import unquote

import pytest

from devtools.fault_proxy import FaultProxy, Faults
from s3sqs.cleaning import progress
from s3sqs.cleaning.rule import Consumer
from s3sqs.core.units import now_ms
from s3sqs.core.vocabulary import CleanStatus
from s3sqs.state import markers
from s3sqs.state.store import S3Store
from tests.cleaning.test_cleaner import DAY, Place, applying_in_background, outputs_file, wait_until

INGEST = [Consumer("ingest", "in/")]
DELETE = dict(cleanSource="delete", cleanSourceRetention="1d")


class Calls:
    """Every HTTP request the client sends, by operation and by what it touches."""

    def __init__(self, s3):
        self.n: Counter = Counter()
        s3.meta.events.register("before-send.s3", self._count)

    def _count(self, request, event_name, **_):
        url = unquote(request.url)
        kind = ("marker" if "/committed/" in url else "journal" if "/cleaned/" in url else
                "progress" if progress.NAME in url else "object")
        self.n[(event_name.rsplit(".", 1)[-1], kind)] += 1  # returns None: the request goes on

    def take(self) -> dict:
        out, self.n = dict(self.n), Counter()
        return out


@pytest.fixture
def place(moto_endpoint) -> Place:
    return Place(moto_endpoint)


def commit_new(place: Place, consumer: str, keys: list[str], committed_ms: int, first: int) -> None:
    for k in keys:
        place.put(k, k.encode())
    place.commit_as(consumer, keys, committed_ms, first=first)


def run(place: Place, clock=now_ms, consumers=INGEST, said=None) -> dict[str, CleanStatus]:
    rows = []
    place.cleaner(consumers, clock=clock, progress=(said.append if said is not None else None), **DELETE) \
        .run(True, on_row=rows.append)
    return {r.key: r.status for r in rows}


def mark_of(place: Place, consumer: str = "ingest") -> progress.Mark | None:
    return progress.read(S3Store(f"s3://{place.ck}/source-cleaning", place.s3)).marks.get(consumer)


def test_only_due_keys_are_looked_at_and_the_next_run_reads_only_the_markers_after_the_watermark(place):
    old, recent = now_ms() - 3 * DAY, now_ms() - 3600_000
    for i in range(6):  # six commits of three files: the first two are due (1d retention), the rest are not
        commit_new(place, "ingest", [f"in/{i}-{j}.csv" for j in range(3)], old if i < 2 else recent, first=3 * i + 1)
    calls = Calls(place.s3)

    first = run(place)
    assert Counter(first.values()) == {CleanStatus.DELETED: 6, CleanStatus.RETENTION: 12}
    n = calls.take()
    # one HEAD to judge each due key and one before its delete; none for the twelve in their retention
    assert n[("HeadObject", "object")] == 12 and n[("DeleteObject", "object")] == 6
    assert n[("GetObject", "marker")] == 6
    assert mark_of(place).name == markers.marker_name(6)  # the two settled commits (seqs 1-6)

    second = run(place)
    assert Counter(second.values()) == {CleanStatus.RETENTION: 12}  # the settled keys are not read again
    n = calls.take()
    assert n[("GetObject", "marker")] == 4 and n[("ListObjectsV2", "marker")] == 1
    assert n[("GetObject", "journal")] == 1  # the first run's chunk, read once: no key in it is pending
    assert n.get(("HeadObject", "object"), 0) == 0

    # in/0-0.csv is uploaded again and committed again: a later marker, so it is judged again
    commit_new(place, "ingest", ["in/0-0.csv"], now_ms(), first=19)
    calls.take()
    assert run(place)["in/0-0.csv"] == CleanStatus.RETENTION
    n = calls.take()
    assert n[("GetObject", "marker")] == 5 and n.get(("GetObject", "journal"), 0) == 0
    later = now_ms() + 2 * DAY
    assert Counter(run(place, clock=lambda: later).values()) == {CleanStatus.DELETED: 13}
    assert place.keys(place.src) == [] and mark_of(place).name == markers.marker_name(19)
    calls.take()
    assert run(place, clock=lambda: later) == {}
    n = calls.take()
    assert n.get(("GetObject", "marker"), 0) == 0 and n[("ListObjectsV2", "marker")] == 1


def test_a_consumer_whose_markers_are_gone_or_whose_seqs_start_over_is_read_from_its_first_marker(place):
    old = now_ms() - 3 * DAY
    for i in range(3):  # commits of seqs 1-3, 4-6, 7-9: all cleaned, the watermark at 9
        commit_new(place, "ingest", [f"in/a{i}-{j}.csv" for j in range(3)], old, first=3 * i + 1)
    run(place)
    assert run(place) == {} and mark_of(place).name == markers.marker_name(9)
    assert progress.read(S3Store(f"s3://{place.ck}/source-cleaning", place.s3)).journal  # past the first run's
    place.put("in/a0-0.csv", b"in/a0-0.csv")  # the same bytes again, not committed again: it must stay

    # Its state starts over in the same location, its old markers left there: seqs 1-4 (under the
    # watermark, never listed after it), then 5-10, which begins inside 7-9.
    commit_new(place, "ingest", [f"in/b{j}.csv" for j in range(4)], old, first=1)
    commit_new(place, "ingest", [f"in/c{j}.csv" for j in range(6)], old, first=5)
    said = []
    statuses = run(place, said=said)
    assert any("seqs started over (marker committed/000000000010.json covers seqs 5-10" in s for s in said)
    assert set(statuses) == {f"in/a{i}-{j}.csv" for i in range(3) for j in range(3)} | \
        {f"in/b{j}.csv" for j in range(4)} | {f"in/c{j}.csv" for j in range(6)}  # every marker read again
    assert set(statuses.values()) == {CleanStatus.DELETED}  # the old ones as the journal, read again, says
    assert place.keys(place.src) == ["in/a0-0.csv"] and mark_of(place).name == markers.marker_name(10)

    # Its state is emptied, markers and all, and starts again from seq 1: the watermark's marker is gone.
    store = place.markers_of("ingest")
    store.delete(store.list(markers.MARKER_DIR))
    commit_new(place, "ingest", ["in/d.csv"], old, first=1)
    said = []
    assert run(place, said=said) == {"in/d.csv": CleanStatus.DELETED}
    assert place.keys(place.src) == ["in/a0-0.csv"]
    assert any("marker committed/000000000010.json is gone or was written again" in s for s in said)
    assert mark_of(place).name == markers.marker_name(1)


def test_a_run_killed_before_it_writes_its_progress_loses_nothing_and_cleans_nothing_twice(place, tmp_path):
    old = now_ms() - 3 * DAY
    commit_new(place, "ingest", ["in/a.csv", "in/b.csv"], old, first=1)
    commit_new(place, "ingest", ["in/c.csv"], now_ms(), first=3)  # in its retention
    outputs = outputs_file(place, tmp_path / "cdk-outputs.json", {"ingest": "in/"}, cleanSource="archive",
                           cleanSourceRetention="1d", sourceArchiveLocation=f"s3://{place.arch}/arch/")
    # The progress PUT waits (minutes) at the proxy: the run is killed after its journal, before its progress.
    with FaultProxy(place.endpoint, Faults(delay=1.0, max_delay=600.0),
                    applies=lambda m, p: m == "PUT" and p.endswith(progress.NAME)) as proxy, \
            applying_in_background(outputs, proxy.endpoint_url) as run_:
        wait_until(lambda: place.keys(place.ck, "source-cleaning/cleaned/"), run_)
        time.sleep(0.3)
        assert run_.poll() is None, run_.stderr.read()
    assert place.keys(place.arch) == ["arch/in/a.csv", "arch/in/b.csv"] and place.keys(place.src) == ["in/c.csv"]
    assert place.keys(place.ck, "source-cleaning/progress") == []

    calls = Calls(place.s3)
    rows = []
    place.cleaner(INGEST, cleanSource="archive", cleanSourceRetention="1d",
                  sourceArchiveLocation=f"s3://{place.arch}/arch/").run(True, on_row=rows.append)
    statuses = {r.key: r.status for r in rows}
    assert statuses == {"in/a.csv": CleanStatus.ARCHIVED, "in/b.csv": CleanStatus.ARCHIVED,
                        "in/c.csv": CleanStatus.RETENTION}  # from the journal the killed run wrote
    n = calls.take()
    assert not any(op in ("CopyObject", "DeleteObject", "HeadObject") for op, _ in n)
    assert mark_of(place).name == markers.marker_name(2) and place.keys(place.arch) == ["arch/in/a.csv", "arch/in/b.csv"]
    journal = [json.loads(place.body(place.ck, k)) for k in place.keys(place.ck, "source-cleaning/cleaned/")]
    assert sorted(r["key"] for chunk in journal for r in chunk) == ["in/a.csv", "in/b.csv"]  # recorded once
