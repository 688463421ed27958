"""The webhook outbox and the generation of each owner's webhook secret.

A delivery is claimed for a while before it is sent (senders on every node skip the rows
another claim holds); a sender that dies mid-send leaves its claim to lapse, and the delivery
is sent again (with the same webhook id) after that."""

from __future__ import annotations

from service.domain.models import Delivery, WebhookOutcome
from service.store.postgres.base import Conn, PostgresBase, fetch_one
from service.store.rows import DELIVERY_COLUMNS, delivery_of, dump_json


async def _claim_delivery(conn: Conn, now_ms: int, claim_until_ms: int) -> Delivery | None:
    row = await fetch_one(
        conn,
        "WITH next AS (SELECT task_id AS next_id FROM webhook_outbox WHERE done_ms IS NULL"
        " AND (claimed_until_ms IS NULL OR claimed_until_ms <= %s) ORDER BY created_ms"
        " LIMIT 1 FOR UPDATE SKIP LOCKED)"
        " UPDATE webhook_outbox SET claimed_until_ms = %s, attempts = attempts + 1 FROM next"
        f" WHERE task_id = next_id RETURNING {DELIVERY_COLUMNS}",
        (now_ms, claim_until_ms),
    )
    return None if row is None else delivery_of(row)


async def _record_delivery(conn: Conn, task_id: str, outcome: WebhookOutcome, done_ms: int) -> None:
    await conn.execute(
        "UPDATE webhook_outbox SET done_ms = %s WHERE task_id = %s", (done_ms, task_id)
    )
    await conn.execute(
        "UPDATE tasks SET webhook_outcome = %s, version = version + 1 WHERE task_id = %s",
        (dump_json(outcome), task_id),
    )


async def _release_claims(conn: Conn) -> int:
    cursor = await conn.execute(
        "UPDATE webhook_outbox SET claimed_until_ms = NULL"
        " WHERE done_ms IS NULL AND claimed_until_ms IS NOT NULL"
    )
    return cursor.rowcount


async def _set_nonce(conn: Conn, owner_id: str, nonce: str, now_ms: int) -> None:
    await conn.execute(
        "INSERT INTO webhook_secrets (owner_id, nonce, created_ms) VALUES (%s, %s, %s)"
        " ON CONFLICT (owner_id) DO UPDATE SET nonce = excluded.nonce,"
        " created_ms = excluded.created_ms",
        (owner_id, nonce, now_ms),
    )


class WebhooksMixin(PostgresBase):
    async def claim_delivery(self, now_ms: int, claim_until_ms: int) -> Delivery | None:
        return await self._write(_claim_delivery, now_ms, claim_until_ms)

    async def record_delivery(self, task_id: str, outcome: WebhookOutcome, done_ms: int) -> None:
        await self._write(_record_delivery, task_id, outcome, done_ms)

    async def release_delivery_claims(self) -> int:
        return await self._write(_release_claims)

    async def wait_for_deliveries(self, timeout_s: float) -> None:
        await self._delivery_changes.wait(timeout_s)

    async def webhook_nonce(self, owner_id: str) -> str | None:
        sql = "SELECT nonce FROM webhook_secrets WHERE owner_id = %s"
        return await self._one(sql, (owner_id,), lambda row: row[0])

    async def rotate_webhook_nonce(self, owner_id: str, nonce: str, now_ms: int) -> None:
        await self._write(_set_nonce, owner_id, nonce, now_ms)
