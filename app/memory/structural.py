"""Structural detectors: secrets, identifiers and account numbers recognised by what
makes them what they are, not by a vendor's prefix (docs/gate.md#detectors).

- a `key: value` / `key=value` / JSON pair whose key names a credential (`DB_PASS`,
  `X-API-Key`, `AccountKey`, `appsecret`, `sessionid`): the key says what the value is;
- a token that looks generated (upper, lower and digits mixed at random, high Shannon
  entropy) standing alone: words, identifiers, hashes and ids do not look like that;
- an unnamed BIP-39 seed phrase: twelve to twenty-four words of the BIP-39 list whose
  checksum holds (`mnemonic`), which prose practically never does;
- an IBAN (country, mod-97 check, the country's length: `stdnum.iban`), and a bank
  account or routing number named as such;
- checksummed national numbers in their written shape: Brazilian CPF `000.000.000-00`,
  Spanish DNI / NIE `00000000X`, Indian Aadhaar `0000 0000 0000` (Verhoeff), Korean RRN
  `000000-0000000`, Italian codice fiscale, Mexican CURP, a US SSN spaced
  `000 00 0000` (python-stdnum validates each), a UK NI number printed `QQ 12 34 56 C`
  (no checksum: its letters' rules and the printed spacing).

Pure; every function takes the NFKC-folded text and returns (start, end, detail) spans.
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import itertools
import math
import re
from collections import Counter
from collections.abc import Sequence

from mnemonic import Mnemonic
from stdnum import iban
from stdnum.br import cpf
from stdnum.es import dni, nie
from stdnum.in_ import aadhaar
from stdnum.it import codicefiscale
from stdnum.kr import rrn
from stdnum.mx import curp
from stdnum.us import ssn

from app.memory.prefilter import rx

Span = tuple[int, int, str]

# ---------------------------------------------------------------------------------------
# key: value pairs whose key names a credential
# ---------------------------------------------------------------------------------------

# A value runs to a space, a quote or a separator; a comma inside it is part of it
# (`DB_PASS=Xk7,mq2Lp9wq`) unless a space or the next `key=` / `key:` follows it.
_VALUE_CHAR = r"[^\s\"'`,;&，。；]"
_INNER_COMMA = r",(?=[!-~])(?![A-Za-z_][A-Za-z0-9_.\-]{0,48}\s*[:=])"
_PAIR = rx(
    r"(?<![A-Za-z0-9_.\-])[\"']?(?P<k>[A-Za-z][A-Za-z0-9_.\-]{1,48})[\"']?\s*[:=]\s*"
    r"[\"'`]?(?P<v>" + _VALUE_CHAR + r"(?:" + _VALUE_CHAR + r"|" + _INNER_COMMA + r"){3,199})"
)
_CAMEL = rx(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
# whole key parts that name a credential
_SECRET_PARTS = frozenset(
    "pass passwd password passwords pwd pw passphrase passkey passcode secret secrets "
    "token tokens apikey credential credentials creds cred sessionid privkey sig "
    # a Wi-Fi pre-shared key, a one-time password, the word in other languages
    "psk otp totp passwort kennwort contrasena senha wachtwoord haslo mdp".split()
)
# "…key" names a credential after one of these ("x-api-key", "AccountKey", "signing_key")
_KEY_QUALIFIERS = frozenset(
    "api access account secret private signing master encryption auth app client "
    "shared storage subscription license licence session consumer webhook wifi wpa wpa2 wlan "
    "network router".split()
)
# the key names something about the credential, not the credential ("token_limit: 128000")
_NOT_THE_SECRET = frozenset(
    "limit limits count counts max min ttl expiry expires expiration length len size type "
    "url uri endpoint file path policy rotation name budget usage window rate format header "
    "lifetime timeout hint strength id ids used reset manager vault store env var".split()
)
_PLACEHOLDER_VALUE = rx(
    r"^(?:\*+|x{3,}|\.{3,}|<[^>]*>|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|%[A-Za-z_]+%|"
    r"\{\{[^}]*\}\}|true|false|null|none|yes|no|on|off|required|optional|redacted|"
    r"\[redacted:[a-z]+\])$",
    re.I,
)


_SESSION_WORDS = frozenset("session sess login auth remember".split())
_SESSION_HANDLES = frozenset("id key cookie token hash".split())


def _key_parts(key: str) -> list[str]:
    """`DB_PASS` → [db, pass], `X-API-Key` → [x, api, key], `AccountKey` → [account, key]."""
    return [p.lower() for chunk in re.split(r"[_.\-]+", key) for p in _CAMEL.findall(chunk)]


def names_secret(key: str) -> bool:
    """The key names a credential: a credential word, or "key" after a qualifier."""
    parts = _key_parts(key)
    if len(parts) > 1 and parts[-2] in _SESSION_WORDS and parts[-1] in _SESSION_HANDLES:
        return True  # `session_id`, `sess_key`: a session's id is its bearer credential
    if not parts or any(p in _NOT_THE_SECRET for p in parts):
        return False
    joined = "".join(parts)
    if any(p in _SECRET_PARTS for p in parts):
        return True
    if parts[-1] == "key" and len(parts) > 1 and parts[-2] in _KEY_QUALIFIERS:
        return True
    # run together: "appsecret", "dbpassword", "apitoken", "accountkey"
    return any(w in joined for w in ("password", "passwd", "secret", "token", "apikey")) or (
        joined.endswith("key") and any(joined.startswith(q) for q in _KEY_QUALIFIERS)
    )


# keys whose value may be digits alone (a PIN); "tokens: 5000" is a count
_NUMERIC_KEYS = frozenset(
    "pass passwd password pwd pw passcode passkey pin code psk otp totp".split()
)
# words that describe the value instead of being it ("password: hidden")
_ABOUT_WORDS = frozenset(
    "hidden set unset changed reset expired invalid missing empty same different stored saved "
    "encrypted hashed rotated generated provided shared sent unknown secret private masked "
    "none null required optional enabled disabled default".split()
)


def _secret_value(key: str, value: str) -> bool:
    """A value, not a placeholder or a word about it; digits alone only for a PIN's key."""
    bare = value.strip().rstrip(".!?)]}>")
    if len(bare) < 4 or _PLACEHOLDER_VALUE.match(bare) or bare.lower() in _ABOUT_WORDS:
        return False
    if bare.isdigit():
        return len(bare) <= 12 and any(p in _NUMERIC_KEYS for p in _key_parts(key))
    return True


