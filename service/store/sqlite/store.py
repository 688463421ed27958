"""`SqliteStore`: the `Store` interface over one SQLite file in the data dir."""

from __future__ import annotations

from service.store.shared.conversations import ConversationsMixin
from service.store.shared.sessions import SessionsMixin
from service.store.shared.sockets import SocketHoldsMixin
from service.store.shared.tasks import TasksMixin
from service.store.shared.webhooks import WebhooksMixin
from service.store.sqlite.accounts import AccountsMixin
from service.store.sqlite.catalog import CatalogMixin
from service.store.sqlite.voices import VoicesMixin


class SqliteStore(
    AccountsMixin,
    CatalogMixin,
    SessionsMixin,
    ConversationsMixin,
    SocketHoldsMixin,
    TasksMixin,
    WebhooksMixin,
    VoicesMixin,
):
    """Opened with `SqliteStore(path, now_ms)`; applies pending migrations on open."""
