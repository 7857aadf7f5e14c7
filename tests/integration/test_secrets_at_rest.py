"""Secrets never rest (docs/gate.md#secrets-never-rest): a distinct secret planted in every
caller-controlled field
that is not a statement, through a live server; then a pg_dump of the database, every Redis
key and value, and the server's own log output are searched for each: 0 found.

Ids and headers holding a secret are refused (422 `secret_in_identifier`); free text (a
feedback note, a key name) is stored redacted. Each secret is random, so nothing another
test stored can match it.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import secrets
import string
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from fastapi import FastAPI, Request
from mnemonic import Mnemonic
from redis.asyncio import Redis
from stdnum import iban
from stdnum.br import cpf

from app.embedded import pg_bin_dir
from app.errors import install_error_handlers
from app.logs import configure_logging
from app.memory.structural import generated_token
from tests.conftest import Live, Stack, Tenant

ROOT = Path(__file__).resolve().parents[2]


def _random(alphabet: str, n: int) -> str:
    return "".join(secrets.choice(alphabet) for _ in range(n))


UPPER = string.ascii_uppercase + string.digits
ALNUM = string.ascii_letters + string.digits


@dataclass(frozen=True)
class Planted:
    field: str
    value: str  # what is sent
    needle: str  # what must be found nowhere (the secret part of `value`)


def _secrets() -> dict[str, Planted]:
    """One distinct secret per field, in the formats the detectors know."""

    def aws() -> tuple[str, str]:
        key = "AKIA" + _random(UPPER, 16)
        return key, key

    def password() -> tuple[str, str]:
        pw = _random(ALNUM, 14)
        return f"password={pw}", pw

    def ghp() -> tuple[str, str]:
        token = "ghp_" + _random(ALNUM, 36)
        return token, token

    def pem() -> tuple[str, str]:
        body = _random(ALNUM, 40)
        pem = "-----BEGIN OPENSSH PRIVATE KEY-----\n{}\n-----END OPENSSH PRIVATE KEY-----"
        return pem.format(body), body

    def conn() -> tuple[str, str]:
        pw = _random(ALNUM, 16)
        return f"postgres://svc:{pw}@db.internal:5432/app", pw

    def api_key() -> tuple[str, str]:
        v = _random(ALNUM, 20)
        return f"api_key:{v}", v

    makers = {
        "fact.source.trace_id": aws,
        "fact.source.turn_id": password,
        "fact.scope": aws,
        "observation.trace_id": ghp,
        "observation.turn_id": aws,
        "observation.session_id": password,
        "feedback.note": pem,
        "feedback.note.conn": conn,
        "recall.trace_id": ghp,
        "recall.session_id": api_key,
        "header.x_trace_id": aws,
        "admin_key.name": conn,
        "admin_key.scope": aws,
        "session.id": ghp,
        "session.turn.trace_id": password,
        "session.turn.turn_id": api_key,
        "session.slot_key": aws,
        "session.slot_nested_key": password,
        "fact_500.statement": password,
        "user_id": aws,
        "header.idempotency_key": ghp,
    }
    out = {}
    for name, make in makers.items():
        value, needle = make()
        out[name] = Planted(name, value, needle)
    return out


def _refused(r: httpx.Response, what: str) -> None:
    assert r.status_code == 422, (what, r.status_code, r.text)
    assert r.json()["error"]["code"] == "secret_in_identifier", (what, r.text)


async def _plant_everywhere(c: httpx.AsyncClient, t: Tenant, p: dict[str, Planted]) -> None:
    h = t.h()
    user = "secret-rest-user"

    def fact(**source: str) -> dict[str, Any]:
        return {
            "type": "semantic",
            "statement": "The user prefers short answers",
            "source": {"kind": "user_message", **source},
        }

    _refused(
        await c.post(
            f"/v1/users/{user}/facts",
            json=fact(trace_id=p["fact.source.trace_id"].value),
            headers=h,
        ),
        "source.trace_id",
    )
    _refused(
        await c.post(
            f"/v1/users/{user}/facts", json=fact(turn_id=p["fact.source.turn_id"].value), headers=h
        ),
        "source.turn_id",
    )
    _refused(
        await c.post(f"/v1/users/{p['user_id'].value}/facts", json=fact(), headers=h), "user_id"
    )
    _refused(
        await c.post(
            f"/v1/users/{user}/facts",
            json={**fact(), "scope": f"project:{p['fact.scope'].value}"},
            headers=h,
        ),
        "scope",
    )
    ok = await c.post(
        f"/v1/users/{user}/facts",
        json=fact(trace_id="t-1"),
        headers={**h, "Idempotency-Key": p["header.idempotency_key"].value},
    )
    assert ok.status_code == 201, ok.text  # the key is kept only as a hash
    fact_id = ok.json()["fact"]["id"]
    # PATCH takes a source too
    _refused(
        await c.patch(
            f"/v1/users/{user}/facts/{fact_id}",
            json={
                "statement": "The user prefers brief answers",
                "source": {"kind": "user_message", "trace_id": p["fact.source.trace_id"].value},
            },
            headers=h,
        ),
        "patch source.trace_id",
    )

    msg = {"role": "user", "content": "I like tables"}
    _refused(
        await c.post(
            f"/v1/users/{user}/observations",
            json={"messages": [msg], "trace_id": p["observation.trace_id"].value},
            headers=h,
        ),
        "observation.trace_id",
    )
    _refused(
        await c.post(
            f"/v1/users/{user}/observations",
            json={"messages": [{**msg, "turn_id": p["observation.turn_id"].value}]},
            headers=h,
        ),
        "observation.turn_id",
    )
    _refused(
        await c.post(
            f"/v1/users/{user}/observations",
            json={"messages": [msg], "session_id": p["observation.session_id"].value},
            headers=h,
        ),
        "observation.session_id",
    )

    for key in ("feedback.note", "feedback.note.conn"):
        r = await c.post(
            f"/v1/users/{user}/facts/{fact_id}/feedback",
            json={"useful": False, "note": f"wrong: {p[key].value}"},
            headers=h,
        )
        assert r.status_code == 200, r.text

    _refused(
        await c.post(
            f"/v1/users/{user}/recall",
            json={"query": "answers", "trace_id": p["recall.trace_id"].value},
            headers=h,
        ),
        "recall.trace_id",
    )
    _refused(
        await c.post(
            f"/v1/users/{user}/recall",
            json={"query": "answers", "session_id": p["recall.session_id"].value},
            headers=h,
        ),
        "recall.session_id",
    )
    r = await c.post(
        f"/v1/users/{user}/recall",
        json={"query": "answers"},
        headers={**h, "X-Trace-Id": p["header.x_trace_id"].value},
    )
    _refused(r, "X-Trace-Id")
    assert p["header.x_trace_id"].needle not in r.headers.get("x-trace-id", "")
    ok = await c.post(
        f"/v1/users/{user}/recall",
        json={"query": "answers"},
        headers={**h, "X-Trace-Id": "trace-ok-1"},
    )
    assert ok.status_code == 200 and ok.json()["trace_id"] == "trace-ok-1"

    r = await c.post(
        "/v1/admin/keys",
        json={"name": f"ci {p['admin_key.name'].value}", "role": "agent"},
        headers=t.h("admin"),
    )
    assert r.status_code == 201, r.text
    assert p["admin_key.name"].needle not in r.text and "[REDACTED:secret]" in r.json()["name"]
    _refused(
        await c.post(
            "/v1/admin/keys",
            json={"role": "agent", "scopes": [f"project:{p['admin_key.scope'].value}"]},
            headers=t.h("admin"),
        ),
        "key scope",
    )

    turn = {"user_id": user, "role": "user", "content": "I like tables"}
    _refused(
        await c.post(f"/v1/sessions/{p['session.id'].value}/turns", json=turn, headers=h),
        "session id",
    )
    _refused(
        await c.post(
            "/v1/sessions/s-ok/turns",
            json={**turn, "trace_id": p["session.turn.trace_id"].value},
            headers=h,
        ),
        "turn trace_id",
    )
    _refused(
        await c.post(
            "/v1/sessions/s-ok/turns",
            json={**turn, "turn_id": p["session.turn.turn_id"].value},
            headers=h,
        ),
        "turn turn_id",
    )
    ok = await c.post("/v1/sessions/s-ok/turns", json=turn, headers=h)
    assert ok.status_code in (200, 201), ok.text
    _refused(
        await c.put(
            "/v1/sessions/s-ok/slots", json={"slots": {p["session.slot_key"].value: "x"}}, headers=h
        ),
        "slot key",
    )
    _refused(
        await c.put(
            "/v1/sessions/s-ok/slots",
            json={"slots": {"trip": {"legs": [{p["session.slot_nested_key"].value: 1}]}}},
            headers=h,
        ),
        "nested slot key",
    )
    ok = await c.put("/v1/sessions/s-ok/slots", json={"slots": {"city": "Berlin"}}, headers=h)
    assert ok.status_code == 200, ok.text

    # A request that failed inside the server (a NUL byte answered 500 before input
    # validation): whatever the status, the password in it must not reach a log line.
    body = {
        "type": "semantic",
        "statement": f"note {p['fact_500.statement'].value} \u0000",
        "source": {"kind": "user_message", "evidence": "\u0000"},
    }
    r = await c.post(f"/v1/users/{user}/facts", json=body, headers=h)
    assert p["fact_500.statement"].needle not in r.text


def _pg_dump(database_url: str) -> str:
    out = subprocess.run(
        [str(pg_bin_dir() / "pg_dump"), "--no-owner", "--dbname", database_url],
        capture_output=True,
        check=True,
        timeout=120,
    )
    return out.stdout.decode("utf-8", "replace")


async def _redis_text(redis_url: str) -> str:
    """Every key, and every value of every type (plus its DUMP), as one searchable text."""
    r = Redis.from_url(redis_url)
    parts: list[str] = []
    try:
        async for key in r.scan_iter(count=1000):
            parts.append(key.decode("utf-8", "replace"))
            kind = (await r.type(key)).decode()
            value: Any
            if kind == "string":
                value = await r.get(key)
            elif kind == "hash":
                value = await r.hgetall(key)
            elif kind == "list":
                value = await r.lrange(key, 0, -1)
            elif kind == "set":
                value = await r.smembers(key)
            elif kind == "zset":
                value = await r.zrange(key, 0, -1, withscores=True)
            elif kind == "stream":
                value = await r.xrange(key)
            else:
                value = None
            parts.append(repr(value))
            dumped = await r.dump(key)
            if dumped:
                parts.append(dumped.decode("latin-1"))
    finally:
        await r.aclose()
    return "\n".join(parts)


async def test_no_planted_secret_rests_in_postgres_redis_or_logs(
    migrated: Stack, tenant: Tenant, live: Live
) -> None:
    planted = _secrets()
    async with live.client() as c:
        await _plant_everywhere(c, tenant, planted)
        await asyncio.sleep(1.5)  # the recall log is flushed in the background
    dump = _pg_dump(migrated.database_url)
    assert "CREATE TABLE" in dump and "recall_log" in dump  # a real, complete dump
    redis_text = await _redis_text(migrated.redis_url)
    assert "s-ok" in redis_text  # the session that was accepted is there
    logs = live.log_text()
    assert "POST /v1/users/{user_id}/facts" in logs  # the server did log its requests
    found = {
        where: sorted(p.field for p in planted.values() if p.needle in text)
        for where, text in (("pg_dump", dump), ("redis", redis_text), ("logs", logs))
    }
    assert found == {"pg_dump": [], "redis": [], "logs": []}


# ---------------------------------------------------------------------------------------
# Disguised secrets (app.memory.unmask): spaced, dotted, encoded, invisible, full-width ...
# ---------------------------------------------------------------------------------------

LOWER = string.ascii_lowercase + string.digits
FULLWIDTH = str.maketrans({chr(c): chr(c + 0xFEE0) for c in range(0x21, 0x7F)})
_RIC_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)


def _pw(n: int = 12) -> str:
    """A random password with a digit (so prose forms read it as one)."""
    return _random(string.ascii_letters, n - 2) + _random(string.digits, 2)


def _card() -> str:
    digits = "4" + _random(string.digits, 14)
    total = 0
    for i, d in enumerate(reversed(digits)):
        n = int(d) * (2 if i % 2 == 0 else 1)
        total += n - 9 if n > 9 else n
    return digits + str((10 - total % 10) % 10)


def _ric() -> str:
    body = (
        f"110101{secrets.choice(range(1950, 2000))}{secrets.choice(range(1, 13)):02d}"
        f"{secrets.choice(range(1, 29)):02d}{_random(string.digits, 3)}"
    )
    total = sum(int(d) * w for d, w in zip(body, _RIC_WEIGHTS, strict=True))
    return body + "10X98765432"[total % 11]


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _escaped(needle: str) -> list[str]:
    """The needle, and its JSON-escaped form if it has non-ASCII (a log line may escape)."""
    escaped = json.dumps(needle)[1:-1]
    return [needle] if escaped == needle else [needle, escaped]


NUMERALS = str.maketrans("0123456789X", "零一二三四五六七八九X")
YAO_NUMERALS = str.maketrans("0123456789", "零幺两三四五六七八九")
_EN_WORDS = "zero one two three four five six seven eight nine".split()


def _ssn() -> str:
    """A US SSN in a valid shape (area not 000, 666 or 9xx; group and serial not zero),
    dotted."""
    area = secrets.choice([a for a in range(1, 900) if a != 666])
    return f"{area:03d}.{secrets.randbelow(99) + 1:02d}.{secrets.randbelow(9999) + 1:04d}"


def _generated_token() -> str:
    """A random token the structural detector recognises (a few random draws do not)."""
    while True:
        token = _random(ALNUM, 28)
        if generated_token(token):
            return token


def _disguised() -> dict[str, tuple[str, list[str]]]:
    """format -> (text to send, needles that must rest nowhere); fresh secrets per call."""
    pw = [_pw() for _ in range(9)]
    spaced_pw = _random(LOWER, 10)
    aws = "AKIA" + _random(UPPER, 16)
    aws_zw = "\u200b".join(aws[i : i + 4] for i in range(0, 20, 4))
    card, ric = _card(), _ric()
    dotted = ".".join(card[i : i + 4] for i in range(0, 16, 4))
    grouped = f"{ric[:6]} {ric[6:14]} {ric[14:]}"
    keys = [_random(ALNUM, 18) + "/" + _random(ALNUM, 19) + "7" for _ in range(2)]
    codes = [
        f"{_random(LOWER, 3)}{secrets.choice('23456789')}-{_random(LOWER, 4)}" for _ in range(3)
    ]
    codes2 = [
        f"{_random(LOWER, 3)}{secrets.choice('23456789')}-{_random(LOWER, 4)}" for _ in range(4)
    ]
    passport = _random(string.digits, 9)
    ric2 = _ric()
    seed = " ".join(_random(string.ascii_lowercase, secrets.choice(range(4, 9))) for _ in range(12))
    totp = (
        _random("ABCDEFGHIJKLMNOPQRSTUVWXYZ", 14)
        + _random("234567", 4)
        + _random("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 14)
    )
    # issue 22: formats no vendor prefix names (app/memory/structural.py, unmask spellings)
    card2, card3, card4 = _card(), _card(), _card()
    spelled = " ".join(_EN_WORDS[int(d)] for d in card2)
    yao = card3.translate(YAO_NUMERALS)
    commas = ",".join(card4[i : i + 4] for i in range(0, 16, 4))
    bban = _random(string.digits, 18)
    iban_number = "DE" + iban.calc_check_digits("DE00" + bban) + bban
    iban_spaced = " ".join(iban_number[i : i + 4] for i in range(0, len(iban_number), 4))
    cpf_body = _random(string.digits, 9)
    cpf_number = cpf.format(cpf_body + cpf._calc_check_digits(cpf_body))
    db_pass = _pw()
    session_token = _generated_token()
    bare_token = _generated_token()
    bip39 = Mnemonic("english").generate(128)
    session_id, colon_token, dotted_token = (
        _generated_token(),
        _generated_token(),
        _generated_token(),
    )
    comma_pw = _pw()
    maiden = tuple(_random(string.ascii_uppercase, 1) + _random(LOWER, 7) for _ in range(3))
    hexed = f"password={pw[2]}".encode().hex()
    nested = _b64(quote(f"password={pw[3]}", safe=""))
    basic = _b64(f"svc:{pw[5]}").rstrip("=")
    # issue 22, fifth round: grouped tokens, network keys, a JSON password in Chinese,
    # a dotted SSN, a card pasted as a list of pieces
    grouped_token = _generated_token()
    groups = " ".join(grouped_token[i : i + 4] for i in range(0, len(grouped_token), 4))
    wifi_key, zh_json_pw = _pw(), _pw()
    ssn = _ssn()
    card5 = _card()
    pieces = json.dumps([card5[i : i + 4] for i in range(0, 16, 4)])
    return {
        "grouped_token": (f"my api token is {groups}", [grouped_token, groups]),
        "wifi_key": (f"wifi: network Home5G, key {wifi_key}", [wifi_key]),
        "zh_json_password": (f'配置里写着 "密码": "{zh_json_pw}"', [zh_json_pw]),
        "dotted_ssn": (f"Social Security: {ssn}", [ssn, ssn.replace(".", "")]),
        "card_pieces": (f"card pieces {pieces}", [card5, pieces]),
        "spaced": (f"p a s s w o r d : {' '.join(spaced_pw)}", [spaced_pw, " ".join(spaced_pw)]),
        "dotted_card": (f"卡号 {dotted}", [card, dotted]),
        "grouped_ric": (f"身份证 {grouped}", [ric, grouped]),
        "base64": (
            "config " + _b64(f"password={pw[0]}"),
            [pw[0], _b64(f"password={pw[0]}").rstrip("=")],
        ),
        "percent": (quote(f"password: {pw[1]}", safe=""), [pw[1]]),
        "hex": (f"blob {hexed}", [pw[2], hexed]),
        "nested_encoding": (nested, [pw[3], nested.rstrip("=")]),
        "entities": (
            "".join(f"&#{ord(c)};" for c in f"password: {pw[4]}"),
            [pw[4], "".join(f"&#{ord(c)};" for c in pw[4])],
        ),
        "zero_width": (f"key {aws_zw}", [aws, aws_zw]),
        "fullwidth": (
            f"ｐａｓｓｗｏｒｄ：{pw[6].translate(FULLWIDTH)}",
            [pw[6], pw[6].translate(FULLWIDTH)],
        ),
        "basic_auth": (f"Authorization: Basic {basic}", [basic, pw[5]]),
        "aws_secret": (f"aws_secret_access_key={keys[0]}", [keys[0]]),
        "aws_secret_prose": (f"my AWS secret key is {keys[1]}", [keys[1]]),
        "prose_en": (f"my preferred password is {pw[7]}", [pw[7]]),
        "prose_zh": (f"我的密码是{pw[8]}", [pw[8]]),
        "recovery_codes": ("recovery codes: " + ", ".join(codes), codes),
        "codes_after_phrase": ("backup codes in case I lose my phone: " + " ".join(codes2), codes2),
        "named_passport": (
            f"passport no. {passport[:3]} {passport[3:6]} {passport[6:]}",
            [passport, f"{passport[:3]} {passport[3:6]} {passport[6:]}"],
        ),
        "named_id_numerals": (
            f"身份证号码是{ric2.translate(NUMERALS)}",
            [ric2, ric2.translate(NUMERALS)],
        ),
        "seed_phrase": ("wallet recovery phrase: " + seed, [seed]),
        "totp_secret": (f"TOTP seed for the VPN: {totp}", [totp]),
        "spelled_card": (f"card on file: {spelled}", [card2, spelled]),
        "yao_card": (f"我的卡号{yao}", [card3, yao]),
        "comma_card": (f"reads the card out as {commas}", [card4, commas]),
        "iban": (f"salary to {iban_spaced}", [iban_number, iban_spaced]),
        "cpf": (f"CPF {cpf_number}", [cpf_number]),
        "secret_pair": (f"DB_PASS={db_pass} DB_HOST=localhost", [db_pass]),
        "cookie": (f"Cookie: sessionid={session_token}; theme=dark", [session_token]),
        "bare_token": (f"the deploy hook needs {bare_token} appended", [bare_token]),
        "unnamed_seed": (f"write these down: {bip39}", [bip39]),
        # issue 22, second round: the reviewer's misses
        "session_id_pair": (f"session_id={session_id}", [session_id]),
        "colon_token": (f"the export header was user:{colon_token}", [colon_token]),
        "dotted_token": (
            f"the signed cookie is sess.{dotted_token[:14]}.{dotted_token[14:]}",
            [dotted_token[:14], dotted_token[14:]],
        ),
        "comma_value": (
            f"DB_PASS={comma_pw[:3]},{comma_pw[3:]}",
            [comma_pw[3:], f"{comma_pw[:3]},{comma_pw[3:]}"],
        ),
        "maiden_name": (
            f"my mother's maiden name is {maiden[0]} {maiden[1]} {maiden[2]}",
            list(maiden),
        ),
        "login_pair": (
            f"streaming login: fam.{_random(LOWER, 6)}@example.com / {pw[0]}x",
            [f"{pw[0]}x"],
        ),
    }


FIELDS = (
    "fact.statement",
    "fact.value_nested",
    "fact.value_key",
    "fact.evidence",
    "observation.content",
    "session.turn",
    "feedback.note",
)


SECRETS = ("secret_detected", "government_id", "payment_card")


async def _plant_disguised(c: httpx.AsyncClient, t: Tenant) -> dict[str, list[str]]:
    """Every format into every field; returns "field/format" -> needles."""
    h = t.h()
    user = "disguise-user"
    planted: dict[str, list[str]] = {}
    ok = await c.post(
        f"/v1/users/{user}/facts",
        headers=h,
        json={
            "type": "semantic",
            "statement": "The user prefers short answers",
            "source": {"kind": "user_message"},
        },
    )
    assert ok.status_code == 201, ok.text
    fact_id = ok.json()["fact"]["id"]

    async def fact(body: dict[str, Any], where: str, reasons: tuple[str, ...] = SECRETS) -> None:
        r = await c.post(
            f"/v1/users/{user}/facts",
            headers=h,
            json={"type": "semantic", "source": {"kind": "user_message"}, **body},
        )
        if r.status_code == 422:  # refused as an identifier holding a secret: fine too
            assert r.json()["error"]["code"] == "secret_in_identifier", (where, r.text)
            return
        assert r.status_code == 200, (where, r.text)
        assert r.json()["decision"] == "rejected", (where, r.text)
        assert not reasons or r.json()["reason"] in reasons, where

    for field in FIELDS:
        for fmt, (text, needles) in _disguised().items():
            where = f"{field}/{fmt}"
            planted[where] = [e for n in needles for e in _escaped(n)]
            # a statement of its own: a repeat would merge and never store the value
            note = f"The user keeps note {len(planted)} about {fmt.replace('_', ' ')}"
            if field == "fact.statement":
                await fact({"statement": text}, where)
            elif field == "fact.value_nested":
                await fact(
                    {"statement": note, "value": {"account": {"notes": ["ok", text]}}}, where
                )
            elif field == "fact.value_key":
                await fact({"statement": note, "value": {"labels": {text: True}}}, where)
            elif field == "fact.evidence":
                await fact(
                    {"statement": note, "source": {"kind": "user_message", "evidence": text}}, where
                )
            elif field == "observation.content":
                r = await c.post(
                    f"/v1/users/{user}/observations",
                    headers=h,
                    json={"messages": [{"role": "user", "content": text}]},
                )
                assert r.status_code == 202, (where, r.text)
            elif field == "session.turn":
                r = await c.post(
                    "/v1/sessions/s-disguise/turns",
                    headers=h,
                    json={"user_id": user, "role": "user", "content": text},
                )
                assert r.status_code in (200, 201), (where, r.text)
            else:
                r = await c.post(
                    f"/v1/users/{user}/facts/{fact_id}/feedback",
                    headers=h,
                    json={"useful": False, "note": f"wrong: {text}"},
                )
                assert r.status_code == 200, (where, r.text)
    # the predicate: a card or an ID in an otherwise well-formed predicate reaches the gate
    for fmt, number in (("card", _card()), ("ric", _ric())):
        grouped = "_".join(number[i : i + 4] for i in range(0, len(number), 4))
        await fact(
            {
                "type": "profile",
                "statement": "用户提供了一条信息",
                "value": "x",
                "predicate": f"n_{grouped.lower()}",
            },
            f"fact.predicate/{fmt}",
        )
        planted[f"fact.predicate/{fmt}"] = [number, grouped.lower()]
    # the statement is the secret and only the predicate says so: the audit row's redacted
    # statement is read beside its predicate, as the gate reads it
    for fmt, predicate, value in (
        ("password", "password_is", "hunter22Qx"),
        ("ssn", "ssn", "078-05-1120"),
    ):
        # refused for any reason (an SSN alone as a statement reads as an injection too)
        where = f"fact.statement_by_predicate/{fmt}"
        await fact({"statement": value, "predicate": predicate}, where, reasons=())
        planted[where] = [value]
    return planted


async def test_disguised_secrets_rest_nowhere(migrated: Stack, tenant: Tenant, live: Live) -> None:
    """Spaced, dotted, nested, encoded, zero-width, full-width, Basic auth, AWS secret keys,
    prose passwords (zh/en) and recovery codes, in every field that is stored or logged:
    none of them is found in a pg_dump, Redis or the server log."""
    async with live.client() as c:
        planted = await _plant_disguised(c, tenant)
        await asyncio.sleep(1.5)  # the recall log and audit are flushed
    dump = _pg_dump(migrated.database_url)
    assert "s-disguise" in await _redis_text(migrated.redis_url)
    assert "[REDACTED:secret]" in dump and "[REDACTED:card]" in dump  # it did rest, redacted
    texts = {
        "pg_dump": dump,
        "redis": await _redis_text(migrated.redis_url),
        "logs": live.log_text(),
    }
    found = {
        where: sorted(name for name, needles in planted.items() if any(n in text for n in needles))
        for where, text in texts.items()
    }
    assert found == {"pg_dump": [], "redis": [], "logs": []}


async def test_unhandled_error_logs_no_message_or_body(
    caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    """The 500 handler logs where and what kind, never the exception's text or the body,
    through the real logging configuration."""
    password = "password=" + _random(ALNUM, 14)
    app = FastAPI()
    install_error_handlers(app)

    @app.post("/boom")
    async def boom(request: Request) -> None:
        body = await request.body()
        raise ValueError(f"could not store {body.decode()}")

    configure_logging("INFO")
    root = logging.getLogger()
    handlers = list(root.handlers)
    try:
        root.addHandler(caplog.handler)
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://x") as c:
            r = await c.post("/boom", content=json.dumps({"statement": f"my {password}"}))
        assert r.status_code == 500 and password not in r.text
    finally:
        root.handlers[:] = handlers
    printed = capsys.readouterr().err
    records = "\n".join(caplog.handler.format(rec) for rec in caplog.records)
    assert "ValueError" in printed and "boom" in printed  # where and what kind
    assert password not in printed and password not in records
    assert "could not store" not in printed
