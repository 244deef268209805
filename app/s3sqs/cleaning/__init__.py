"""Cleaning the source bucket under fan-out, on an operator's machine or a scheduled run (`source-state
clean`), never in the stream's path: a file is archived or deleted only once every consumer of the stack
whose filters match it has committed it, and the retention has passed since the last of those commits.

- `rule` (pure): which consumers must have committed a key, and what becomes of it now;
- `actions`: the S3 calls for one file: archive (copy, check the copy, delete) or delete;
- `journal`: what the cleaner did, file by file, with the time (under the stack's `source-cleaning/`);
- `progress`: where the last run that applied left off (per consumer, the newest marker up to which all is
  settled; the journal chunks still needed), so a run reads what is new or not yet settled;
- `history`: what a run reads from there: the consumers' commit markers (state/markers.py), the journal;
- `cleaner`: one run: read, judge, act, report, write the progress.
"""