def pair_spans(folded: str) -> list[Span]:
    """`DB_PASS=Xk7#mq2Lp9`, `"pass": "…"`, `X-API-Key: …`, `AccountKey=…;`, `appsecret=…`."""
    if ":" not in folded and "=" not in folded:
        return []
    spans: list[Span] = []
    pos = 0
    while (m := _PAIR.search(folded, pos)) is not None:
        if names_secret(m.group("k")) and _secret_value(m.group("k"), m.group("v")):
            spans.append((*m.span("v"), "secret_pair"))
            pos = m.end()
        else:  # the value may hold the pair: "Cookie: sessionid=…"
            pos = m.start("v")
    return spans


# ---------------------------------------------------------------------------------------
# generated-looking tokens
# ---------------------------------------------------------------------------------------

# A run of token characters, dotted segments included (`sess.<token>`, `<a>.<b>.<c>`:
# a signed cookie's tail is part of it), after anything but another token character:
# `user:<token>` and `session_id=<token>` stand alone too. URLs are cut out first.
_TOKEN = rx(
    r"(?<![A-Za-z0-9+/_\-])[A-Za-z0-9+/_\-]+(?:\.[A-Za-z0-9+/_\-]+)*={0,2}(?![A-Za-z0-9+/_=\-])"
)
_URL = rx(r"(?:[A-Za-z][A-Za-z0-9+.\-]{1,20}://|www\.)[^\s\"'<>`]+")
_HEX = rx(r"[0-9a-fA-F\-]+")
_MIN_ENTROPY = 3.6  # bits per character; random base62 of 20+ chars carries ~4.1
_MIN_SWITCH = (
    0.33  # share of neighbours of another class (upper/lower/digit): random ≈ 0.6, CamelCase ≈ 0.25
)


def _entropy(text: str) -> float:
    counts = Counter(text)
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values())


def _char_class(ch: str) -> int:
    return 0 if ch.isupper() else 1 if ch.islower() else 2 if ch.isdigit() else 3


def _encodes_text(token: str) -> bool:
    """Base64 of readable text: an encoding the unmasked view decodes and the other
    detectors judge (a base64'd injection is an injection), not a random secret."""
    core = token.rstrip("=")
    for decode in (base64.b64decode, base64.urlsafe_b64decode):
        try:
            text = decode(core + "=" * (-len(core) % 4)).decode("utf-8")
        except (binascii.Error, ValueError):
            continue
        if text and sum(c.isprintable() or c.isspace() for c in text) >= 0.95 * len(text):
            return True
    return False


