"""Server-sent events, read as they arrive: the `data` of each event (other fields and comments
are ignored). Lines end with LF, CRLF or CR; an event ends at an empty line, and one left
unfinished when the stream ends is still delivered (some servers omit the last empty line)."""

from __future__ import annotations

import codecs
from collections.abc import AsyncIterable, AsyncIterator

from service.responders.faults import Fault

# A longer line, or event, is no reply we could use, and buffering it would let a server fill
# our memory.
MAX_LINE_CHARS = 1 << 20
MAX_EVENT_CHARS = 1 << 20


async def event_data(chunks: AsyncIterable[bytes]) -> AsyncIterator[str]:
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")  # SSE is always UTF-8
    pending = ""  # text after the last line break
    event = _Event()
    async for chunk in chunks:
        lines, pending = _split_lines(pending + decoder.decode(chunk))
        if len(pending) > MAX_LINE_CHARS:
            raise Fault("malformed", f"a stream line longer than {MAX_LINE_CHARS} characters")
        for line in lines:
            if (data := _take_line(line, event)) is not None:
                yield data
    # The end of the stream ends the last line and the last event.
    lines, _ = _split_lines(pending + decoder.decode(b"", final=True) + "\n\n")
    for line in lines:
        if (data := _take_line(line, event)) is not None:
            yield data


def _split_lines(text: str) -> tuple[list[str], str]:
    """Complete lines, and the rest. A CR at the very end waits: an LF may follow."""
    held = "\r" if text.endswith("\r") else ""
    lines = text[: len(text) - len(held)].replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return lines[:-1], lines[-1] + held


class _Event:
    """The data lines of the event being read, and their size."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.chars = 0

    def add(self, value: str) -> None:
        self.lines.append(value)
        self.chars += len(value) + 1  # with the line break that joins it to the next
        if self.chars > MAX_EVENT_CHARS:
            raise Fault("malformed", f"an event longer than {MAX_EVENT_CHARS} characters")

    def take(self) -> str | None:
        """The event's data (None when it had none), and a fresh start for the next one."""
        if not self.lines:
            return None
        data = "\n".join(self.lines)
        self.lines, self.chars = [], 0
        return data


def _take_line(line: str, event: _Event) -> str | None:
    """Add one line to the event being read; the event's data when the line ends it."""
    if not line:
        return event.take()
    name, _, value = line.partition(":")
    if name == "data":  # a line starting with ":" is a comment (its name is empty)
        event.add(value.removeprefix(" "))
    return None
