"""Structural detectors (app/memory/structural.py, docs/gate.md#detectors): each family
with formats no vendor prefix names, and the benign look-alikes that must stay writable.

Every number here is synthetic and passes its checksum (Luhn, mod 11, mod 97, Verhoeff);
the look-alikes are what users and tools really write (orders, digests, versions, ids)."""

from __future__ import annotations

import random
import secrets
import string

import pytest
from mnemonic import Mnemonic

from app.memory import detectors, structural
from app.memory.gate import value_text


def _reasons(text: str) -> set[str]:
    return {
        f.kind
        for f in detectors.screen(text)
        if f.kind in ("secret", "government_id", "payment_card")
    }


CARDS = [
    "Card on file: four eight three three six five one six four six eight zero one nine nine eight",
    "pan: 5729/8174/8945/8162",
    "Use 3715 590827 56137 for the hotel",
    "the user reads the card out as 4087,2200,7154,6073",
    "old visa 4908_8913_4336_0 still works",
    "我的卡号：五七二九八幺七四八九四五八幺六二",
    "银行卡　６２８７　１３０８　５２６５　５５８３　５４４",
    "用户常用的那张是 6374、6815、5911、0681",
    "那张卡是 五三八七 五一七三 八二四七 零九七四",
    "salary goes to IBAN DE35 3704 0044 0532 0130 99",
    "用户在英国的收款账户 GB51 NWBK 6016 1331 9268 11",
]
IDS = [
    "For the visa form: CPF 981.657.496-92",
    "The user's Spanish DNI: 97123166P",
    "用户的印度 Aadhaar 号：5548-8546-9646",
    "my BSN is 691022446, the tax office asked for it",
    "the user's SSN is five three one, six two, eight eight seven zero",
    "doc: 440305198804122799",
    "form field 11.0108.1975.0923.850X accepted",
    "我的号码是四四零三零五幺九八八零四幺二二七九九，办手续用",
    "身份证号码 三三零一零六 二零零一零一一五 零七七七",
]
SECRETS = [
    "the user's .env has DB_PASS=Xk7#mq2Lp9 and DB_HOST=localhost",
    "request headers: Cookie: sessionid=EKm13WgM7o49sguwMtiM3E555kvw; theme=dark",
    "Azure: DefaultEndpointsProtocol=https;AccountName=u;AccountKey=CBP44v3UFKonTrf3b9lrQfVZ==;",
    "接口配置里 appsecret=2Wa6eXBpXdivPpzYCL293I78fHBR",
    '{"smtp": {"user": "ops", "pass": "Rt5!vBn8Qw"}}',
    "The deploy hook only works with c11SB5BpQNmRlioplqfdhgtlLBQF appended to the URL",
    "私人 token 在这 7Pugcy4Hykh6ykRix4DJqwGY2qO5，别弄丢",
    "write these down: legal winner thank year wave sausage worth useful legal winner thank yellow",
    "the wifi passkey at the cabin is Sunset-Harbor-4471",
    "用户邮箱的 SMTP 授权码是 kqzvbnhtyrewpxla",
    "凭据: Qm3$zx81Lp",
    "微信支付的六位数字我设成了 739104",
    "the safe combination is 0412",
]
BENIGN = [
    "The user's thesis cites the book with ISBN 978-0-306-40615-7",
    "My Zoom personal meeting ID is 845 2931 0072",
    "The user's laptop has 16 GB RAM, a 2 TB SSD and a 3.2 GHz CPU",
    "Invoice INV-2024-000183 was paid on 2024-11-03",
    "request id 550e8400-e29b-41d4-a716-446655440000",
    "The user's frequent flyer number is 4969420792863185",
    "The fix landed in commit 3f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39",
    "pinned to sha256:9b2c4a1f0e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c8b7a6f5e4d3c2b",
    "numpy==1.26.4, pandas==2.2.3, python 3.11.9",
    "The user rotates API keys every 90 days and keeps them in 1Password",
    "token_limit: 128000, max_tokens: 4096",
    "usage: {tokens: 5000, secret_santa_budget: 30}",
    "password: hidden",
    "password_policy: strict; auth: OAuth2; api_key_rotation: 90d",
    "The population was 1,234,567,890,123 by one estimate",
    "用户的快递单号 SF1409283746512 已签收",
    "我的会员积分是 12,480 分，会员号 20231185",
    "用户上个月的订单号是 202412011530458876",
    "用户报销的发票代码 044031900111，发票号码 12345678",
    "用户用支付宝付款是 2023 年开始的",
    "订单支付金额为 2999",
    "HTTPServerFactoryBuilderV2Impl is the class the user refactored",
    "I count one two three four five six seven when I breathe",
    "我们团队的 API 密钥每三个月轮换一次",
    "the user teaches how BIP-39 seed phrases derive wallet keys",
]