def generated_token(token: str) -> bool:
    """Upper, lower and digits mixed the way a random generator mixes them: words,
    CamelCase identifiers, hex digests, UUIDs and version strings do not."""
    core = token.rstrip("=")
    alnum = [c for c in core if c.isalnum()]
    if len(alnum) < 20 or _HEX.fullmatch(core.replace(".", "")):
        return False
    upper = sum(c.isupper() for c in alnum)
    lower = sum(c.islower() for c in alnum)
    digits = sum(c.isdigit() for c in alnum)
    if min(upper, lower) < 3 or digits < 2:
        return False
    classes = [_char_class(c) for c in alnum]
    switches = sum(a != b for a, b in itertools.pairwise(classes))
    return (
        switches / (len(alnum) - 1) >= _MIN_SWITCH
        and _entropy("".join(alnum)) >= _MIN_ENTROPY
        and not _encodes_text(core)
    )


def token_spans(folded: str) -> list[Span]:
    """A generated-looking token anywhere, named or not ("… needs c11SB5BpQN… appended");
    not inside a URL (a path segment names a page; a credential in a query is a pair)."""
    urls = [m.span() for m in _URL.finditer(folded)] if "/" in folded or "www." in folded else []
    spans: list[Span] = []
    for m in _TOKEN.finditer(folded):
        if m.end() - m.start() < 20 or any(s <= m.start() < e for s, e in urls):
            continue
        if any(generated_token(core) for core in _token_cores(m.group())):
            spans.append((*m.span(), "high_entropy"))
    return spans


# A token written in groups apart by single spaces ("7Hq2 mZ9x Lk4p W8vR 1tY6"): the
# groups that look generated (a digit, or a capital after the first letter) are read
# joined; words between them end the run.
_GROUPS = rx(r"(?<![A-Za-z0-9])[A-Za-z0-9]{2,8}+(?: [A-Za-z0-9]{2,8}+){2,}(?![A-Za-z0-9])")
_GROUP_MIN = 3
_WIDE_MIN = 5  # chunks of one width that make a token with only two token-like ones among them


def _token_like_group(group: str) -> bool:
    return any(c.isdigit() for c in group) or any(c.isupper() for c in group[1:])


# a letter beside a digit, a capital after a lower-case letter, or a lower-case letter after
# two capitals ("LSv": with it, 0 of 139,000 random tokens in groups of four under three, 1
# in 14,000 without; "PDFs" in prose only makes the text searched): three or more of them
# before a text is searched for grouped tokens (prose has few). Counted overlapping: "tlU5"
# holds two ("lU", "U5"); counted apart, 1 in 750 random tokens written in groups of four
# fell under three and rested in a fact (a fresh-clone run of test_secrets_at_rest).
_GROUP_HINT = rx(r"(?=[0-9][A-Za-z]|[A-Za-z][0-9]|[a-z][A-Z]|[A-Z]{2}[a-z])")


def grouped_token_spans(folded: str) -> list[Span]:
    """A generated-looking token written in space-separated groups of two to eight."""
    if (
        " " not in folded
        or next(itertools.islice(_GROUP_HINT.finditer(folded), 2, 3), None) is None
    ):
        return []
    spans: list[Span] = []
    for m in _GROUPS.finditer(folded):
        groups = [g.group() for g in re.finditer(r"[A-Za-z0-9]+", m.group())]
        starts = [g.start() for g in re.finditer(r"[A-Za-z0-9]+", m.group())]
        for a, b in _token_runs(groups):
            spans.append(
                (m.start() + starts[a], m.start() + starts[b] + len(groups[b]), "high_entropy")
            )
    return spans


# Words of prose between two token-like groups end the run ("a 2023 MacBook Pro M3 with
# 36GB RAM" is a product, not a token): a random chunk is one of them about never.
_PROSE_WORDS = frozenset(
    "a an and as at by for from in into is it of on or plus the to was with".split()
)


