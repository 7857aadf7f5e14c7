# ruff: noqa: E501  (a table of strings: one per line reads better than wrapped)
"""Every string of the /me page, in English and Chinese (docs/isolation.md#the-me-page).

`pick_lang` chooses from the switch's cookie, else Accept-Language; `strings(lang)` is
what the templates read. Codes (decisions, reasons, errors) are looked up by their
stable name, so the page never echoes text a request carried.
"""

from __future__ import annotations

from typing import Literal

Lang = Literal["en", "zh"]
LANGS: tuple[Lang, ...] = ("en", "zh")

EN: dict[str, str] = {
    "title": "Facts about me",
    "intro": "What memgate keeps about you, why, and how sure it is. You can correct, delete, confirm, download or erase it.",
    "signed_in_as": "Signed in as",
    "sign_out": "Sign out",
    "language": "Language",
    "sign_in_title": "Sign in",
    "sign_in_body": "This link signs you in to the page of what is kept about you. It works once.",
    "sign_in_button": "Sign in",
    "sign_in_as": "You will be signed in as",
    "sign_in_not_you": "If this is not you, close this page: someone may have sent you a link to their own account.",
    "signed_out_title": "You are not signed in",
    "signed_out_body": "Open the sign-in link the application gave you. A link works once and for a few minutes.",
    "continue": "Continue",
    "your_tier": "Memory freshness",
    "group_profile": "Profile",
    "group_semantic": "Preferences and facts",
    "group_episodic": "Things that happened",
    "group_procedural": "Instructions",
    "no_facts": "Nothing is kept about you.",
    "more_facts": "Only the newest 200 facts are listed; the download has them all.",
    "statement": "Statement",
    "value": "Value",
    "source": "Source",
    "turn": "turn",
    "evidence": "Evidence",
    "learned": "Learned",
    "confidence": "Confidence",
    "scope": "Scope",
    "freshness": "Freshness",
    "why": "Why it is kept",
    "version": "Version",
    "status": "Status",
    "none": "—",
    "correct": "Correct",
    "correct_title": "Correct this fact",
    "save": "Save correction",
    "delete": "Delete",
    "history": "History",
    "history_title": "History of a fact",
    "history_intro": "Every version, oldest first. A correction makes a new version and keeps the old one as superseded.",
    "back": "Back to my facts",
    "candidates": "Waiting for your answer",
    "candidates_intro": "memgate did not keep these without asking you.",
    "no_candidates": "Nothing is waiting for your answer.",
    "held_because": "Held because",
    "confirm": "Yes, keep it",
    "reject": "No, forget it",
    "export": "Download my data",
    "export_intro": "Everything kept about you, as JSON.",
    "export_link": "Download (JSON)",
    "forget": "Forget me",
    "forget_intro": "Erases everything memgate keeps about you, in every scope, and signs you out. This cannot be undone.",
    "forget_word": "FORGET",
    "forget_label": "Type {word} to confirm",
    "forget_button": "Erase everything about me",
    "tier_continue": "fresh",
    "tier_confirm": "to confirm",
    "tier_new": "old",
    "user_tier_continue": "You were here recently: memory is used as it is.",
    "user_tier_confirm": "It has been a while: the assistant confirms what it remembers before relying on it.",
    "user_tier_new": "It has been long: the assistant treats you almost as a new user.",
    "done_deleted": "Deleted. It will not come back.",
    "done_rejected": "Refused: it will not be kept.",
    "done_signed_out": "You are signed out.",
    "done_forgotten": "Everything about you was erased, and you are signed out.",
    "done_corrected": "Your correction",
    "done_confirmed": "Your confirmation",
    "decision_written": "was saved.",
    "decision_merged": "matched what was already kept, which was updated.",
    "decision_superseded": "was saved; the earlier version is kept as history.",
    "decision_pending": "is waiting for your confirmation.",
    "decision_rejected": "was refused by the memory gate.",
    "reason": "Reason",
    "field": "in the field",
    "error_title": "Something went wrong",
    "error_code": "Code",
    "err_csrf_failed": "This form was not sent from your page (its security token is missing or wrong). Reload the page and try again.",
    "err_login_link_invalid": "This sign-in link is unknown, already used or expired. Ask the application for a new one.",
    "err_not_found": "Not found.",
    "err_unauthorized": "You are not signed in.",
    "err_forbidden": "This sign-in does not allow that.",
    "err_conflict": "It changed meanwhile. Reload the page and try again.",
    "err_invalid_request": "The form was not filled in correctly.",
    "err_confirmation_mismatch": "Type the confirmation word exactly as shown.",
    "err_payload_too_large": "That is too long.",
    "err_other": "Please try again later.",
}

