"""The dispute page: one round's replay as one self-contained HTML file.

The page is drawn in the browser from the replay document of
projections/document.py (the very data `ledger replay --json` prints),
embedded as JSON in the page; the template (templates/replay_page.html, package
data) holds the CSS and the script inline, so the file needs no network.
`render_round_html(eventlog, round_ref)` is the call for the HTTP service.
"""
from __future__ import annotations

import json
from functools import cache
from html import escape
from importlib import resources
from typing import Any

from domain.operators import EVERY_OPERATOR, OperatorScope
from ledger.eventlog import EventLog
from projections.audit_store import parse_round_ref
from projections.document import round_document
from projections.redaction import redact_document

TEMPLATE = "replay_page.html"
DATA_SLOT = "/*REPLAY_DATA*/null"
TITLE_SLOT = "<!--TITLE-->"


class RoundNotFound(LookupError):
    """The store has no event of this round."""


@cache
def _template() -> str:
    return resources.files("projections").joinpath("templates", TEMPLATE).read_text(encoding="utf-8")


def embedded_json(document: dict[str, Any]) -> str:
    """JSON safe inside a <script> element: no `<`, `>` or `&` can end it or open a comment
    (escaped as JSON unicode escapes, which decode to the same text)."""
    text = json.dumps(document, ensure_ascii=False, default=str)  # key order kept: the page draws hands in it
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026") \
        .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def render_html(document: dict[str, Any]) -> str:
    """The page for one replay document (projections/document.py)."""
    title = f"Round {document.get('round') or document.get('round_id')}: dispute replay"
    return _template().replace(TITLE_SLOT, escape(title)).replace(DATA_SLOT, embedded_json(document), 1)


def render_round_html(eventlog: EventLog, round_ref: str, scope: OperatorScope = EVERY_OPERATOR) -> str:
    """The page of one round (UUID or TABLE#ROUND_NO) with its chain proof; for a scope of some
    operators, the others' bets only as a count and a total (projections/redaction.py).
    Raises `domain.errors.Refusal` for a malformed reference (`parse_round_ref`) and
    `RoundNotFound` when the store has no such round."""
    round_id = parse_round_ref(round_ref)
    document = round_document(eventlog, round_id, with_proof=True, ref=round_ref)
    if document is None:
        raise RoundNotFound(f"no events for {round_ref} (id {round_id}) in this store")
    return render_html(redact_document(document, scope))
