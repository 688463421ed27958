"""The responders of one process, chosen per reply, and the HTTP clients they share."""

from __future__ import annotations

from functools import cached_property
from types import TracebackType

import httpx

from service.responders.custom_agent import CustomAgentResponder
from service.responders.models import ReplyRequest, Responder
from service.responders.net import LIMITS, checked_client
from service.responders.offline import OfflineResponder
from service.responders.openai_chat import LanguageModelResponder
from service.responders.upstream import Timeouts
from service.settings import Settings


class Responders:
    """Make one per process (an HTTP worker's startup) and close it on shutdown: its clients
    keep connections open for reuse. Clients are made on first use, so an offline service
    opens none. Usable as `async with Responders(settings) as responders:`."""

    def __init__(self, settings: Settings, *, timeouts: Timeouts | None = None) -> None:
        self._settings = settings
        self._timeouts = timeouts or Timeouts()
        self._clients: list[httpx.AsyncClient] = []
        self._offline = OfflineResponder()

    def responder_for(self, request: ReplyRequest) -> Responder:
        """The agent's own endpoint when it has one; else the configured language model; else
        the offline responder."""
        if request.custom_agent is not None:
            return self._custom_agent
        if self._settings.llm_base_url:
            return self._language_model
        return self._offline

    @cached_property
    def _language_model(self) -> LanguageModelResponder:
        # The operator's own endpoint (often on a private network): no address check, and the
        # environment's proxy and CA settings apply as they would to other tools.
        client = httpx.AsyncClient(
            timeout=self._timeouts.for_httpx(), limits=LIMITS, follow_redirects=False
        )
        self._clients.append(client)
        return LanguageModelResponder(
            client,
            base_url=self._settings.llm_base_url or "",
            api_key=self._settings.llm_api_key,
            default_model=self._settings.llm_default_model,
            timeouts=self._timeouts,
        )

    @cached_property
    def _custom_agent(self) -> CustomAgentResponder:
        allow_private = self._settings.webhook_allow_private
        client = checked_client(allow_private=allow_private, timeout=self._timeouts.for_httpx())
        self._clients.append(client)
        return CustomAgentResponder(client, allow_private=allow_private, timeouts=self._timeouts)

    async def aclose(self) -> None:
        for client in self._clients:
            await client.aclose()
        self._clients.clear()

    async def __aenter__(self) -> Responders:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()