@pytest.mark.parametrize("text", CARDS)
def test_cards_in_unlisted_formats(text: str) -> None:
    assert "payment_card" in _reasons(text), text


@pytest.mark.parametrize("text", IDS)
def test_ids_in_unlisted_formats(text: str) -> None:
    assert "government_id" in _reasons(text), text


@pytest.mark.parametrize("text", SECRETS)
def test_secrets_in_unlisted_formats(text: str) -> None:
    assert "secret" in _reasons(text), text


@pytest.mark.parametrize("text", BENIGN)
def test_look_alikes_pass(text: str) -> None:
    assert _reasons(text) == set(), text


def test_a_number_typed_into_boxes_is_one_number() -> None:
    assert "payment_card" in _reasons(value_text({"card": ["4087", "2200", "7154", "6073"]}))
    assert _reasons(value_text({"scores": ["12", "7", "31"]})) == set()


def test_key_names() -> None:
    for key in ("DB_PASS", "X-API-Key", "AccountKey", "appsecret", "sessionid", "client_secret"):
        assert structural.names_secret(key), key
    for key in ("token_limit", "max_tokens", "password_policy", "auth", "keyboard", "DB_HOST"):
        assert not structural.names_secret(key), key


def test_random_tokens_are_generated_and_words_are_not() -> None:
    alphabet = string.ascii_letters + string.digits
    rng = random.Random(22)  # fixed: an unseeded draw failed this bound now and then
    hits = sum(
        structural.generated_token("".join(rng.choice(alphabet) for _ in range(32)))
        for _ in range(400)
    )
    assert hits >= 380  # ≥ 95 % of random base62 tokens
    for word in ("HTTPServerFactoryBuilderV2Impl", "a" * 30, "0123456789abcdef" * 2):
        assert not structural.generated_token(word), word


def test_unnamed_seed_phrases_need_the_checksum() -> None:
    phrase = Mnemonic("english").generate(128)
    assert structural.seed_phrase_spans(f"keep these: {phrase}")
    # a long run of list words is a word list: bounded work, no phrase
    assert not structural.seed_phrase_spans(" ".join(["one"] * 2000))
    # twelve list words of ordinary prose fail the checksum almost always: the first
    # eleven words of a valid phrase and a twelfth that breaks it
    words = phrase.split()
    m = Mnemonic("english")
    broken = next(
        " ".join([*words[:11], w]) for w in m.wordlist if not m.check(" ".join([*words[:11], w]))
    )
    assert not structural.seed_phrase_spans(broken)


def test_redaction_removes_the_new_formats() -> None:
    text = "DB_PASS=Xk7#mq2Lp9 and card 4087,2200,7154,6073 and IBAN DE35 3704 0044 0532 0130 99"
    out = detectors.redact(text)
    for raw in ("Xk7#mq2Lp9", "4087,2200,7154,6073", "DE35 3704 0044 0532 0130 99"):
        assert raw not in out, out


@pytest.mark.parametrize(
    "text",
    [
        "주민등록번호 971013-9019902",
        "codice fiscale RCCMNL83S18D969H for the lease",
        "the user's CURP BOXW310820HNERXN09",
        "social: 531 62 8870",
        "my security answer is Rosewood1987",
        "密保答案是 小白兔",
    ],
)
def test_more_national_numbers_and_security_answers(text: str) -> None:
    assert _reasons(text) & {"government_id", "secret"}, text


@pytest.mark.parametrize(
    "text",
    [
        "call me at 415 555 0132",
        "born 12 03 1990",
        "meeting room 204.11.2024",
        "invoice 204 11 2024",
        "答案是 42",
    ],
)
def test_phone_and_date_shapes_are_not_ids(text: str) -> None:
    assert _reasons(text) == set(), text


@pytest.mark.parametrize(
    "text",
    [
        "card four double one one one one one one one one one one one one one one",
        "卡号 肆壹壹壹 壹壹壹壹 壹壹壹壹 壹壹壹壹",
        "my checking account number is 0012 3456 789",
        "收款账号：6217 0000 1234 5678 901",
        "routing number 021000021",
    ],
)
def test_spelled_banking_numerals_and_bank_accounts(text: str) -> None:
    assert "payment_card" in _reasons(text), text


@pytest.mark.parametrize(
    "text",
    [
        "the code to my phone is 4821",
        "the code for the front door is 7391",
    ],
)
def test_lock_codes(text: str) -> None:
    assert "secret" in _reasons(text), text


@pytest.mark.parametrize(
    "text",
    [
        "I have one two three apples",
        "my savings account earns 2% a year",
        "the user opened a checking account in 2019",
        "会员卡号 20231185",
        "the code for the project is in the repo",
    ],
)
def test_bank_and_code_look_alikes(text: str) -> None:
    assert _reasons(text) == set(), text