def _token_runs(groups: list[str]) -> list[tuple[int, int]]:
    """The runs of `groups` (first, last index) that read as one generated token.

    A run is a stretch of token-like groups; a weak group (no digit, no inner capital:
    about one chunk in sixteen of a random token) between two token-like ones is in it.
    A chunked token is cut into groups of one width, so the run is then widened over the
    groups of that width around it (weak ones included) and a shorter last chunk: one
    token when the run or the widened token reads as generated, and then the widened
    span is what is redacted: "Quid Ubls C42Y symP" is one token, not two words and a
    tail."""
    n = len(groups)
    like = [_token_like_group(g) for g in groups]
    inside = [
        like[i] or (0 < i < n - 1 and like[i - 1] and like[i + 1] and groups[i] not in _PROSE_WORDS)
        for i in range(n)
    ]
    runs: list[tuple[int, int]] = []
    i = floor = 0  # floor: after the last run taken (each group is widened over once)
    while i < n:
        if not inside[i]:
            i += 1
            continue
        j = i
        while j + 1 < n and inside[j + 1]:
            j += 1
        if j - i + 1 >= _GROUP_MIN - 1:
            widths = [len(g) for g in groups[i : j + 1]]
            width = max(set(widths), key=widths.count)
            a, b = i, j
            while a > floor and len(groups[a - 1]) == width:
                a -= 1
            while b + 1 < n and len(groups[b]) == width and len(groups[b + 1]) == width:
                b += 1
            ends = [b]
            if b + 1 < n and len(groups[b]) == width and len(groups[b + 1]) < width:
                # the last chunk of a token cut into equal groups is shorter; or it is the
                # next word ("… CEyi ok"): both ends are tried, the longer first
                ends.insert(0, b + 1)
            taken = None
            if j - i + 1 >= _GROUP_MIN and generated_token("".join(groups[i : j + 1])):
                taken = (a, ends[0])
            for end in ends:
                # two token-like groups are enough when the chunks of their width around
                # them make a long token ("Ev4G ntaq rtnr 1d88 q6xd Cglb Rsho": weak chunks
                # of a random token come in pairs about once in 250)
                whole = (a, end) != (i, j) and (j - i + 1 >= _GROUP_MIN or end - a + 1 >= _WIDE_MIN)
                if taken is None and whole and generated_token("".join(groups[a : end + 1])):
                    taken = (a, end)
            if taken is not None:
                runs.append(taken)  # redacted with its chunks of the same width
                j = taken[1]
                floor = taken[1] + 1
        i = j + 1
    return runs


_LABEL_SEGMENT = rx(r"[a-z]{1,8}|v\d{1,2}")


_MAX_LABELS = 4


def _token_cores(token: str) -> list[str]:
    """The token, and the token without its leading label segments (`sess.`, `v1.`): a
    label's letters are not random and dilute the mix a random tail carries."""
    cores = [token]
    segments = token.split(".")
    # a few labels at most: a token of thousands of one-letter segments ("p.a.p.a.…") made
    # as many cores, each read whole (quadratic: 20,000 characters took 7 s)
    while len(segments) > 1 and len(cores) <= _MAX_LABELS and _LABEL_SEGMENT.fullmatch(segments[0]):
        segments = segments[1:]
        cores.append(".".join(segments))
    return cores


# ---------------------------------------------------------------------------------------
# unnamed BIP-39 seed phrases
# ---------------------------------------------------------------------------------------

_WORD_RUN = rx(r"(?<![A-Za-z])[a-z]{3,8}(?:[ ,]+[a-z]{3,8}){11,}(?![A-Za-z])")
_PHRASE_LENGTHS = (24, 21, 18, 15, 12)


@functools.cache
def _bip39() -> dict[str, int]:
    """The English BIP-39 list: word -> its 11-bit index."""
    return {w: i for i, w in enumerate(Mnemonic("english").wordlist)}


