"""The pure part of webhooks (app/memory/webhooks.py) and the secret box: signatures
checked against the `standardwebhooks` reference library, the retry schedule, the URL and
address rules, what payloads may carry. No I/O."""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime

import pytest
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from app.config import Settings
from app.memory import webhooks as hooks
from app.services.webhooks import Resolver, checked_address, new_secret, seal, unseal


def test_our_signature_is_the_reference_libraries() -> None:
    secret = new_secret()
    body, msg_id, ts = b'{"type":"fact.written"}', "msg_1", 1_700_000_000
    reference = Webhook(secret).sign(msg_id, datetime.fromtimestamp(ts, UTC), body.decode())
    assert hooks.signature(secret, msg_id, ts, body) == reference


def test_several_signatures_each_verify() -> None:
    a, b = new_secret(), new_secret()
    body, ts = b'{"x":1}', int(time.time())
    headers = {
        "webhook-id": "msg_2",
        "webhook-timestamp": str(ts),
        "webhook-signature": hooks.signature_header([a, b], "msg_2", ts, body),
    }
    Webhook(a).verify(body, headers)
    Webhook(b).verify(body, headers)
    with pytest.raises(WebhookVerificationError):
        Webhook(new_secret()).verify(body, headers)


@pytest.mark.parametrize(
    ("attempt", "jitter", "expected"),
    [(1, 0.5, 10.0), (2, 0.5, 20.0), (3, 0.0, 30.0), (3, 0.999, 49.99), (30, 0.5, 3600.0)],
)
def test_backoff_doubles_with_jitter_and_a_cap(
    attempt: int, jitter: float, expected: float
) -> None:
    assert hooks.retry_delay_s(attempt, 10.0, 3600.0, jitter) == pytest.approx(expected, abs=0.01)


@pytest.mark.parametrize(
    ("url", "https", "problem"),
    [
        ("https://hooks.example.com/x", True, None),
        ("http://hooks.example.com/x", False, None),
        ("http://hooks.example.com/x", True, "scheme must be https"),
        ("ftp://hooks.example.com/x", False, "scheme must be https"),
        ("https://u:p@hooks.example.com/x", True, "credentials in the URL"),
        ("https:///x", True, "no host"),
        ("https://hooks.example.com:99999/x", True, "not a URL"),
    ],
)
def test_url_rules(url: str, https: bool, problem: str | None) -> None:
    assert hooks.url_problem(url, require_https=https) == problem


@pytest.mark.parametrize(
    ("address", "refused"),
    [
        ("127.0.0.1", True),
        ("10.1.2.3", True),
        ("192.168.0.1", True),
        ("169.254.169.254", True),
        ("::1", True),
        ("::ffff:127.0.0.1", True),
        ("fe80::1%eth0", True),
        ("0.0.0.0", True),
        ("224.0.0.1", True),
        ("93.184.216.34", False),
        ("2606:2800:220:1:248:1893:25c8:1946", False),
        # IPv6 forms that carry an IPv4 address a gateway or the kernel may reach
        ("64:ff9b::7f00:1", True),  # NAT64 of 127.0.0.1
        ("64:ff9b::a9fe:a9fe", True),  # NAT64 of 169.254.169.254
        ("2002:7f00:1::", True),  # 6to4 of 127.0.0.1
        ("2002:a00:1::1", True),  # 6to4 of 10.0.0.1
        ("::7f00:1", True),  # IPv4-compatible 127.0.0.1
        ("::ffff:0:7f00:1", True),  # SIIT of 127.0.0.1
        ("64:ff9b::5db8:d822", False),  # NAT64 of a public address
    ],
)
def test_private_addresses_are_refused(address: str, refused: bool) -> None:
    assert hooks.address_refused(address) is refused


@pytest.mark.parametrize(
    ("url", "address", "target", "host", "sni"),
    [
        (
            "https://hooks.example.com/in?x=1",
            "93.184.216.34",
            "https://93.184.216.34/in?x=1",
            "hooks.example.com",
            "hooks.example.com",
        ),
        (
            "https://hooks.example.com:8443/in",
            "2606:2800:220:1::1",
            "https://[2606:2800:220:1::1]:8443/in",
            "hooks.example.com:8443",
            "hooks.example.com",
        ),
        (
            "http://hooks.example.com:8080/p",
            "127.0.0.1",
            "http://127.0.0.1:8080/p",
            "hooks.example.com:8080",
            None,
        ),
        (
            "https://bücher.example/hook",
            "93.184.216.34",
            "https://93.184.216.34/hook",
            "xn--bcher-kva.example",
            "xn--bcher-kva.example",
        ),
    ],
)
def test_a_delivery_goes_to_the_checked_address_under_its_name(
    url: str, address: str, target: str, host: str, sni: str | None
) -> None:
    """No second lookup between the SSRF check and the connection: the URL carries the
    address checked, Host and (on https) SNI and certificate checks keep the name."""
    got, headers, extensions = hooks.pinned_target(url, address)
    assert got == target
    assert headers == {"host": host}
    assert extensions == ({"sni_hostname": sni} if sni else {})


async def test_every_resolved_address_must_be_public() -> None:
    strict = Settings(webhook_allow_private=False)

    def answering(*addresses: str) -> Resolver:
        async def resolve(host: str, port: int) -> list[str]:
            return list(addresses)

        return resolve

    async def failing(host: str, port: int) -> list[str]:
        raise OSError("no such host")

    public = answering("93.184.216.34")
    assert await checked_address(strict, "h.example", None, public) == ("93.184.216.34", None)
    rebound = answering("93.184.216.34", "127.0.0.1")  # one private answer is enough
    assert await checked_address(strict, "h.example", None, rebound) == (
        None,
        "host is not a public address",
    )
    assert await checked_address(strict, "h.example", None, failing) == (
        None,
        "host does not resolve",
    )
    assert await checked_address(strict, "h.example", None, answering()) == (
        None,
        "host does not resolve",
    )
    lenient = Settings(webhook_allow_private=True)
    assert await checked_address(lenient, "h.example", 80, answering("127.0.0.1")) == (
        "127.0.0.1",
        None,
    )


def test_payloads_carry_no_predicate_of_a_sensitive_fact() -> None:
    common = dict(
        scope="global",
        fact_type="profile",
        status="active",
        source_kind="user_message",
        decision="written",
        version=1,
        supersedes=None,
        superseded=[],
    )
    plain = hooks.fact_written(uuid.uuid4(), "u", predicate="diet", sensitivity="normal", **common)  # type: ignore[arg-type]
    health = hooks.fact_written(
        uuid.uuid4(), "u", predicate="health_condition", sensitivity="personal", **common
    )  # type: ignore[arg-type]
    assert plain.data["predicate"] == "diet" and health.data["predicate"] is None


def test_sealed_secrets_open_only_for_their_endpoint_and_key() -> None:
    master, tenant, endpoint = b"k" * 32, uuid.uuid4(), uuid.uuid4()
    secret = new_secret()
    blob = seal(master, tenant, endpoint, secret)
    assert secret.encode() not in blob
    assert unseal(master, tenant, endpoint, blob) == secret
    for args in (
        (b"x" * 32, tenant, endpoint),
        (master, uuid.uuid4(), endpoint),
        (master, tenant, uuid.uuid4()),
    ):
        with pytest.raises(Exception):  # noqa: B017 - cryptography's InvalidTag
            unseal(*args, blob)