@pytest.mark.timeout(20)  # linear work: well under a second; the backtracking took minutes
def test_crafted_runs_stay_linear() -> None:
    """64 KB built to make the IBAN groups backtrack (long unbroken alphanumeric runs) and
    to offer the seed-phrase check as many list-word runs as possible."""
    unbroken = ("ab12" + "c" * 37 + " ") * 1600
    assert structural.iban_spans(unbroken) == []
    words = " ".join(["abandon", "ability", "able", "about", "above", "absent"] * 5)
    found = structural.seed_phrase_spans((words + " zzz ") * 350)
    assert all(kind == "seed_phrase" for _, _, kind in found)


def test_the_seed_phrase_checksum_is_bip39s() -> None:
    m = Mnemonic("english")
    for strength in (128, 160, 192, 224, 256):
        assert structural.bip39_checksum_holds(m.generate(strength=strength).split())
    broken = m.generate(strength=128).split()
    broken[-1] = next(w for w in m.wordlist if not m.check(" ".join([*broken[:-1], w])))
    assert not structural.bip39_checksum_holds(broken)


# ---------------------------------------------------------------------------------------
# issue 22, second round: the reviewer's misses. Each must be found *and* redacted whole:
# what is left after redaction may rest in audit and logs (docs/gate.md#reason-codes).
# ---------------------------------------------------------------------------------------


def _token() -> str:
    while True:
        token = "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(28))
        if structural.generated_token(token):
            return token


def _whole_redaction(text: str, secret: str) -> str:
    out = detectors.redact(text)
    assert "secret" in _reasons(text), text
    # no fragment of the secret of four or more characters survives
    for i in range(len(secret) - 3):
        assert secret[i : i + 4] not in out, (text, out)
    return out


@pytest.mark.parametrize(
    "template",
    [
        "session_id={t}",
        "Cookie: session_id={t}; theme=dark",
        '{{"session_id": "{t}"}}',
        "user:{t}",
        "the export header was user:{t} for the nightly job",
        "SID={t}",
    ],
)
def test_tokens_after_a_key_or_a_colon(template: str) -> None:
    token = _token()
    _whole_redaction(template.format(t=token), token)


@pytest.mark.parametrize(
    "template",
    [
        "the signed cookie is sess.{t}",
        "the signed cookie is {t}.{u}",
        "refresh with {a}.{b}.{c}",
    ],
)
def test_dotted_tokens_are_redacted_with_their_tails(template: str) -> None:
    t, u = _token(), _token()
    a, b, c = t[:12], t[12:] + u[:4], u[4:20]
    text = template.format(t=t, u=u, a=a, b=b, c=c)
    secret = text.rsplit(" ", 1)[1]
    _whole_redaction(text, secret.removeprefix("sess."))


@pytest.mark.parametrize(
    "token",
    # random draws a CI run planted after `sess.`: alone they read as generated, but the
    # label's four lowercase letters pulled the whole dotted run under the mixing threshold
    [
        "naF64AUIMW878esmfoREAIOxuQqg",
        "VhEMXznemn1suAM1HSGHVOweryzj",
        "MVzuegmoKebnh7sjDDLRYLvXOO55",
    ],
)
def test_a_label_segment_does_not_dilute_a_dotted_token(token: str) -> None:
    assert structural.generated_token(token)
    _whole_redaction(f"the signed cookie is sess.{token[:14]}.{token[14:]}", token[:14])
    _whole_redaction(f"the signed cookie is sess.{token[:14]}.{token[14:]}", token[14:])


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("DB_PASS=Xk7,mq2Lp9wq", "Xk7,mq2Lp9wq"),
        ("DB_PASS=Xk7,mq2Lp9wq, DB_HOST=localhost", "Xk7,mq2Lp9wq"),
        ('{"password": "Xk7,mq2Lp9wq"}', "Xk7,mq2Lp9wq"),
        ("password: Xk7,mq2Lp9wq", "Xk7,mq2Lp9wq"),
        ("api_key=Ab3,Zx9,Qw7Rt5", "Ab3,Zx9,Qw7Rt5"),
    ],
)
def test_a_credential_value_is_not_cut_at_a_comma(text: str, secret: str) -> None:
    _whole_redaction(text, secret)


