"""Webhooks: one signed POST per final task to a receiver on loopback, the secret endpoints,
failed deliveries recorded on the task (3xx, 500, refused targets, timeouts), a delivery sent
once more after its sender died mid-send, and the TLS name checked against a local HTTPS
receiver. Final tasks are made through the domain (submit, then cancel), and the sender runs
in the test's app (the sender of a real `serve`: test_webhook_sender.py)."""

from __future__ import annotations

import json
import re
import shutil
import ssl
import subprocess

import pytest

from service.domain import deliveries
from service.domain.files import upload_key
from service.domain.ids import new_id
from service.domain.kinds import task_kind
from service.domain.models import Task, WebhookTarget
from service.domain.tasks import CANCELED, cancel, new_task, submit
from service.domain.webhook_signing import SECRET_PREFIX, verify
from service.domain.webhooks import TargetRefused, check_addresses
from service.outbound import is_public_address
from service.workers.webhook_client import HttpTransport
from service.workers.webhooks import WebhookSender

# Final tasks and the sender, in a test app


async def make_final_task(ctx, owner_id: str, target: WebhookTarget, facts: dict) -> Task:
    """An upscale task, queued then canceled: final, with its delivery in the outbox."""
    task_id = new_id("tsk")
    params = {"resolution": "1080p", "input_key": upload_key(task_id)}
    now = ctx.clock.now_ms()
    await submit(
        ctx, new_task(task_id, owner_id, "upscale", params, now, target, input=facts), None
    )
    return await cancel(ctx, owner_id, task_id, task_kind("upscale"))


class Hooks:
    def __init__(self, api, facts: dict) -> None:
        self.api, self.ctx, self.facts = api, api.ctx, facts

    def run(self, fn, *args):
        with self.api.client.portal() as portal:
            return portal.call(fn, *args)

    def owner(self, name: str = "alice") -> tuple[str, dict[str, str]]:
        auth = self.api.key(name)
        return self.run(self.ctx.store.get_owner_by_name, name).owner_id, auth

    def final_task(self, owner_id: str, url: str, token: str | None = None) -> Task:
        target = WebhookTarget(url, token)
        return self.run(make_final_task, self.ctx, owner_id, target, self.facts)

    def send(self, transport=None) -> None:
        """What the sender of `serve` does once awake: send everything claimable."""
        sender = WebhookSender(self.ctx, transport or HttpTransport(), "http://avatars.test")

        async def once() -> None:
            await sender.send_claimable()
            await sender.drain()

        self.run(once)

    def task(self, task_id: str) -> Task:
        return self.run(self.ctx.store.get_task, task_id)

    def secret(self, auth: dict[str, str]) -> str:
        response = self.api.get("/v1/webhooks/secret", auth)
        assert response.status_code == 200, response.text
        return response.json()["data"]["secret"]

    def verifies(self, secret: str, request) -> bool:
        return verify(secret, request.headers, request.body, now_s=self.api.clock.now_ms() / 1000)


@pytest.fixture
def hooks(make_api, upscale_facts) -> Hooks:
    return Hooks(make_api(webhook_allow_private=True), upscale_facts)


