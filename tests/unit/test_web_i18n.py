"""The /me page's strings (app/web/i18n.py): both languages say everything, and the
language is picked from the switch, else Accept-Language. Pure, no I/O."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from app.memory.model import Decision, FactType, Reason, SourceKind
from app.web import i18n

TEMPLATES = Path(__file__).resolve().parents[2] / "app" / "web" / "templates"


def test_both_languages_have_every_string() -> None:
    assert set(i18n.EN) == set(i18n.ZH)
    for table in (i18n.REASONS, i18n.SOURCES, i18n.STATUSES):
        assert set(table["en"]) == set(table["zh"])
    assert all(re.search(r"[\u4e00-\u9fff]", v) for k, v in i18n.ZH.items() if k != "none")


def test_every_code_the_page_shows_has_words() -> None:
    reasons = {r.value for r in Reason} - {"ok"}
    assert reasons <= set(i18n.REASONS["en"]), reasons - set(i18n.REASONS["en"])
    assert {s.value for s in SourceKind} <= set(i18n.SOURCES["en"])
    assert {f"decision_{d.value}" for d in Decision} <= set(i18n.EN)
    assert {f"group_{t.value}" for t in FactType} <= set(i18n.EN)


def test_templates_use_only_known_strings() -> None:
    used = set()
    for path in TEMPLATES.glob("*.html"):
        used |= set(re.findall(r"\bt\.([a-z_]+)", path.read_text(encoding="utf-8")))
    assert used and used <= set(i18n.EN), used - set(i18n.EN)


@pytest.mark.parametrize(
    "cookie, header, lang",
    [
        (None, None, "en"),
        (None, "zh-CN,zh;q=0.9,en;q=0.8", "zh"),
        (None, "en-US,en;q=0.9,zh;q=0.8", "en"),
        (None, "fr-FR,zh-TW;q=0.5,en;q=0.4", "zh"),
        (None, "de, fr;q=0.5", "en"),
        (None, "zh;q=0, en;q=0.1", "en"),
        (None, "zh;q=abc", "en"),
        ("en", "zh-CN", "en"),
        ("zh", "en-US", "zh"),
        ("xx", "zh-CN", "zh"),
    ],
)
def test_pick_lang(cookie: str | None, header: str | None, lang: str) -> None:
    assert i18n.pick_lang(cookie, header) == lang
