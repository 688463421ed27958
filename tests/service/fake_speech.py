"""A fake OpenAI-compatible speech server on 127.0.0.1, for the backend tests: `/v1/audio/speech`
answers a WAV of a 220 Hz tone lasting 60 ms per character of the input, and
`/v1/audio/transcriptions` answers verbose JSON naming the length of the WAV it was sent. It
records each request (path, headers, the JSON or multipart fields) and can be told to fail."""

from __future__ import annotations

import json
import math
import struct
import threading
from dataclasses import dataclass, field
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

import engine

TONE_RATE = 24_000
MS_PER_CHARACTER = 60


def tone(seconds: float, rate: int = TONE_RATE, hz: float = 220.0) -> bytes:
    t = np.arange(int(seconds * rate)) / rate
    return (np.sin(2 * math.pi * hz * t) * 8000).astype("<i2").tobytes()


@dataclass
class Request:
    path: str
    headers: dict[str, str]
    fields: dict[str, Any]


@dataclass
class FakeSpeech:
    status: int = 200
    body: bytes | None = None  # answer this instead of the real answer
    requests: list[Request] = field(default_factory=list)

    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> FakeSpeech:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length", "0")))
                headers = {k.lower(): v for k, v in self.headers.items()}
                fields = _fields(headers.get("content-type", ""), raw)
                fake.requests.append(Request(self.path, headers, fields))
                status, body, kind = fake._answer(self.path, fields)
                self.send_response(status)
                self.send_header("content-type", kind)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def _answer(self, path: str, fields: dict[str, Any]) -> tuple[int, bytes, str]:
        if self.status != 200 or self.body is not None:
            return self.status, self.body or b'{"error": "no"}', "application/json"
        if path.endswith("/audio/speech"):
            seconds = len(fields["input"]) * MS_PER_CHARACTER / 1000
            return 200, engine.wav_bytes(tone(seconds), TONE_RATE), "audio/wav"
        wav = fields["file"]
        frames = struct.unpack("<I", wav[40:44])[0] // 2
        rate = struct.unpack("<I", wav[24:28])[0]
        seconds = frames / rate
        answer = {
            "text": " heard you ",
            "segments": [{"start": 0.0, "end": seconds, "text": f" heard {seconds:.2f} s "}],
        }
        return 200, json.dumps(answer).encode(), "application/json"


def _fields(content_type: str, raw: bytes) -> dict[str, Any]:
    if content_type.startswith("application/json"):
        return json.loads(raw)
    message = BytesParser(policy=HTTP).parsebytes(
        f"content-type: {content_type}\r\n\r\n".encode() + raw
    )
    fields: dict[str, Any] = {}
    for part in message.iter_parts():
        payload = part.get_payload(decode=True)
        name = part.get_param("name", header="content-disposition")
        fields[name] = payload if part.get_filename() else payload.decode()
    return fields
