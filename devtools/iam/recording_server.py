"""moto's server with its request recorder safe for concurrent requests: `python -m devtools.iam.recording_server
-H 127.0.0.1 -p PORT`, recording to MOTO_RECORDER_FILEPATH once /moto-api/recorder/start-recording is posted.

moto's own recorder appends each request with two writes, and the threaded server runs requests at once, so
lines interleave. This one writes each request as one line under a lock, and leaves out bodies larger than
BODY_LIMIT (file contents: the operation and its resource are in the URL and headers).
"""
from __future__ import annotations

import base64
import io
import json
import threading

from moto.moto_api._internal.recorder.models import Recorder
from moto.server import main

BODY_LIMIT = 64 << 10
_lock = threading.Lock()


def _record_request(self: Recorder, request, body: bytes | None = None) -> None:
    if not self._user_enabled or request.raw_path.startswith("/moto-api/recorder/"):
        return
    if body is None:
        length = request.headers.get("Content-Length")
        body = b""
        if length:  # a chunked upload has none: its body is left to the handler, unrecorded
            body = request.environ["wsgi.input"].read(int(length))
            request.environ["wsgi.input"] = io.BytesIO(body)  # the request's handler reads it again
    if isinstance(body, str):
        body = body.encode()
    entry = {"headers": dict(request.headers), "method": request.method, "url": request.raw_url}
    if body and len(body) <= BODY_LIMIT:
        entry.update(body=base64.b64encode(body).decode("ascii"), body_encoded=True)
    line = json.dumps(entry) + "\n"
    with _lock, open(self._location, "a") as f:
        f.write(line)


Recorder._record_request = _record_request

if __name__ == "__main__":
    main()
