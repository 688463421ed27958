"""A fake OpenAI-compatible images server on 127.0.0.1, for the image generation tests:
`/v1/images/generations` (JSON) and `/v1/images/edits` (multipart) answer a PNG of the size
asked for, filled with a colour derived from the prompt, as `b64_json` (or as a `url` the
server also serves, when told). It records each request (path, headers, fields, files) and can
be told to refuse, to answer late, or to answer something that is not a picture."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import io
import json
import threading
from dataclasses import dataclass, field
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from PIL import Image

PICTURE_PATH = "/pictures/drawn.png"


def colour_of(prompt: str) -> tuple[int, int, int]:
    digest = hashlib.sha256(prompt.encode()).digest()
    return digest[0], digest[1], digest[2]


def picture(prompt: str, size: str) -> bytes:
    width, height = (int(side) for side in size.split("x"))
    out = io.BytesIO()
    Image.new("RGB", (width, height), colour_of(prompt)).save(out, format="PNG")
    return out.getvalue()


@dataclass
class Request:
    path: str
    headers: dict[str, str]
    fields: dict[str, Any]
    files: list[tuple[str, bytes]] = field(default_factory=list)  # (part name, bytes)


@dataclass
class FakeImages:
    status: int = 200
    body: bytes | None = None  # answer this instead of the picture
    answer_url: bool = False  # answer {"url": ...} (served by this server) instead of b64_json
    delay: threading.Event | None = None  # answer only once this is set
    requests: list[Request] = field(default_factory=list)
    _last: bytes = b""

    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> FakeImages:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length", "0")))
                headers = {k.lower(): v for k, v in self.headers.items()}
                fields, files = _fields(headers.get("content-type", ""), raw)
                fake.requests.append(Request(self.path, headers, fields, files))
                if fake.delay is not None:
                    fake.delay.wait(30)
                self._send(*fake._answer(fields))

            def do_GET(self) -> None:
                self._send(200, fake._last, "image/png")

            def _send(self, status: int, body: bytes, kind: str) -> None:
                self.send_response(status)
                self.send_header("content-type", kind)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                with contextlib.suppress(OSError):  # the client gave up waiting
                    self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self.delay is not None:
            self.delay.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def _answer(self, fields: dict[str, Any]) -> tuple[int, bytes, str]:
        if self.status != 200 or self.body is not None:
            return self.status, self.body or b'{"error": {"message": "no"}}', "application/json"
        self._last = picture(fields["prompt"], fields["size"])
        if self.answer_url:
            item = {"url": f"http://127.0.0.1:{self.port}{PICTURE_PATH}"}
        else:
            item = {"b64_json": base64.b64encode(self._last).decode()}
        return 200, json.dumps({"created": 1, "data": [item]}).encode(), "application/json"


def _fields(content_type: str, raw: bytes) -> tuple[dict[str, Any], list[tuple[str, bytes]]]:
    if content_type.startswith("application/json"):
        return json.loads(raw), []
    message = BytesParser(policy=HTTP).parsebytes(
        f"content-type: {content_type}\r\n\r\n".encode() + raw
    )
    fields: dict[str, Any] = {}
    files = []
    for part in message.iter_parts():
        payload = part.get_payload(decode=True)
        name = part.get_param("name", header="content-disposition")
        if part.get_filename():
            files.append((name, payload))
        else:
            fields[name] = payload.decode()
    return fields, files