def test_one_signed_delivery_per_final_task(hooks, receiver):
    owner_id, auth = hooks.owner()
    with_token = hooks.final_task(owner_id, receiver.url(), token="tok-123")
    without = hooks.final_task(owner_id, receiver.url())
    hooks.send()
    hooks.send()  # nothing is owed any more
    requests = {r.headers["webhook-id"]: r for r in receiver.wait_for(2)}
    assert len(receiver.requests) == 2 and set(requests) == {with_token.task_id, without.task_id}
    secret = hooks.secret(auth)
    for task in (with_token, without):
        request = requests[task.task_id]
        assert request.headers["content-type"] == "application/json"
        assert request.headers["webhook-timestamp"] == str(hooks.api.clock.now_ms() // 1000)
        assert hooks.verifies(secret, request)
        data = json.loads(request.body)["data"]
        assert (data["task_id"], data["status"], data["stage"]) == (
            task.task_id,
            "CANCELED",
            "canceled",
        )
        assert data["completed_at"] is not None and "error" not in data and "result" not in data
        stored = hooks.task(task.task_id)
        assert stored.status == CANCELED
        outcome = stored.webhook_outcome
        assert (outcome.delivered, outcome.status_code, outcome.error) == (True, 200, None)
        assert outcome.attempted_ms == hooks.api.clock.now_ms()
    assert requests[with_token.task_id].headers["authorization"] == "Bearer tok-123"
    assert "authorization" not in requests[without.task_id].headers


def test_the_secret_endpoints(hooks):
    _, alice = hooks.owner("alice")
    _, bob = hooks.owner("bob")
    first = hooks.api.get("/v1/webhooks/secret", alice)
    assert first.headers["cache-control"] == "no-store"
    secret = first.json()["data"]["secret"]
    assert re.fullmatch(r"whsec_[A-Za-z0-9+/]{43}=", secret)
    assert hooks.secret(alice) == secret != hooks.secret(bob)
    rotated = hooks.api.post("/v1/webhooks/secret/rotate", alice)
    assert rotated.status_code == 200 and rotated.headers["cache-control"] == "no-store"
    new = rotated.json()["data"]["secret"]
    assert new.startswith(SECRET_PREFIX) and new != secret
    assert hooks.secret(alice) == new
    assert hooks.api.get("/v1/webhooks/secret").status_code == 401


def test_rotation_voids_signatures_made_with_the_old_secret(hooks, receiver):
    owner_id, auth = hooks.owner()
    old = hooks.secret(auth)
    hooks.final_task(owner_id, receiver.url())
    hooks.send()
    before = receiver.wait_for(1)[0]
    assert hooks.verifies(old, before)
    new = hooks.api.post("/v1/webhooks/secret/rotate", auth).json()["data"]["secret"]
    assert not hooks.verifies(new, before)
    hooks.final_task(owner_id, receiver.url())
    hooks.send()
    after = receiver.wait_for(2)[1]
    assert hooks.verifies(new, after) and not hooks.verifies(old, after)


@pytest.mark.parametrize(
    ("status", "message"), [(302, "a redirect, which is not followed"), (500, "answered 500")]
)
def test_a_redirect_or_an_error_answer_is_a_failed_delivery(hooks, receiver, status, message):
    receiver.status = status
    owner_id, _ = hooks.owner()
    task = hooks.final_task(owner_id, receiver.url())
    hooks.send()
    assert [r.path for r in receiver.wait_for(1)] == ["/hook"]  # the redirect is not followed
    stored = hooks.task(task.task_id)
    assert stored.status == CANCELED
    outcome = stored.webhook_outcome
    assert (outcome.delivered, outcome.status_code) == (False, status)
    assert message in outcome.error
    hooks.send()
    assert len(receiver.requests) == 1  # no retry


@pytest.mark.parametrize(
    ("host", "scheme", "message"),
    [
        # A name that resolves to loopback (FixedDns), refused on its resolved address.
        ("hooks.example.test", "https", "hooks.example.test resolves to 127.0.0.1, which is"),
        # A loopback name, refused before any lookup (a URL stored before the rule was).
        ("localhost", "https", "it names a host that leads only to this machine"),
        ("hooks.example.test", "http", "The webhook URL is refused: it must be an https URL"),
    ],
)
def test_private_targets_are_refused_unless_allowed(
    make_api, receiver, upscale_facts, host, scheme, message
):
    hooks = Hooks(make_api(webhook_allow_private=False), upscale_facts)
    owner_id, _ = hooks.owner()
    task = hooks.final_task(owner_id, receiver.url(host=host, scheme=scheme))
    hooks.send(FixedDns())
    outcome = hooks.task(task.task_id).webhook_outcome
    assert (outcome.delivered, outcome.status_code) == (False, None)
    assert message in outcome.error
    assert receiver.requests == []
    assert hooks.task(task.task_id).status == CANCELED


@pytest.mark.parametrize(
    "addresses",
    [["8.8.8.8", "10.0.0.1"], ["::ffff:127.0.0.1"], ["64:ff9b::a00:1"], ["169.254.169.254"], []],
)
def test_every_resolved_address_must_be_public(addresses):
    with pytest.raises(TargetRefused):
        check_addresses("hooks.example", addresses, allow_private=False)
    check_addresses("hooks.example", addresses or ["127.0.0.1"], allow_private=True)
    check_addresses("hooks.example", ["8.8.8.8", "2606:4700::1111"], allow_private=False)


@pytest.mark.parametrize(
    ("address", "public"),
    [
        ("93.184.216.34", True),
        ("2606:2800:220:1:248:1893:25c8:1946", True),
        ("127.0.0.1", False),
        ("10.1.2.3", False),
        ("172.16.0.1", False),
        ("192.168.1.1", False),
        ("169.254.169.254", False),  # cloud metadata
        ("100.64.0.1", False),  # carrier-grade NAT
        ("0.0.0.0", False),
        ("224.0.0.1", False),
        ("::1", False),
        ("fc00::1", False),
        ("fe80::1", False),
        ("::ffff:127.0.0.1", False),  # IPv4-mapped loopback
        ("::ffff:10.0.0.1", False),
        ("64:ff9b::7f00:1", False),  # NAT64 of loopback
        ("64:ff9b::808:808", True),  # NAT64 of a public address
        ("2002:7f00:1::", False),  # 6to4 of loopback
        ("2001:0:4136:e378:8000:63bf:80ff:fffe", False),  # Teredo of a private address
    ],
)
def test_only_public_addresses_count_as_public(address, public):
    assert is_public_address(address) is public


def test_a_receiver_that_never_answers_times_out(hooks, receiver, monkeypatch):
    monkeypatch.setattr(deliveries, "TIMEOUT_S", 0.5)
    receiver.hang_first = 1
    owner_id, _ = hooks.owner()
    task = hooks.final_task(owner_id, receiver.url())
    hooks.send()
    outcome = hooks.task(task.task_id).webhook_outcome
    assert (outcome.delivered, outcome.status_code, outcome.error) == (
        False, None, "No answer within 0.5 s.",
    )  # fmt: skip
    assert len(receiver.requests) == 1


def test_a_lapsed_claim_is_sent_once_more_then_given_up(hooks, receiver):
    """A sender that claims a delivery and dies leaves the claim to lapse; the next sender
    sends it (same webhook id). After a second such death it is not tried again."""
    owner_id, _ = hooks.owner()
    once = hooks.final_task(owner_id, receiver.url())
    assert hooks.run(deliveries.claim_next, hooks.ctx).attempts == 1  # then the sender died
    hooks.api.clock.advance(deliveries.CLAIM_MS / 1000 - 1)
    hooks.send()
    assert receiver.requests == []  # the claim still holds
    hooks.api.clock.advance(1)
    hooks.send()
    assert receiver.wait_for(1)[0].headers["webhook-id"] == once.task_id
    assert hooks.task(once.task_id).webhook_outcome.delivered

    twice = hooks.final_task(owner_id, receiver.url())
    for attempt in (1, 2):
        assert hooks.run(deliveries.claim_next, hooks.ctx).attempts == attempt
        hooks.api.clock.advance(deliveries.CLAIM_MS / 1000)
    hooks.send()
    outcome = hooks.task(twice.task_id).webhook_outcome
    assert not outcome.delivered and "cut short 2 times" in outcome.error
    assert len(receiver.requests) == 1


# TLS: the request goes to the checked address, the certificate is checked for the host name


class FixedDns(HttpTransport):
    """Resolves every host to 127.0.0.1 (the names below exist nowhere else)."""

    async def resolve(self, url: str) -> list[str]:
        return ["127.0.0.1"]


@pytest.fixture
def tls_receiver(tmp_path, make_receiver):
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command to make a certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-days", "1", "-subj", "/CN=hooks.example.test", "-addext",
         "subjectAltName=DNS:hooks.example.test", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    server_side = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_side.load_cert_chain(cert, key)
    return make_receiver(server_side), ssl.create_default_context(cafile=str(cert))


def test_tls_goes_to_the_checked_address_and_verifies_the_host_name(hooks, tls_receiver):
    receiver, trust = tls_receiver
    owner_id, _ = hooks.owner()
    good = hooks.final_task(owner_id, receiver.url(host="hooks.example.test", scheme="https"))
    hooks.send(FixedDns(trust))
    outcome = hooks.task(good.task_id).webhook_outcome
    assert outcome.delivered, outcome.error
    request = receiver.requests[0]
    assert request.headers["host"] == f"hooks.example.test:{receiver.port}"
    assert receiver.server_names == ["hooks.example.test"]

    # The same address under a name the certificate does not hold: the handshake fails.
    bad = hooks.final_task(owner_id, receiver.url(host="other.example.test", scheme="https"))
    hooks.send(FixedDns(trust))
    outcome = hooks.task(bad.task_id).webhook_outcome
    assert not outcome.delivered and "certificate verify failed" in outcome.error
    assert len(receiver.requests) == 1
