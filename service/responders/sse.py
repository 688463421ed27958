"""Server-sent events, read as they arrive: the `data` of each event (other fields and comments
are ignored). Lines end with LF, CRLF or CR; an event ends at an empty line, and one left
unfinished when the stream ends is still delivered (some servers omit the last empty line)."""

from __future__ import annotations

import codecs
from collections.abc import AsyncIterable, AsyncIterator

from service.responders.faults import Fault

# A longer line is no reply we could use, and buffering it would let a server fill our memory.
MAX_LINE_CHARS = 1 << 20


async def event_data(chunks: AsyncIterable[bytes]) -> AsyncIterator[str]:
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")  # SSE is always UTF-8
    pending = ""  # text after the last line break
    data: list[str] = []  # data lines of the event being read
    async for chunk in chunks:
        lines, pending = _split_lines(pending + decoder.decode(chunk))
        if len(pending) > MAX_LINE_CHARS:
            raise Fault("malformed", f"a stream line longer than {MAX_LINE_CHARS} characters")
        for line in lines:
            if (event := _take_line(line, data)) is not None:
                yield event
    # The end of the stream ends the last line and the last event.
    lines, _ = _split_lines(pending + decoder.decode(b"", final=True) + "\n\n")
    for line in lines:
        if (event := _take_line(line, data)) is not None:
            yield event


def _split_lines(text: str) -> tuple[list[str], str]:
    """Complete lines, and the rest. A CR at the very end waits: an LF may follow."""
    held = "\r" if text.endswith("\r") else ""
    lines = text[: len(text) - len(held)].replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return lines[:-1], lines[-1] + held


def _take_line(line: str, data: list[str]) -> str | None:
    """Add one line to the event being read; the event's data when the line ends it."""
    if not line:
        if not data:
            return None
        event = "\n".join(data)
        data.clear()
        return event
    name, _, value = line.partition(":")
    if name == "data":  # a line starting with ":" is a comment (its name is empty)
        data.append(value.removeprefix(" "))
    return None
