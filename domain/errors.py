"""Refusals (expected, typed, with a stable code) and broken invariants (crash).

A `Refusal` is the answer to a command the rules forbid: it carries a stable
code (a `RefusalCode` member from the catalogue in domain/refusals.py, which
generates docs/refusals.md) and a message that names the bet, hand or card
and the rule, made from the code's template by `refuse`. Callers catch it
and report it.

A broken invariant is a bug, not an answer: `require()` raises
`InvariantBroken`, which nobody catches. We do not use bare `assert`, because
`python -O` strips it.
"""
from __future__ import annotations

from domain.refusals import RefusalCode


class Refusal(Exception):
    """The rules forbid this command. Nothing was changed."""

    def __init__(self, code: RefusalCode, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message

    def as_dict(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message}


def refuse(code: RefusalCode, variant: str = "", /, **fields: object) -> Refusal:
    """A refusal whose message is `code`'s template (or its `variant`) filled with `fields`.

    Every refusal is made here, so a message is always its catalogue template's
    (tests/unit/domain/test_refusal_messages.py checks that no other place writes one).
    """
    return Refusal(code, code.message(variant, **fields))


class InvariantBroken(Exception):
    """A state the code promised could never happen. Stop; do not handle."""


def require(condition: object, message: str) -> None:
    """Crash with `InvariantBroken` unless `condition` holds (survives `python -O`)."""
    if not condition:
        raise InvariantBroken(message)


def refuse_unless(condition: object, code: RefusalCode, message: str) -> None:
    """Raise a `Refusal` with `code` unless `condition` holds."""
    if not condition:
        raise Refusal(code, message)
