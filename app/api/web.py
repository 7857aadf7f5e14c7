"""The "facts about me" web page, GET /me: server-rendered HTML from the same app, no
script, no build step (docs/isolation.md#the-me-page).

Sign-in is a one-time link (`POST /v1/users/{u}/tokens {"link": true}` → `login_url`)
whose page posts the code back (opening the link spends nothing), and the post sets an
HttpOnly, SameSite=Strict session cookie on Path=/me; the session is exactly the
user token's principal (app/services/web.py). Every form carries the session's CSRF token
and every POST is also refused from another origin. Actions go through the same services
and helpers as the JSON /v1/me routes (app/api/me.py): the gate decides a correction, and
the page shows its decision and reason codes, never text a request carried. Forms and
redirects only (POST → 303 → GET). These routes are pages, not the API: they stay out of
the OpenAPI document.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Coroutine, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, Literal
from urllib.parse import parse_qsl, urlencode, urlsplit

from fastapi import APIRouter, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from fastapi.routing import APIRoute
from jinja2 import Environment, FileSystemLoader, select_autoescape
from pydantic import ValidationError

from app import clock
from app.api.deps import check_rate, get_ctx
from app.api.facts import patch_outcome
from app.api.me import export_body, why_kept
from app.api.schemas.facts import FactPatch
from app.api.validation import text_problem
from app.auth import Principal, row_visible
from app.errors import (
    ConfirmationMismatch,
    CsrfFailed,
    InvalidRequest,
    MemgateError,
    PayloadTooLarge,
    Unauthorized,
)
from app.memory.model import Decision, FactType
from app.services import candidates as candidates_service
from app.services import facts as facts_service
from app.services import me as me_service
from app.services import web as web_service
from app.web import i18n
from app.web.i18n import Lang

SESSION_COOKIE = "memgate_me"
LANG_COOKIE = "memgate_lang"
MAX_FORM_BYTES = 64_000
HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'"
    ),
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}
_WEB = Path(__file__).resolve().parents[1] / "web"
_TEMPLATES = Environment(
    loader=FileSystemLoader(_WEB / "templates"),
    autoescape=select_autoescape(default=True, default_for_string=True),
)
_STATIC = {"me.css": ((_WEB / "static" / "me.css").read_bytes(), "text/css; charset=utf-8")}
_FIELDS = frozenset({"statement", "value", "predicate", "evidence", "keys"})


class PageRoute(APIRoute):
    """Errors of a page answer an HTML page with their status and stable code; every
    answer carries the page's security headers (strict CSP, no referrer, nosniff)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def page_handler(request: Request) -> Response:
            try:
                response = await handler(request)
            except MemgateError as exc:
                response = error_page(request, exc.status, exc.code)
            except RequestValidationError:
                response = error_page(request, 422, InvalidRequest.code)
            response.headers.update(HEADERS)
            return response

        return page_handler


router = APIRouter(prefix="/me", route_class=PageRoute, include_in_schema=False)


# ----------------------------------------------------------------------------- helpers


def lang_of(request: Request) -> Lang:
    return i18n.pick_lang(request.cookies.get(LANG_COOKIE), request.headers.get("accept-language"))


def render(request: Request, template: str, status: int = 200, **values: Any) -> HTMLResponse:
    lang = values.pop("lang", None) or lang_of(request)
    html = _TEMPLATES.get_template(template).render(lang=lang, t=i18n.strings(lang), **values)
    return HTMLResponse(html, status_code=status)


def error_page(request: Request, status: int, code: str) -> HTMLResponse:
    t = i18n.strings(lang_of(request))
    message = t.get(f"err_{code}", t["err_other"])
    return render(request, "error.html", status, code=code, message=message)


def see_other(url: str) -> RedirectResponse:
    return RedirectResponse(url, status_code=303)


def _secure_cookie(request: Request) -> bool:
    """Secure, unless a test or development server is reached over plain http."""
    local = get_ctx(request).settings.env in ("test", "development")
    return not (local and request.url.scheme == "http")


async def _session(request: Request) -> tuple[str, Principal] | None:
    sid = request.cookies.get(SESSION_COOKIE)
    if not sid:
        return None
    who = await web_service.session_principal(get_ctx(request), sid, clock.now())
    if who is None:
        return None
    await check_rate(get_ctx(request), who.key_id)  # the token's bucket, as on /v1/me
    return sid, who