def bip39_checksum_holds(words: Sequence[str]) -> bool:
    """BIP-39's checksum over list words (12-24 of them, a multiple of 3): the first
    len/3 bits of sha256(entropy) end the phrase. Computed from a dict of indices and one
    hash, so trying many candidate runs of a long text stays cheap (Mnemonic.check looks
    every word up in a list)."""
    index = _bip39()
    bits = 0
    for w in words:
        bits = (bits << 11) | index[w]
    check_bits = len(words) * 11 // 33
    entropy = (bits >> check_bits).to_bytes(len(words) * 11 * 32 // 33 // 8, "big")
    return hashlib.sha256(entropy).digest()[0] >> (8 - check_bits) == bits & ((1 << check_bits) - 1)


_MAX_RUN = 30  # a longer run of list words is a word list, not a phrase


def seed_phrase_spans(folded: str) -> list[Span]:
    """Twelve to twenty-four BIP-39 words in a row whose checksum holds (1 in 16 for 12
    random list words, and prose is rarely twelve list words in a row). Only maximal runs
    of 12–30 list words are tried, so the work per text is bounded."""
    spans: list[Span] = []
    for run in _WORD_RUN.finditer(folded):
        words = _bip39()
        tokens = [(t.start(), t.end(), t.group()) for t in re.finditer(r"[a-z]+", run.group())]
        listed: list[list[tuple[int, int, str]]] = [[]]
        for token in tokens:
            if token[2] in words:
                listed[-1].append(token)
            elif listed[-1]:
                listed.append([])
        for seq in listed:
            if not 12 <= len(seq) <= _MAX_RUN:
                continue
            i = 0
            while i + 12 <= len(seq):
                n = next(
                    (n for n in _PHRASE_LENGTHS
                     if i + n <= len(seq) and bip39_checksum_holds([w[2] for w in seq[i : i + n]])),
                    0,
                )  # fmt: skip
                if n:
                    spans.append(
                        (run.start() + seq[i][0], run.start() + seq[i + n - 1][1], "seed_phrase")
                    )
                    i += n
                else:
                    i += 1
    return spans


# ---------------------------------------------------------------------------------------
# IBANs and checksummed national numbers in their written shape
# ---------------------------------------------------------------------------------------

# The groups are possessive ({1,4}+): a long unbroken run of letters and digits would
# otherwise be split into groups of one to four in exponentially many ways before the
# final lookahead fails (seconds for 2 KB of crafted text).
_IBAN = rx(r"(?<![A-Za-z0-9])[A-Z]{2}[0-9]{2}(?:[ \-]?[A-Z0-9]{1,4}+){3,9}(?![A-Za-z0-9])")


def iban_spans(folded: str) -> list[Span]:
    """Country code, two check digits, the account: valid when mod 97 and the country's
    length and shape hold. Trailing groups are dropped until it validates."""
    spans: list[Span] = []
    for m in _IBAN.finditer(folded.upper()):
        groups = list(re.finditer(r"[A-Z0-9]+", m.group()))
        for j in range(len(groups), 0, -1):
            text = m.group()[: groups[j - 1].end()]
            if iban.is_valid(re.sub(r"[ \-]", "", text)):
                spans.append((m.start(), m.start() + len(text), "iban"))
                break
    return spans


# a bank account or routing number named as such (it pays like a card): eight or more
# digits after the name, in the same clause
_BANK_ACCOUNT = rx(
    r"(?:(?<![A-Za-z])(?:bank|checking|savings|chequing)\s+account(?:\s+(?:number|no\.?|#))?"
    r"|(?<![A-Za-z])(?:routing|aba)\s+(?:number|no\.?|#)|银行账号|银行帐号|银行账户|收款账号|"
    r"收款账户|收款帐号|对公账号|开户账号)"
    r"[^\n。；;!?！？\d]{0,16}?(?P<v>[0-9](?:[ \-]?[0-9]){7,33})(?![0-9])",
    re.I,
)


# Chinese: an account or card number named with its bank, before it or after it ("招行账户
# 6214-8301-2345-6789", "账号 6214830123456789 招商银行"; round 14). Not an order number or a
# game account: the bank is named.
_ZH_BANK = (
    r"(?:招行|工行|建行|农行|中行|交行|邮储|浦发|民生|兴业|光大|中信|平安银行|开户行|"
    r"[\u4e00-\u9fff]{2,4}银行)"
)
# not another app's account (微信账号), not a hotline or an amount between the name and the
# digits (储蓄卡客服电话 400-…, 账户里存了 10000000 韩元)
_ZH_ACCOUNT = (
    r"(?<!微信)(?<!QQ)(?<!游戏)(?<!邮箱)(?<!抖音)(?<!微博)"
    r"(?:账户|账号|帐号|帐户|卡号|储蓄卡|借记卡|银行卡)"
)
_ZH_GAP = r"(?:(?!电话|热线|客服|手机|存|余额|里|有)[^\n。；;!?！？\d]){0,8}?"
_ZH_DIGITS = (
    r"[0-9](?:[ \-]?[0-9]){7,33})(?![0-9])"
    r"(?!\s*(?:元|块|万|亿|韩元|美元|日元|欧元|港币|人民币|rmb|usd))"
)
_BANK_ACCOUNT_ZH = rx(
    _ZH_BANK
    + r"的?"
    + _ZH_ACCOUNT
    + _ZH_GAP
    + r"(?P<v>"
    + _ZH_DIGITS
    + r"|"
    + _ZH_ACCOUNT
    + _ZH_GAP
    + r"(?P<w>"
    + _ZH_DIGITS
    + r"(?=[^\n。；;!?！？]{0,12}?"
    + _ZH_BANK
    + r")",
    re.I,
)


def bank_account_spans(folded: str) -> list[Span]:
    """ "checking account 0012 3456 789", "收款账号：6217 0000 1234 5678 901", "招行账户
    6214-8301-2345-6789"."""
    spans = [(*m.span("v"), "bank_account") for m in _BANK_ACCOUNT.finditer(folded)]
    for m in _BANK_ACCOUNT_ZH.finditer(folded):
        group = "v" if m.group("v") is not None else "w"
        spans.append((*m.span(group), "bank_account"))
    return spans


_CPF = rx(r"(?<![0-9])[0-9]{3}\.[0-9]{3}\.[0-9]{3}-[0-9]{2}(?![0-9])")
_DNI = rx(r"(?<![A-Za-z0-9])[XYZxyz]?[0-9]{7,8}-?[A-Za-z](?![A-Za-z0-9])")
# Three groups of four standing alone: not the first twelve digits of a card written in
# groups of four ("4539 1488 0343 6467" once read as an Aadhaar, one number in ten does).
_AADHAAR = rx(
    r"(?<![0-9])(?<![0-9][ .\-])(?<![0-9][ .\-]{2})[2-9][0-9]{3}([ \-])[0-9]{4}\1[0-9]{4}"
    r"(?![0-9])(?![ .\-]{1,3}[0-9])"
)
_RRN = rx(r"(?<![0-9])[0-9]{6}-[0-9]{7}(?![0-9])")
_CODICE_FISCALE = rx(
    r"(?<![A-Za-z0-9])[A-Za-z]{6}[0-9]{2}[A-Za-z][0-9]{2}[A-Za-z][0-9]{3}[A-Za-z](?![A-Za-z0-9])"
)
_CURP = rx(r"(?<![A-Za-z0-9])[A-Z]{4}[0-9]{6}[HMX][A-Z]{5}[A-Z0-9][0-9](?![A-Za-z0-9])")
# 3-2-4 split by spaces: a phone is 3-3-4, a date 2-2-4 / 4-2-2; a month and a year
# at its end ("204 11 2024") read as a date
_SSN_SPACED = rx(r"(?<![0-9.])[0-9]{3} [0-9]{2} (?![12][09][0-9]{2}(?![0-9]))[0-9]{4}(?![0-9.])")


# A UK National Insurance number in the shape it is printed in, "QQ 12 34 56 C": two
# letters (not D, F, I, Q, U, V first; not D, F, I, O, Q, U, V second; never BG, GB, KN,
# NK, NT, TN, ZZ), three pairs of digits, A–D. Written together ("QQ123456C") it needs its
# name nearby (the named-document rule), a product code could take that shape.
_NINO = rx(
    r"(?<![A-Za-z0-9])(?!BG|GB|KN|NK|NT|TN|ZZ)[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z]"
    r" [0-9]{2} [0-9]{2} [0-9]{2} [A-D](?![A-Za-z0-9])"
)


def national_id_spans(folded: str) -> list[Span]:
    """CPF `000.000.000-00`, DNI / NIE `00000000X`, Aadhaar `0000 0000 0000`: the shape
    and the check digits together (each alone passes one number in ten to a hundred)."""
    spans: list[Span] = []
    spans += [(*m.span(), "br_cpf") for m in _CPF.finditer(folded) if cpf.is_valid(m.group())]
    for m in _DNI.finditer(folded):
        number = m.group().upper()
        if dni.is_valid(number) or nie.is_valid(number):
            spans.append((*m.span(), "es_dni"))
    spans += [
        (*m.span(), "in_aadhaar") for m in _AADHAAR.finditer(folded) if aadhaar.is_valid(m.group())
    ]
    spans += [(*m.span(), "kr_rrn") for m in _RRN.finditer(folded) if rrn.is_valid(m.group())]
    spans += [
        (*m.span(), "it_codice_fiscale")
        for m in _CODICE_FISCALE.finditer(folded)
        if codicefiscale.is_valid(m.group().upper())
    ]
    spans += [(*m.span(), "mx_curp") for m in _CURP.finditer(folded) if curp.is_valid(m.group())]
    spans += [
        (*m.span(), "us_ssn")
        for m in _SSN_SPACED.finditer(folded)
        if ssn.is_valid(m.group().replace(" ", ""))
    ]
    spans += [(*m.span(), "uk_nino") for m in _NINO.finditer(folded)]
    return spans
