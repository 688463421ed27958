"""docs/api.md runs as written: every example is executed, top to bottom, against a fresh
`serve` (started as the README says), and what comes back is compared with what the document
shows. Examples of new endpoints follow the same format and run without any change here.

The format (every ```sh block of docs/api.md is run; see "Examples" at the top of the document):

- A *command* is one shell command as a reader pastes it; it may span lines (a trailing `\\`,
  an open quote, a here-document). All commands run in one bash session, in document order, so
  variables (`BASE`, `KEY`, `URL=$(...)`) carry on from block to block, in one directory (where
  the first blocks make face.png and clip.mp4). Comments before a command are prose.
- Right under a command, `# => ` shows its answer: the HTTP status of its (last) curl, then
  what it prints, JSON or text. Lines starting with `#` and two or more spaces continue it:

      curl -s "$BASE/v1/agents/agt_y6iEiCwl0WfctJM3Wv__fA" -H "Authorization: Bearer $KEY"
      # => 200 {"data":{"agent_id":"agt_y6iEiCwl0WfctJM3Wv__fA","name":"Ada",
      #  "greeting":"Hello!", ...}}

  A command without `# =>` must still exit 0 with every curl answered below 400.
- Comparing: the status exactly. JSON: the same field names (all of them, unless the object ends
  with `...`), the same types, arrays of the same length (unless they end with `...`), and the
  same values, except that in a string `...` stands for any text and a timestamp for any
  timestamp, and numbers under a key of MEASURED (durations, sizes: they differ from run to run)
  are compared by type only (tests/docs_answers.py). Text: the same, with the string rules.
- Ids: the document's ids (`agt_y6iEiCwl0WfctJM3Wv__fA`) stand for those the service makes.
  The first answer that shows one binds it to the id at the same place in the real answer; from
  then on it is replaced by that id in commands and answers. A command using an id that no
  earlier answer showed fails: each id of the story comes from a step the reader ran.
- A command whose curls only read (GET) is repeated until its answer matches, for up to
  POLL_S seconds, as a reader polls a task.
- `websocat URL` runs the conversation shown under it with the `websockets` client: a bare line
  is a frame sent; `# => FRAME` a frame received (compared as JSON); `# => ...` lets frames go
  by until the next one shown arrives. The socket closes at the end of the block.
- Hosts: the service at 127.0.0.1:8000 (the test puts its own port in), and the reader's own
  services under `example.com` (`https://receiver.example.com/...`), which the test points at a
  receiver of its own on loopback (its serve runs with AVATAR_WEBHOOK_ALLOW_PRIVATE=1). No
  example reaches beyond this machine.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
from websockets.sync.client import connect

from tests.docs_answers import Ids, Mismatch, compare_output, json_with_more
from tests.docs_shell import BashSession, LocalReceiver, Result
from tests.reader import ROOT, SHELL_BLOCK, FreshServe, as_the_reader_runs_it, fresh_serve

pytestmark = pytest.mark.slow

DOC = ROOT / "docs" / "api.md"
POLL_S = 30.0
_EXPECT = re.compile(r"^# =>(?: (.*))?$")
_CONTINUED = re.compile(r"^#  +(.*)$")
_STATUS = re.compile(r"^(\d{3})(?:\s+(.*))?$", re.S)
_READER_HOST = re.compile(r"https://[a-z0-9-]+\.example\.com")
_URL_HOST = re.compile(r"\b(?:https?|wss?)://([^/\s\"'$]+)")


@dataclass
class Step:
    line: int  # in docs/api.md, for messages
    command: str
    expected: str | None = None  # the text after `# => `, continuation lines joined
    transcript: list[str] = field(default_factory=list)  # websocat: sent/received lines

    @property
    def where(self) -> str:
        return f"docs/api.md:{self.line}: {self.command.splitlines()[0]}"


# Reading the document


def _complete(command: str) -> bool:
    """Whether bash reads `command` as a whole command (not ending inside quotes, a line
    continuation or a here-document)."""
    if command.endswith("\\"):
        return False
    for delimiter in re.findall(r"<<-?\s*'?\"?(\w+)", command):
        if not re.search(rf"^\s*{delimiter}$", command, re.M):
            return False
    result = subprocess.run(["bash", "-n", "-c", command], capture_output=True, check=False)
    return result.returncode == 0


def _block_steps(block: str, first_line: int) -> list[Step]:
    steps: list[Step] = []
    lines = block.splitlines()
    index = 0
    while index < len(lines):
        line = lines[index]
        if not line.strip() or (line.startswith("#") and not _EXPECT.match(line)):
            index += 1
            continue
        if _EXPECT.match(line):
            raise AssertionError(f"docs/api.md:{first_line + index}: `# =>` under no command")
        start = index
        command = line
        while not _complete(command):
            index += 1
            assert index < len(lines), f"docs/api.md:{first_line + start}: command never ends"
            command += "\n" + lines[index]
        index += 1
        step = Step(first_line + start, command)
        if command.startswith("websocat "):
            step.transcript = lines[index:]
            index = len(lines)
        elif index < len(lines) and (match := _EXPECT.match(lines[index])):
            expected = [match[1] or ""]
            index += 1
            while index < len(lines) and (more := _CONTINUED.match(lines[index])):
                expected.append(more[1])
                index += 1
            step.expected = "\n".join(expected)
        steps.append(step)
    return steps


def read_steps(text: str) -> list[Step]:
    steps = []
    for match in SHELL_BLOCK.finditer(text):
        first_line = text.count("\n", 0, match.start(1)) + 1
        block_steps = _block_steps(match[1], first_line)
        assert block_steps, f"docs/api.md:{first_line}: a ```sh block without a command"
        steps.extend(block_steps)
    return steps


# Running


@dataclass
class Story:
    bash: BashSession
    receiver_base: str
    ids: Ids = field(default_factory=Ids)
    ran: int = 0

    def command_text(self, step: Step) -> str:
        return self.ids.put_in(_READER_HOST.sub(self.receiver_base, step.command), step.where)

    def expected_text(self, text: str) -> str:
        return _READER_HOST.sub(self.receiver_base, text)

    def run(self, step: Step) -> None:
        if step.transcript:
            self._converse(step)
        else:
            self._run_command(step)
        self.ran += 1

    def _run_command(self, step: Step) -> None:
        deadline = time.monotonic() + POLL_S
        while True:
            result = self.bash.run(self.command_text(step))
            try:
                self._check(step, result)
                return
            except Mismatch as exc:
                reads_only = result.methods and set(result.methods) <= {"GET", "HEAD"}
                if not reads_only or time.monotonic() > deadline:
                    raise Mismatch(f"{step.where}\n{exc}\n{result.describe()}") from None
                time.sleep(0.2)

    def _check(self, step: Step, result: Result) -> None:
        if result.returncode != 0:
            raise Mismatch(f"exit status {result.returncode}")
        if step.expected is None:
            if any(status >= 400 for status in result.statuses):
                raise Mismatch(f"answered {result.statuses}, and the document shows no answer")
            return
        status_and_body = _STATUS.match(step.expected)
        body = step.expected
        if result.statuses:
            if not status_and_body:
                raise Mismatch("`# =>` under a curl command must begin with its status")
            if result.statuses[-1] != int(status_and_body[1]):
                raise Mismatch(f"status {result.statuses[-1]}, the document shows {body[:3]}")
            body = status_and_body[2] or ""
        compare_output(self.expected_text(body), result.stdout, self.ids, step.where)

    def _converse(self, step: Step) -> None:
        (url,) = [word for word in shlex.split(self.command_text(step))[1:] if "://" in word]
        with connect(url, open_timeout=10) as socket:
            waiting = False
            for line in step.transcript:
                where = f"{step.where} (frame {line!r})"
                if match := _EXPECT.match(line):
                    if match[1] == "...":
                        waiting = True
                        continue
                    self._receive(socket, self.expected_text(match[1]), where, waiting)
                    waiting = False
                elif line.strip() and not line.startswith("#"):
                    socket.send(self.ids.put_in(line, where))

    def _receive(self, socket, expected: str, where: str, waiting: bool) -> None:
        deadline = time.monotonic() + POLL_S
        while True:
            frame = socket.recv(timeout=max(deadline - time.monotonic(), 0.1))
            try:
                compare_output(expected, frame, self.ids, where)
                return
            except Mismatch:
                if not waiting or time.monotonic() > deadline:
                    raise


# The tests


def document() -> str:
    return DOC.read_text(encoding="utf-8")


def test_every_example_has_the_runnable_form() -> None:
    """Without a server: every example parses, shows valid answers, and names no host beyond
    this machine but the reader's own services under example.com."""
    text = document()
    steps = read_steps(text)
    assert len(steps) >= 35
    for step in steps:
        for host in _URL_HOST.findall(step.command):
            assert host == "127.0.0.1:8000" or host.endswith(".example.com"), step.where
        match = _STATUS.match(step.expected or "")
        if match and match[2] and match[2].lstrip().startswith(("{", "[")):
            json_with_more(match[2])  # raises on a malformed answer
    fenced = re.findall(r"^```(\w*)\n(.*?)^```$", text, re.S | re.M)
    for language, body in fenced:
        if re.search(r"^(curl|websocat) ", body, re.M):
            assert language == "sh", f"an example in a ```{language} block is not run"