def _check_origin(request: Request) -> None:
    """A form post comes from this page: refused when the browser says another site sent
    it (Sec-Fetch-Site), or its Origin is another host. Under `Referrer-Policy:
    no-referrer` a browser sends `Origin: null` even for its own forms: that passes only
    with `Sec-Fetch-Site: same-origin` (the CSRF token is checked in any case)."""
    site = request.headers.get("sec-fetch-site")
    if site is not None and site not in ("same-origin", "none"):
        raise CsrfFailed("cross-site form post")
    origin = request.headers.get("origin")
    if origin == "null":
        if site != "same-origin":
            raise CsrfFailed("form post from an opaque origin")
    elif origin is not None and urlsplit(origin).netloc != request.headers.get("host"):
        raise CsrfFailed("form post from another origin")


async def _form(request: Request) -> dict[str, str]:
    body = await request.body()
    if len(body) > MAX_FORM_BYTES:
        raise PayloadTooLarge(f"form over {MAX_FORM_BYTES} bytes")
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "application/x-www-form-urlencoded":
        raise CsrfFailed("not a form post of the page")
    try:
        pairs = parse_qsl(body.decode("utf-8"), keep_blank_values=True, max_num_fields=20)
    except (UnicodeDecodeError, ValueError) as exc:
        raise InvalidRequest("malformed form") from exc
    for name, value in pairs:
        if text_problem(name) or text_problem(value):
            raise InvalidRequest("invalid text in the form")
    return dict(pairs)


async def signed_in_post(request: Request) -> tuple[str, Principal, dict[str, str]]:
    """A POST of the page: a live session, from this origin, with the session's CSRF token."""
    found = await _session(request)
    if found is None:
        raise Unauthorized("not signed in")
    _check_origin(request)
    sid, who = found
    form = await _form(request)
    if not web_service.csrf_valid(get_ctx(request).secret, sid, form.get("csrf", "")):
        raise CsrfFailed("missing or wrong CSRF token")
    return sid, who, form


def _uid(who: Principal) -> str:
    assert who.user_id is not None  # a session stands for a user token
    return who.user_id


def _when(value: datetime | None) -> tuple[str, str]:
    if value is None:
        return "", ""
    return value.isoformat(), value.strftime("%Y-%m-%d %H:%M UTC")