def test_a_comma_still_ends_a_pair_before_the_next_key() -> None:
    out = detectors.redact("password=Xk7mq2Lp9,user=bob,region=eu")
    assert "Xk7mq2Lp9" not in out and "user=bob,region=eu" in out, out


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        ("my mother's maiden name is Anna Maria Lopez", "Anna Maria Lopez"),
        ("security answer: Anna Maria Lopez", "Anna Maria Lopez"),
        ("My security question answer is blue river stone, don't forget", "blue river stone"),
        ("security question: first pet's name? answer: Captain Whiskers", "Captain Whiskers"),
        ("Mother's maiden name: O'Brien Kelly", "O'Brien Kelly"),
        ("我妈妈的娘家姓是欧阳", "欧阳"),
        ("密保答案是 小白兔 和 大灰狼", "小白兔 和 大灰狼"),
        ("安全问题：我的第一只宠物叫什么？答案：豆豆妹妹", "豆豆妹妹"),
    ],
)
def test_security_answers_are_redacted_whole(text: str, answer: str) -> None:
    out = detectors.redact(text)
    assert "secret" in _reasons(text), text
    for word in answer.split():
        assert word not in out, (text, out)


@pytest.mark.parametrize(
    "text",
    [
        "user_id=12345 logged in",
        "see https://example.com/docs/Xk7mQ2Lp9wqRt4ZbN8vYc3Hs1 for the guide",
        "the user's mother is a nurse",
        "the user is researching how security questions like mother's maiden name get phished",
        "version 1.2.3.4, file report.final.v2.pdf, host api.eu-west-1.example.com",
        "session_id: 42",
        "session_timeout=30m",
        "the name of my first pet was Captain Whiskers",
        "我妈妈的名字叫王丽",
    ],
)
def test_reviewer_look_alikes_stay_writable(text: str) -> None:
    assert _reasons(text) == set(), text


# A generated token cut into groups: groups with no digit and no inner capital (about one
# chunk in sixteen of a random token) belong to it too, at its ends and in its middle.
@pytest.mark.parametrize(
    "grouped",
    [
        "Quid Ubls C42Y symP Vi4b yqOg Hjda",  # two weak chunks first
        "AZ5m icYv xkpq Cakt cCcS O6nQ ejDM",  # two weak chunks in the middle
        "Rp6q GUYU rGkC Aaea dHu9 pVF6 3GWm",  # one weak chunk between token-like ones
        "uxyxhc nIFXFB QVHNvq E4jitV iq1g",  # width six, a shorter last chunk
        # few letter-digit hints when counted apart ("lU" took the "U" of "U5"): the text
        # was not searched at all (a fresh-clone run of test_secrets_at_rest)
        "tlU5 bwmv TRTU SYXz 0THE NLIb ROKT",
        "XJEB Cxyi 3195 ZiJr Tgpw ZRCa I7Hn",
        # two weak chunks apart the token-like ones: two-group runs widened to the chunks
        "Ev4G ntaq rtnr 1d88 q6xd Cglb Rsho",
    ],
)
def test_a_grouped_token_is_redacted_whole(grouped: str) -> None:
    text = f"my api token is {grouped} thanks"
    assert detectors.find_secrets(text)
    redacted = detectors.redact(text)
    assert not any(chunk in redacted for chunk in grouped.split()), redacted
    assert redacted.startswith("my api token is ") and redacted.endswith(" thanks")


def test_random_grouped_tokens_are_found_whole() -> None:
    alphabet = string.ascii_letters + string.digits
    found = whole = 0
    for _ in range(300):
        token = ""
        while not structural.generated_token(token):
            token = "".join(secrets.choice(alphabet) for _ in range(28))
        grouped = " ".join(token[i : i + 4] for i in range(0, 28, 4))
        text = f"the key is {grouped} ok"
        if detectors.find_secrets(text):
            found += 1
            whole += not any(c in detectors.redact(text) for c in grouped.split())
    # before the weak chunks counted: about one in five was missed; before the hints were
    # counted overlapping and two-group runs widened, about one in 700 (0 in 80,000 since)
    assert found == 300 and whole >= 297


@pytest.mark.parametrize(
    "text",
    [
        "Flight CA1234 at 10am, gate B12, seat 32A",
        "Use the v2 API with the gpt4 model and the h264 codec",
        "Room 12B, Floor 3A, Wing 2C",
        "Meet at B2 C3 D4 E5 then go home",
        "mp3 mp4 h264 aac are all supported",
    ],
)
def test_short_codes_in_prose_are_no_grouped_token(text: str) -> None:
    assert not structural.grouped_token_spans(text)


@pytest.mark.timeout(30)
@pytest.mark.parametrize("text", ["p.a." * 5000 + "x", "a.b." * 5000, "ab.c" * 5000])
def test_a_long_dotted_token_is_read_in_linear_time(text: str) -> None:
    # thousands of one-letter label segments once made as many cores, each read whole
    # (20,000 characters took 7 s); a hang guard, not a speed figure
    assert detectors.redact(text) is not None
    assert len(structural._token_cores(text)) <= structural._MAX_LABELS + 1