@pytest.fixture(scope="module")
def reader(tmp_path_factory) -> Iterator[tuple[FreshServe, str]]:
    receiver = LocalReceiver()
    try:
        directory = tmp_path_factory.mktemp("api-reader")
        with fresh_serve(directory, AVATAR_WEBHOOK_ALLOW_PRIVATE="1") as server:
            yield server, receiver.base
    finally:
        receiver.close()


def test_every_example_runs_as_documented(reader) -> None:
    server, receiver_base = reader
    for tool in ("bash", "curl"):
        if shutil.which(tool) is None:
            pytest.skip(f"the examples use {tool}, which this machine lacks")
    steps = read_steps(as_the_reader_runs_it(document(), server))
    with BashSession(server.directory, server.env) as bash:
        story = Story(bash, receiver_base)
        for step in steps:
            story.run(step)
    assert story.ran == len(steps)


def test_the_comparison_catches_what_differs() -> None:
    """The comparison itself: what it lets through and what it does not."""
    ids = Ids()
    shown = (
        '{"data":{"agent_id":"agt_y6iEiCwl0WfctJM3Wv__fA","n":1,"at":"2026-01-01T00:00:00.000Z"}}'
    )
    real = (
        '{"data":{"agent_id":"agt_AAAAAAAAAAAAAAAAAAAAAA","n":1,"at":"2027-02-03T04:05:06.789Z"}}'
    )
    compare_output(shown, real, ids, "x")
    assert ids.bound == {"agt_y6iEiCwl0WfctJM3Wv__fA": "agt_AAAAAAAAAAAAAAAAAAAAAA"}
    for wrong in [
        real.replace('"n":1', '"n":2'),  # a stated value
        real.replace('"n":1', '"n":1.0'),  # a type
        real.replace('"n":1', '"m":1'),  # a field name
        real.replace("agt_AAAAAAAAAAAAAAAAAAAAAA", "agt_BBBBBBBBBBBBBBBBBBBBBB"),  # a bound id
    ]:
        with pytest.raises(Mismatch):
            compare_output(shown, wrong, ids, "x")
    compare_output(
        '{"items":[{"seconds":0.5}, ...], ...}', '{"items":[{"seconds":2.0},1],"x":0}', ids, "x"
    )
    compare_output('"v1,...=" and more', '"v1,abc=" and more', ids, "x")
    with pytest.raises(AssertionError, match="no earlier answer"):
        ids.put_in("curl rt_KQpvFpQujo-e_MHrEzSFTg", "x")