def _value_text(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def fact_view(
    row: Mapping[str, Any], lang: Lang, tier: str | None = None, candidate: bool = False
) -> dict[str, Any]:
    """What the page shows of a fact or candidate, in the page's language."""
    t = i18n.strings(lang)
    kind = row["source_kind"]
    learned_iso, learned = _when(row["created_at"])
    view: dict[str, Any] = {
        "id": str(row["id"]),
        "statement": row["statement"],
        "value": row["value"],
        "value_text": _value_text(row["value"]),
        "value_kind": "string" if isinstance(row["value"], str) else "json",
        "source_text": i18n.SOURCES[lang].get(kind, kind),
        "turn_id": None if candidate else row["source_turn_id"],
        "evidence": row["evidence"] if candidate else row["source_evidence"],
        "learned": learned,
        "learned_iso": learned_iso,
        "confidence": f"{float(row['confidence']):.0%}",
        "scope": row["scope"],
        "tier": tier,
        "tier_text": t[f"tier_{tier}"] if tier else None,
        "why": None if candidate else why_kept(row, lang),
    }
    if candidate:
        reason = row["reason"]
        view["reason"] = i18n.REASONS[lang].get(reason, reason) if reason else None
    else:
        view["version"] = row["version"]
        view["status_text"] = i18n.STATUSES[lang].get(row["status"], row["status"])
    return view


def _flash(query: Mapping[str, str], lang: Lang) -> dict[str, Any] | None:
    """The last action's outcome, from the redirect's query: codes only, each looked up
    in the page's strings (anything else in the query is ignored)."""
    t = i18n.strings(lang)
    done = query.get("done")
    if done in ("deleted", "rejected", "signed_out", "forgotten"):
        return {"text": t[f"done_{done}"], "bad": False}
    decision = query.get("decision")
    if done not in ("corrected", "confirmed") or decision not in {d.value for d in Decision}:
        return None
    sep = "" if lang == "zh" else " "
    reason = query.get("reason")
    field = query.get("field")
    return {
        "text": f"{t[f'done_{done}']}{sep}{t[f'decision_{decision}']}",
        "bad": decision == Decision.REJECTED.value,
        "reason": i18n.REASONS[lang].get(reason) if reason else None,
        "reason_code": reason if reason in i18n.REASONS[lang] else None,
        "field": field if field in _FIELDS else None,
    }


def _outcome_url(done: str, body: Mapping[str, Any]) -> str:
    query = {"done": done, "decision": body["decision"]}
    if body.get("reason"):
        query["reason"] = body["reason"]
    field = (body.get("detail") or {}).get("field")
    if isinstance(field, str):
        query["field"] = field.split(".")[0]
    anchor = f"#fact-{body['fact']['id']}" if body.get("fact") else ""
    return f"/me?{urlencode(query)}{anchor}"


# ------------------------------------------------------------------------------- pages


@router.get("", response_class=HTMLResponse)
async def my_page(request: Request) -> Response:
    lang = lang_of(request)
    flash = _flash(request.query_params, lang)
    found = await _session(request)
    if found is None:
        # A link opened from another site arrives without the Strict cookie on the
        # redirect: one same-site reload (a meta refresh, no script) sends it.
        cross = request.headers.get("sec-fetch-site") == "cross-site"
        has_cookie = SESSION_COOKIE in request.cookies
        return render(request, "signed_out.html", flash=flash, refresh=cross and not has_cookie)
    sid, who = found
    seen = await me_service.overview(get_ctx(request), who, _uid(who), clock.now())
    t = i18n.strings(lang)
    groups = []
    for kind in FactType:
        rows = [r for r in seen.facts if r["type"] == kind.value]
        if rows:
            groups.append(
                {
                    "type": kind.value,
                    "title": t[f"group_{kind.value}"],
                    "facts": [fact_view(r, lang, seen.fact_tiers.get(r["id"])) for r in rows],
                }
            )
    return render(
        request,
        "me.html",
        lang=lang,
        flash=flash,
        user_id=who.user_id,
        csrf=web_service.csrf_token(get_ctx(request).secret, sid),
        groups=groups,
        more=seen.more,
        candidates=[fact_view(c, lang, candidate=True) for c in seen.candidates],
        user_tier=seen.user_tier,
    )


@router.get("/login", response_class=HTMLResponse)
async def login_page(request: Request, code: str = "") -> Response:
    """The link's landing page: a button that posts the code. Opening the link spends
    nothing, so a mail scanner or a link preview that fetches it cannot burn the one-time
    code before its user clicks; only the POST below trades it for a session."""
    user_id = await web_service.check_code(get_ctx(request), code, clock.now())
    return render(request, "sign_in.html", code=code, user_id=user_id)


@router.post("/login")
async def login(request: Request) -> Response:
    """Trade the one-time code for a session cookie. Only a post of the landing page itself
    (same origin): another site cannot sign a browser in to its own user (login CSRF)."""
    _check_origin(request)
    form = await _form(request)
    ctx = get_ctx(request)
    sid, max_age = await web_service.sign_in(ctx, form.get("code", ""), clock.now())
    old = request.cookies.get(SESSION_COOKIE)
    if old:
        await web_service.sign_out(ctx, old)
    response = see_other("/me")
    response.set_cookie(
        SESSION_COOKIE,
        sid,
        max_age=max_age,
        path="/me",
        httponly=True,
        samesite="strict",
        secure=_secure_cookie(request),
    )
    return response


@router.post("/logout")
async def logout(request: Request) -> Response:
    sid, _, _ = await signed_in_post(request)
    await web_service.sign_out(get_ctx(request), sid)
    response = see_other("/me?done=signed_out")
    response.delete_cookie(SESSION_COOKIE, path="/me")
    return response


@router.get("/lang/{lang}")
async def switch_lang(request: Request, lang: Literal["en", "zh"]) -> Response:
    response = see_other("/me")
    response.set_cookie(
        LANG_COOKIE,
        lang,
        max_age=365 * 24 * 3600,
        path="/me",
        httponly=True,
        samesite="lax",
        secure=_secure_cookie(request),
    )
    return response


@router.get("/static/{name}")
async def static(name: str) -> Response:
    found = _STATIC.get(name)
    if found is None:
        return Response(status_code=404)
    content, media = found
    return Response(content, media_type=media, headers={"Cache-Control": "max-age=3600"})


@router.get("/facts/{fact_id}", response_class=HTMLResponse)
async def fact_history(request: Request, fact_id: uuid.UUID) -> Response:
    """The fact's versions, oldest first (what GET /v1/users/{u}/facts/{id}/history shows)."""
    found = await _session(request)
    if found is None:
        raise Unauthorized("not signed in")
    sid, who = found
    lang = lang_of(request)
    versions = await facts_service.history(get_ctx(request), who, _uid(who), fact_id)
    return render(
        request,
        "history.html",
        lang=lang,
        user_id=who.user_id,
        csrf=web_service.csrf_token(get_ctx(request).secret, sid),
        versions=[
            fact_view(v, lang) for v in versions if v["status"] != "deleted" and row_visible(who, v)
        ],
    )


@router.get("/export")
async def export(request: Request) -> Response:
    """The same JSON as GET /v1/me/export, as a download."""
    found = await _session(request)
    if found is None:
        raise Unauthorized("not signed in")
    _, who = found
    body = await export_body(request, who)
    name = f"memgate-export-{_uid(who)}.json"
    return JSONResponse(body, headers={"Content-Disposition": f'attachment; filename="{name}"'})


# ----------------------------------------------------------------------------- actions


@router.post("/facts/{fact_id}/correct")
async def correct(request: Request, fact_id: uuid.UUID) -> Response:
    """A correction through the gate, as PATCH /v1/me/facts/{id}: the page shows the
    decision and its reason."""
    _, who, form = await signed_in_post(request)
    changes: dict[str, Any] = {"statement": form.get("statement", "")}
    if "value" in form and form["value"] != form.get("value_was"):
        value: Any = form["value"]
        if form.get("value_kind") == "json":
            try:
                value = json.loads(value)
            except ValueError:
                pass  # what the user typed, as text
        changes["value"] = value
    try:
        body = FactPatch.model_validate(changes)
    except ValidationError as exc:
        raise InvalidRequest("invalid correction") from exc
    outcome = await patch_outcome(request, who, who.rights, _uid(who), fact_id, body)
    return see_other(_outcome_url("corrected", outcome.body()))


@router.post("/facts/{fact_id}/delete")
async def delete(request: Request, fact_id: uuid.UUID) -> Response:
    _, who, _ = await signed_in_post(request)
    await facts_service.delete(get_ctx(request), who, _uid(who), fact_id, clock.now())
    return see_other("/me?done=deleted")


@router.post("/candidates/{candidate_id}/confirm")
async def confirm(request: Request, candidate_id: uuid.UUID) -> Response:
    _, who, _ = await signed_in_post(request)
    outcome, _ = await candidates_service.confirm(
        get_ctx(request), who, _uid(who), candidate_id, clock.now()
    )
    return see_other(_outcome_url("confirmed", outcome.body()))


@router.post("/candidates/{candidate_id}/reject")
async def reject(request: Request, candidate_id: uuid.UUID) -> Response:
    _, who, _ = await signed_in_post(request)
    await candidates_service.reject(get_ctx(request), who, _uid(who), candidate_id, clock.now())
    return see_other("/me?done=rejected")


_FORGET_WORDS = {i18n.EN["forget_word"].casefold(), i18n.ZH["forget_word"]}


@router.post("/forget")
async def forget(request: Request) -> Response:
    """Forget me (DELETE /v1/me) once the user typed the confirmation word; the session
    ends with it (its token is revoked)."""
    sid, who, form = await signed_in_post(request)
    if form.get("confirm", "").strip().casefold() not in _FORGET_WORDS:
        raise ConfirmationMismatch("type the confirmation word to forget everything")
    await me_service.forget(get_ctx(request), who, _uid(who), clock.now())
    await web_service.sign_out(get_ctx(request), sid)
    response = see_other("/me?done=forgotten")
    response.delete_cookie(SESSION_COOKIE, path="/me")
    return response
