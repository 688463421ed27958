"""How an answer a document shows is compared with the real one (the format is described in
tests/test_api_docs.py): field names, types and the values the document states, with its ids
bound to the service's as the story goes on."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from service.domain.ids import PREFIXES

# Numbers that differ from run to run: compared by type only.
MEASURED = frozenset(
    {
        "seconds",
        "billable_seconds",
        "route_conversation_seconds",
        "session_seconds",
        "size_bytes",
        "queue_position",
        "output_duration",
        "input_duration",
        "tts_seconds",
        "stt_seconds",
        "talking_video_seconds",
        "motion_video_seconds",
    }
)
# The service's ids (service.domain.ids: a known prefix, then 22 URL-safe base64 characters).
ID = rf"(?<![\w-])(?:{'|'.join(sorted(PREFIXES))})_[\w-]{{22}}(?![\w-])"
TIMESTAMP = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z"
_STRING_PARTS = re.compile(rf"({ID}|{TIMESTAMP}|\.\.\.)")
_ID = re.compile(ID)
MORE = "\u2026more"  # what a bare `...` becomes inside expected JSON


class Mismatch(AssertionError):
    pass


@dataclass
class Ids:
    """The document's ids bound to the service's, as the story goes on."""

    bound: dict[str, str] = field(default_factory=dict)

    def put_in(self, text: str, where: str) -> str:
        def real(match: re.Match) -> str:
            if match[0] not in self.bound:
                raise AssertionError(f"{where}: uses {match[0]}, which no earlier answer showed")
            return self.bound[match[0]]

        return _ID.sub(real, text)


def _string_pattern(expected: str, ids: Ids, new: dict[str, str]) -> tuple[re.Pattern, list]:
    pattern, groups = [], []
    for part in _STRING_PARTS.split(expected):
        if part == "...":
            pattern.append(".*")
        elif re.fullmatch(TIMESTAMP, part):
            pattern.append(TIMESTAMP)
        elif re.fullmatch(ID, part):
            known = ids.bound.get(part) or new.get(part)
            if known:
                pattern.append(re.escape(known))
            elif part in groups:
                pattern.append(f"(?P=g{groups.index(part)})")
            else:
                prefix = part.split("_", 1)[0]
                pattern.append(f"(?P<g{len(groups)}>{prefix}_[A-Za-z0-9_-]{{22}})")
                groups.append(part)
        else:
            pattern.append(re.escape(part))
    return re.compile("".join(pattern), re.S), groups


def _match_string(expected: str, actual: str, ids: Ids, new: dict[str, str], path: str) -> None:
    pattern, groups = _string_pattern(expected, ids, new)
    match = pattern.fullmatch(actual)
    if not match:
        raise Mismatch(f"{path}: expected {expected!r}, got {actual!r}")
    for index, doc_id in enumerate(groups):
        new[doc_id] = match[f"g{index}"]


def _compare(expected, actual, ids: Ids, new: dict[str, str], path: str, key: str = "") -> None:
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            raise Mismatch(f"{path}: expected an object, got {actual!r}")
        shown = {k: v for k, v in expected.items() if k != MORE}
        missing, extra = set(shown) - set(actual), set(actual) - set(shown)
        if missing or (extra and MORE not in expected):
            raise Mismatch(f"{path}: fields missing {sorted(missing)}, not shown {sorted(extra)}")
        for name, value in shown.items():
            _compare(value, actual[name], ids, new, f"{path}.{name}", name)
    elif isinstance(expected, list):
        more = bool(expected) and expected[-1] == MORE
        shown = expected[:-1] if more else expected
        if not isinstance(actual, list) or len(actual) < len(shown):
            raise Mismatch(f"{path}: expected {len(shown)} items, got {actual!r}")
        if not more and len(actual) != len(shown):
            raise Mismatch(f"{path}: expected {len(shown)} items, got {len(actual)}")
        for index, (item, got) in enumerate(zip(shown, actual, strict=False)):
            _compare(item, got, ids, new, f"{path}[{index}]")
    elif isinstance(expected, str):
        if not isinstance(actual, str):
            raise Mismatch(f"{path}: expected a string, got {actual!r}")
        _match_string(expected, actual, ids, new, path)
    elif isinstance(expected, bool) or expected is None:
        if actual is not expected:
            raise Mismatch(f"{path}: expected {expected!r}, got {actual!r}")
    elif type(actual) is not type(expected):
        raise Mismatch(f"{path}: expected a {type(expected).__name__}, got {actual!r}")
    elif key not in MEASURED and actual != expected:
        raise Mismatch(f"{path}: expected {expected!r}, got {actual!r}")


def json_with_more(text: str):
    """Parse expected JSON in which a bare `...` (outside strings) closes an object or array
    whose other fields or items are not shown."""
    out, stack, in_string, index = [], [], False, 0
    while index < len(text):
        char = text[index]
        if in_string:
            out.append(char)
            if char == "\\":
                out.append(text[index + 1])
                index += 1
            elif char == '"':
                in_string = False
        elif text.startswith("...", index):
            out.append(f'"{MORE}": 0' if stack and stack[-1] == "{" else f'"{MORE}"')
            index += 2
        else:
            in_string = char == '"'
            if char in "{[":
                stack.append(char)
            elif char in "}]":
                stack.pop()
            out.append(char)
        index += 1
    return json.loads("".join(out))


def compare_output(expected: str, actual: str, ids: Ids, where: str) -> None:
    """Compare what a command printed with what the document shows; bind new ids on success."""
    new: dict[str, str] = {}
    expected, actual = expected.strip(), actual.strip()
    if expected.startswith(("{", "[")):
        shown = json_with_more(expected)
        try:
            got = json.loads(actual)
        except ValueError:
            raise Mismatch(f"{where}: expected JSON, got {actual!r}") from None
        _compare(shown, got, ids, new, "answer")
    else:
        _match_string(expected, actual, ids, new, "output")
    ids.bound.update(new)
