"""Where the replies of live conversations come from.

Make one `Responders` per process and close it on shutdown; for each reply,
`responders.responder_for(request).reply(request)` yields the text in deltas. A failure
raises `ResponderError`, whose message is meant for the visitor. Three responders exist: the
agent's own endpoint (custom agents), an OpenAI-compatible API (AVATAR_LLM_BASE_URL), and an
offline one that says no language model is configured and echoes the visitor."""

from service.domain.errors import ResponderError
from service.responders.factory import Responders
from service.responders.models import CustomAgent, ReplyRequest, Responder, Turn
from service.responders.upstream import Timeouts

__all__ = [
    "CustomAgent",
    "ReplyRequest",
    "Responder",
    "ResponderError",
    "Responders",
    "Timeouts",
    "Turn",
]
