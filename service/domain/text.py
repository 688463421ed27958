"""Short texts that people read in lists and on pages (agent and avatar names, route labels):
no control characters (C0, DEL, C1: a NUL, an ESC sequence or a line break would garble
a terminal, a log line or a page) and no bidirectional overrides or isolates (U+202A-U+202E,
U+2066-U+2069), which make a text display in an order other than its own."""

from __future__ import annotations

import re

from service.domain.errors import ValidationFailed

_REFUSED = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def check_display_text(field: str, value: str | None) -> None:
    """ValidationFailed naming `field` when `value` holds a refused character."""
    if value is not None and (found := _REFUSED.search(value)):
        raise ValidationFailed.field(
            field,
            f"must not hold control characters or bidirectional overrides "
            f"(U+{ord(found[0]):04X} at character {found.start() + 1})",
        )
