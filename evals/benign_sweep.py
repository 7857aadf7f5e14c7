"""The gate's rules over a large benign pool, to diff two commits' decisions.

`python evals/benign_sweep.py --root TREE --out decisions.json` screens, with the code of
TREE (a checkout of any commit), every text of the pool through the gate's pure screening
(`gate.screen`, rules alone, the shipped policy) and records each decision and whether
`detectors.redact` changes it. `--diff A.json B.json` lists what changed between two runs:
a benign text newly refused or newly redacted must be justified or fixed.

The pool, all benign: every turn and observation of LoCoMo's dev conversations
(../shared/data/locomo/locomo-dev.json), every turn of tests/data/eval/zh-longconv.json,
the benign cases of the gate corpus's *train* split (the test split is never read), and
the good items of tests/data/eval/*.yaml. Standard library and the app only.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parents[1]
LOCOMO = HERE.parent / "shared" / "data" / "locomo" / "locomo-dev.json"
EVAL_DIR = HERE / "tests" / "data" / "eval"

Item = tuple[str, dict[str, Any]]  # id, candidate fields


def _text(text: str) -> dict[str, Any]:
    return {"statement": text}


def _conversation_items(path: Path, tag: str) -> Iterator[Item]:
    for sample in json.loads(path.read_text(encoding="utf-8")):
        sid = sample.get("sample_id", "?")
        conv = sample["conversation"]
        for key, turns in conv.items():
            if key.startswith("session_") and isinstance(turns, list):
                for turn in turns:
                    if turn.get("text"):
                        yield f"{tag}:{sid}:{turn['dia_id']}", _text(turn["text"])
        for key, by_speaker in (sample.get("observation") or {}).items():
            for speaker, obs in by_speaker.items():
                for i, (text, *_) in enumerate(obs):
                    yield f"{tag}:{sid}:{key}:{speaker}:{i}", _text(text)


def _body(body: dict[str, Any]) -> dict[str, Any]:
    src = body.get("source") or {}
    return {
        "type": body.get("type", "semantic"),
        "statement": body.get("statement", ""),
        "value": body.get("value"),
        "predicate": body.get("predicate"),
        "kind": src.get("kind") or body.get("kind"),
        "evidence": src.get("evidence"),
        "consent": bool(body.get("consent", False)),
        "keys": tuple(body.get("keys") or ()),
    }


def _walk(node: Any, path: str) -> Iterator[Item]:
    """Bodies (a dict with a statement) and user messages of items not labelled bad."""
    if isinstance(node, dict):
        if str(node.get("gold", "")).lower() in ("bad", "harmful"):
            return
        if isinstance(node.get("statement"), str):
            yield path, _body(node)
            return
        for key, child in node.items():
            if key == "messages" and isinstance(child, list):
                for i, m in enumerate(child):
                    content = m if isinstance(m, str) else (m or {}).get("content")
                    role = "user" if isinstance(m, str) else (m or {}).get("role", "user")
                    if isinstance(content, str) and role == "user":
                        yield f"{path}/messages/{i}", _text(content)
            else:
                yield from _walk(child, f"{path}/{node.get('id', key)}")
    elif isinstance(node, list):
        for i, child in enumerate(node):
            yield from _walk(child, f"{path}/{i}")


def _eval_items() -> Iterator[Item]:
    import yaml

    for path in sorted(EVAL_DIR.glob("*.yaml")):
        yield from _walk(yaml.safe_load(path.read_text(encoding="utf-8")), path.stem)


def _gate_train_items() -> Iterator[Item]:
    from evals import gate_corpus

    for case in gate_corpus.load_corpus():
        if gate_corpus.split_of(case["id"]) != "train" or case.get("gold") != "benign":
            continue
        if isinstance(case.get("body"), dict):
            yield case["id"], _body(case["body"])
        for i, turn in enumerate(gate_corpus.turns_of(case) if "turns" in case else ()):
            content = turn.get("content") if isinstance(turn, dict) else turn
            role = turn.get("role", "user") if isinstance(turn, dict) else "user"
            if isinstance(content, str) and role == "user":
                yield f"{case['id']}/turn/{i}", _text(content)


def pool() -> list[Item]:
    items = list(_conversation_items(LOCOMO, "locomo"))
    items += _conversation_items(EVAL_DIR / "zh-longconv.json", "zhlong")
    items += _gate_train_items()
    items += _eval_items()
    return items


def run(root: Path) -> dict[str, dict[str, Any]]:
    sys.path.insert(0, str(root))
    import uuid

    import yaml

    from app.memory import detectors, gate  # the tree's own code
    from app.memory.model import Candidate, FactType, KeyRights, Role, SourceKind
    from app.memory.policy import Policy
    from app.memory.text import nfkc

    policy = Policy.model_validate(
        yaml.safe_load((root / "config" / "policy.yaml").read_text(encoding="utf-8"))
    )
    admin = KeyRights(key_id=uuid.uuid4(), role=Role.ADMIN)
    out: dict[str, dict[str, Any]] = {}
    for item_id, f in pool():
        statement = f["statement"] or "(none)"
        candidate = Candidate(
            user_id="u1",
            type=FactType(f.get("type", "semantic")),
            statement=statement,
            value=f.get("value"),
            predicate=f.get("predicate"),
            source_kind=SourceKind(f["kind"]) if f.get("kind") else SourceKind.USER_MESSAGE,
            evidence=f.get("evidence"),
            consent=f.get("consent", False),
            keys=f.get("keys", ()),
        )
        result = gate.screen(candidate, admin, policy, ())
        decision = "pass" if result is None else f"{result.reason}:{result.detail.get('detector')}"
        out[item_id] = {
            "text": statement[:160],
            "decision": decision,
            "redacted": detectors.redact(statement) != nfkc(statement),
        }
    return out


def diff(a: dict[str, dict[str, Any]], b: dict[str, dict[str, Any]]) -> int:
    changed = [k for k in b if k in a and a[k]["decision"] != b[k]["decision"]]
    redacted = [k for k in b if k in a and a[k]["redacted"] != b[k]["redacted"]]
    refused = Counter("pass" if v["decision"] == "pass" else "refused" for v in a.values())
    print(f"pool: {len(a)} texts (before: {dict(refused)})")
    newly = [k for k in changed if a[k]["decision"] == "pass"]
    freed = [k for k in changed if b[k]["decision"] == "pass"]
    print(
        f"decisions changed: {len(changed)}: newly refused {len(newly)}, newly passing "
        f"{len(freed)}, refused for another reason {len(changed) - len(newly) - len(freed)}"
    )
    for k in changed:
        print(f"  {k}: {a[k]['decision']} -> {b[k]['decision']}  | {b[k]['text']}")
    print(f"redaction changed: {len(redacted)}")
    for k in redacted:
        print(f"  {k}: redacted {a[k]['redacted']} -> {b[k]['redacted']}  | {b[k]['text']}")
    return len(changed) + len(redacted)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=HERE)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--diff", nargs=2, type=Path)
    args = parser.parse_args()
    if args.diff:
        a, b = (json.loads(p.read_text(encoding="utf-8")) for p in args.diff)
        diff(a, b)
        return 0
    decisions = run(args.root.resolve())
    text = json.dumps(decisions, ensure_ascii=False, indent=0)
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
