"""The webhook outbox and the generation of each owner's webhook secret, for both databases.

A delivery is claimed for a while before it is sent (on PostgreSQL, senders on every node skip
the rows another claim holds); a sender that dies mid-send leaves its claim to lapse, and the
delivery is sent again (with the same webhook id) after that."""

from __future__ import annotations

from service.domain.models import Delivery, WebhookOutcome
from service.store.rows import DELIVERY_COLUMNS, delivery_of, dump_json
from service.store.shared.base import SharedBase
from service.store.shared.steps import Body, Query


def _claim_delivery(now_ms: int, claim_until_ms: int) -> Body[Delivery | None]:
    claimed = yield Query(
        "UPDATE webhook_outbox SET claimed_until_ms = ?, attempts = attempts + 1"
        " WHERE task_id = (SELECT task_id FROM webhook_outbox WHERE done_ms IS NULL"
        " AND (claimed_until_ms IS NULL OR claimed_until_ms <= ?) ORDER BY created_ms"
        f" LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING {DELIVERY_COLUMNS}",
        (claim_until_ms, now_ms),
    )
    row = claimed.first()
    return None if row is None else delivery_of(row)


def _record_delivery(task_id: str, outcome: WebhookOutcome, done_ms: int) -> Body[None]:
    yield Query(
        "UPDATE webhook_outbox SET done_ms = ? WHERE task_id = ?", (done_ms, task_id), wait=False
    )
    yield Query(
        "UPDATE tasks SET webhook_outcome = ?, version = version + 1 WHERE task_id = ?",
        (dump_json(outcome), task_id),
        wait=False,
    )


def _release_claims() -> Body[int]:
    released = yield Query(
        "UPDATE webhook_outbox SET claimed_until_ms = NULL"
        " WHERE done_ms IS NULL AND claimed_until_ms IS NOT NULL"
    )
    return released.rowcount


def _set_nonce(owner_id: str, nonce: str, now_ms: int) -> Body[None]:
    yield Query(
        "INSERT INTO webhook_secrets (owner_id, nonce, created_ms) VALUES (?, ?, ?)"
        " ON CONFLICT (owner_id) DO UPDATE SET nonce = excluded.nonce,"
        " created_ms = excluded.created_ms",
        (owner_id, nonce, now_ms),
        wait=False,
    )


class WebhooksMixin(SharedBase):
    async def claim_delivery(self, now_ms: int, claim_until_ms: int) -> Delivery | None:
        return await self._run(_claim_delivery(now_ms, claim_until_ms))

    async def record_delivery(self, task_id: str, outcome: WebhookOutcome, done_ms: int) -> None:
        await self._run(_record_delivery(task_id, outcome, done_ms))

    async def release_delivery_claims(self) -> int:
        return await self._run(_release_claims())

    async def wait_for_deliveries(self, timeout_s: float) -> None:
        await self._delivery_changes.wait(timeout_s)

    async def webhook_nonce(self, owner_id: str) -> str | None:
        sql = "SELECT nonce FROM webhook_secrets WHERE owner_id = ?"
        return await self._read_one(sql, (owner_id,), lambda row: row[0])

    async def rotate_webhook_nonce(self, owner_id: str, nonce: str, now_ms: int) -> None:
        await self._run(_set_nonce(owner_id, nonce, now_ms))