ZH: dict[str, str] = {
    "title": "关于我的记忆",
    "intro": "memgate 记住了你哪些事、为什么记住、有多确定。你可以更正、删除、确认、下载或全部清除。",
    "signed_in_as": "当前用户",
    "sign_out": "退出登录",
    "language": "语言",
    "sign_in_title": "登录",
    "sign_in_body": "这个链接让你登录，查看为你保存的信息。它只能使用一次。",
    "sign_in_button": "登录",
    "sign_in_as": "你将登录为",
    "sign_in_not_you": "如果这不是你，请关闭此页面：可能有人发给你的是他自己账户的链接。",
    "signed_out_title": "你尚未登录",
    "signed_out_body": "请打开应用给你的登录链接。每个链接只能使用一次，几分钟内有效。",
    "continue": "继续",
    "your_tier": "记忆新鲜度",
    "group_profile": "个人资料",
    "group_semantic": "偏好与事实",
    "group_episodic": "发生过的事",
    "group_procedural": "指令",
    "no_facts": "目前没有保存任何关于你的信息。",
    "more_facts": "这里只列出最新的 200 条；下载的文件包含全部内容。",
    "statement": "内容",
    "value": "值",
    "source": "来源",
    "turn": "对话轮次",
    "evidence": "依据",
    "learned": "记录时间",
    "confidence": "置信度",
    "scope": "范围",
    "freshness": "新鲜度",
    "why": "保存原因",
    "version": "版本",
    "status": "状态",
    "none": "—",
    "correct": "更正",
    "correct_title": "更正这条记忆",
    "save": "保存更正",
    "delete": "删除",
    "history": "历史",
    "history_title": "这条记忆的历史",
    "history_intro": "所有版本，从早到晚。每次更正都会生成新版本，旧版本保留为已取代。",
    "back": "返回我的记忆",
    "candidates": "等待你确认",
    "candidates_intro": "这些内容在征得你同意之前不会被保存。",
    "no_candidates": "没有等待你确认的内容。",
    "held_because": "等待原因",
    "confirm": "确认保存",
    "reject": "不要保存",
    "export": "下载我的数据",
    "export_intro": "以 JSON 格式导出关于你的全部记忆。",
    "export_link": "下载（JSON）",
    "forget": "忘记我",
    "forget_intro": "清除 memgate 在所有范围内保存的关于你的一切，并退出登录。此操作无法撤销。",
    "forget_word": "忘记我",
    "forget_label": "输入“{word}”以确认",
    "forget_button": "清除关于我的一切",
    "tier_continue": "新鲜",
    "tier_confirm": "待确认",
    "tier_new": "陈旧",
    "user_tier_continue": "你最近来过：记忆按原样使用。",
    "user_tier_confirm": "有一段时间没来了：助手会先向你确认记忆再使用。",
    "user_tier_new": "很久没来了：助手几乎把你当作新用户。",
    "done_deleted": "已删除，不会再出现。",
    "done_rejected": "已拒绝，不会保存。",
    "done_signed_out": "你已退出登录。",
    "done_forgotten": "关于你的一切都已清除，你已退出登录。",
    "done_corrected": "你的更正",
    "done_confirmed": "你的确认",
    "decision_written": "已保存。",
    "decision_merged": "与已有记忆相同，已合并更新。",
    "decision_superseded": "已保存；旧版本保留在历史中。",
    "decision_pending": "正在等待你确认。",
    "decision_rejected": "被记忆闸门拒绝。",
    "reason": "原因",
    "field": "字段",
    "error_title": "出错了",
    "error_code": "错误码",
    "err_csrf_failed": "这个表单不是从你的页面提交的（安全令牌缺失或错误）。请刷新页面后重试。",
    "err_login_link_invalid": "这个登录链接无效、已被使用或已过期。请向应用重新获取。",
    "err_not_found": "未找到。",
    "err_unauthorized": "你尚未登录。",
    "err_forbidden": "当前登录不允许此操作。",
    "err_conflict": "内容已被修改。请刷新页面后重试。",
    "err_invalid_request": "表单填写有误。",
    "err_confirmation_mismatch": "请按提示准确输入确认词。",
    "err_payload_too_large": "内容太长。",
    "err_other": "请稍后再试。",
}

