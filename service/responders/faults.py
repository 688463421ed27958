"""How a failed reply reaches the visitor: every upstream problem is raised inside the package
as a `Fault` (a kind and a detail); `for_visitor` turns it into a ResponderError whose message
is one of the sentences below, and logs the detail with secrets blanked out."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterable
from contextlib import aclosing

from service.domain.errors import ResponderError

log = logging.getLogger("service.responders")

LANGUAGE_MODEL = "The language model"
AGENT_SERVICE = "The agent's service"

# What the visitor reads, by kind of fault; {who} is one of the two names above.
SAYS = {
    "no_model": "No language model is chosen for this agent, and the server has no default.",
    "refused": "{who} is at an address this server may not call.",
    "unreachable": "{who} could not be reached.",
    "timeout": "{who} did not answer in time.",
    "status": "{who} answered with an error.",
    "malformed": "{who} sent a reply that could not be read.",
    "failed": "{who} reported an error.",
    "cut": "{who} stopped before finishing its reply.",
    "empty": "{who} gave an empty reply.",
    "unexpected": "{who} could not answer.",
}


class Fault(Exception):
    """A reply failed; `kind` (a key of SAYS) picks the visitor's sentence, the message is the
    detail for the log."""

    def __init__(self, kind: str, detail: str) -> None:
        assert kind in SAYS, kind
        super().__init__(detail)
        self.kind = kind


def redact(text: str, secrets: Iterable[str | None]) -> str:
    for secret in secrets:
        if secret:
            text = text.replace(secret, "[redacted]")
    return text


async def for_visitor(
    deltas: AsyncIterator[str], *, who: str, conversation_id: str, secrets: Iterable[str | None]
) -> AsyncIterator[str]:
    """`deltas` without empty strings; a Fault, a reply without any text, or anything
    unforeseen becomes a ResponderError for the visitor (after the deltas already given)."""
    said_something = False
    try:
        async with aclosing(deltas):
            async for delta in deltas:
                if delta:
                    said_something = True
                    yield delta
        if not said_something:
            raise Fault("empty", "the reply finished without any text")
    except Fault as fault:
        detail = redact(str(fault), secrets)
        log.warning("conversation %s: %s failed (%s): %s", conversation_id, who, fault.kind, detail)
        raise ResponderError(SAYS[fault.kind].format(who=who)) from None
    except Exception:
        # A bug here must still leave the visitor a conversation that goes on.
        log.exception("conversation %s: %s failed unexpectedly", conversation_id, who)
        raise ResponderError(SAYS["unexpected"].format(who=who)) from None
