"""Field types that screen caller strings before they rest anywhere (app.memory.screening).

`ScreenedId`: an identifier holding a secret is refused, 422 `secret_in_identifier`.
`RedactedText`: free text is stored with its secrets replaced by markers.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator
from pydantic_core import PydanticCustomError

from app.clean import CleanStrings
from app.errors import SecretInIdentifier
from app.memory.screening import identifier_holds_secret, redact_free_text, secret_keys

SECRET_IN_IDENTIFIER = "secret_in_identifier"


# identifiers found clean lately: a user id, a scope, a session id recur request after request
_clean_ids = CleanStrings(identifier_holds_secret, 8192)


def refuse_secret_identifier(value: str) -> str:
    if _clean_ids.holds(value):
        # the message never quotes the value: error bodies and logs must not carry it
        raise PydanticCustomError(
            SECRET_IN_IDENTIFIER, "this identifier holds a secret; it is never stored"
        )
    return value


ScreenedId = Annotated[str, AfterValidator(refuse_secret_identifier)]
RedactedText = Annotated[str, AfterValidator(redact_free_text)]


def refuse_secret_keys(data: Any, where: str) -> None:
    """422 `secret_in_identifier` when any object key, at any depth, holds a secret."""
    found = secret_keys(data)
    if found:
        # how many and under which field; the keys themselves never go back or into logs
        raise SecretInIdentifier(
            "an object key holds a secret; it is never stored",
            {
                "fields": [
                    {"loc": ["body", where], "type": SECRET_IN_IDENTIFIER, "count": len(found)}
                ]
            },
        )