# the gate's reason codes (docs/gate.md#reason-codes), in words
REASONS: dict[Lang, dict[str, str]] = {
    "en": {
        "scope_forbidden": "this scope may not be written",
        "procedural_requires_admin": "instructions are set by the operator",
        "secret_detected": "it contains a secret (a password, key or token); it is not shown here",
        "government_id": "it contains an ID number",
        "payment_card": "it contains a payment card number",
        "prompt_injection": "it reads like an instruction to the assistant",
        "external_source": "it comes from external content",
        "missing_source": "its source is missing",
        "third_party_pii": "it is about another person",
        "sensitive_needs_consent": "it is sensitive and needs your consent",
        "not_reusable": "it is not worth remembering (a passing remark)",
        "tombstoned": "you deleted this before",
        "lower_authority": "a more trusted source says otherwise",
    },
    "zh": {
        "scope_forbidden": "不允许写入这个范围",
        "procedural_requires_admin": "指令由运营方设定",
        "secret_detected": "包含机密信息（密码、密钥或令牌），此处不显示",
        "government_id": "包含证件号码",
        "payment_card": "包含银行卡号",
        "prompt_injection": "看起来像是给助手的指令",
        "external_source": "来自外部内容",
        "missing_source": "缺少来源",
        "third_party_pii": "涉及他人的信息",
        "sensitive_needs_consent": "属于敏感信息，需要你的同意",
        "not_reusable": "只是一时的话，不值得长期记住",
        "tombstoned": "你之前删除过这条",
        "lower_authority": "更可信的来源有不同说法",
    },
}

SOURCES: dict[Lang, dict[str, str]] = {
    "en": {
        "admin_policy": "operator",
        "system": "system",
        "explicit_instruction": "you said so",
        "document": "document",
        "user_message": "your message",
        "tool_observation": "tool",
        "agent_inference": "assistant's inference",
        "external_content": "external content",
        "imported": "imported",
    },
    "zh": {
        "admin_policy": "运营方",
        "system": "系统",
        "explicit_instruction": "你明确说过",
        "document": "文档",
        "user_message": "你的消息",
        "tool_observation": "工具",
        "agent_inference": "助手推断",
        "external_content": "外部内容",
        "imported": "导入",
    },
}

STATUSES: dict[Lang, dict[str, str]] = {
    "en": {"active": "current", "superseded": "superseded", "archived": "archived"},
    "zh": {"active": "当前", "superseded": "已取代", "archived": "已归档"},
}

TABLES: dict[Lang, dict[str, str]] = {"en": EN, "zh": ZH}


def strings(lang: Lang) -> dict[str, str]:
    return TABLES[lang]


def pick_lang(cookie: str | None, accept_language: str | None) -> Lang:
    """The switch's choice, else the best of Accept-Language (by q), else English."""
    if cookie in LANGS:
        return "zh" if cookie == "zh" else "en"
    best: tuple[float, Lang] | None = None
    for order, part in enumerate((accept_language or "").split(",")[:20]):
        tag, _, params = part.strip().partition(";")
        q = 1.0
        if params.strip().startswith("q="):
            try:
                q = float(params.strip()[2:])
            except ValueError:
                q = 0.0
        primary = tag.strip().lower().split("-")[0]
        if primary in LANGS and q > 0 and (best is None or q > best[0]):
            best = (q - order * 1e-6, "zh" if primary == "zh" else "en")
    return best[1] if best else "en"
