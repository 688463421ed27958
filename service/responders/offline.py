"""The responder used when no language model is configured: it says so and echoes the
visitor, at once (the conversation benchmark measures the service around it)."""

from __future__ import annotations

from collections.abc import AsyncIterator

from service.responders.models import ReplyRequest

# Sent as separate deltas, so a client takes its streaming path even offline.
NOTICE = (
    "No language model is configured on this server, ",
    "so I can only repeat what you said: ",
)


class OfflineResponder:
    async def reply(self, request: ReplyRequest) -> AsyncIterator[str]:
        said = next((turn.text for turn in reversed(request.history) if turn.role == "user"), "")
        for part in NOTICE:
            yield part
        yield said
