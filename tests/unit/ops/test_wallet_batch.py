"""Batched calls (docs/wallet.md, "Batches"): the body sent, what a batch's answer means for each
item, and the configuration's `batch_max`."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from ops.wallet.client import NO_ANSWER, OK, REFUSED, ROLLED_BACK, batch_body, classify_batch
from ops.wallet.config import ConfigError, load

ITEMS = [("debit", "t1", '{"amount_minor":5,"transaction_id":"t1"}'),
         ("credit", "t2", '{"amount_minor":7,"transaction_id":"t2"}'),
         ("rollback", "t3", '{"amount_minor":5,"transaction_id":"t3"}')]


def test_the_batch_body_is_each_single_body_with_its_kind() -> None:
    body = json.loads(batch_body(ITEMS))
    assert body == {"transactions": [{"kind": kind, **json.loads(single)} for kind, _tx, single in ITEMS]}


def results(*items: dict[str, object]) -> str:
    return json.dumps({"results": list(items)})


def ok(tx: str, status: int = 200) -> dict[str, object]:
    return {"http_status": status, "status": "ok", "transaction_id": tx, "balance_minor": 1}


@pytest.mark.parametrize(("status", "text", "outcomes"), [
    (200, results(ok("t1"), ok("t2"), ok("t3")), [OK, OK, OK]),
    # each item's own answer, by the single call's rules
    (200, results({"http_status": 409, "error": "transaction_rolled_back", "transaction_id": "t1"},
                  {"http_status": 422, "error": "player_blocked", "transaction_id": "t2"},
                  {"http_status": 503, "error": "unavailable", "transaction_id": "t3"}), [ROLLED_BACK, REFUSED, NO_ANSWER]),
    (200, results(ok("t1"), {"http_status": 401, "error": "invalid_signature", "transaction_id": "t2"},
                  {"status": "ok", "transaction_id": "t3"}), [OK, NO_ANSWER, NO_ANSWER]),  # no http_status: no answer
    (200, results(ok("t1"), {"http_status": 409, "error": "transaction_rolled_back", "transaction_id": "t2"},
                  ok("t3")), [OK, NO_ANSWER, OK]),  # only a debit can be rolled back
    (200, results(ok("t1"), ok("t2", 500), ok("t3")), [OK, NO_ANSWER, OK]),
    # the whole batch without an answer
    (200, results(ok("t1"), ok("t2")), [NO_ANSWER] * 3),  # fewer results than items
    (200, results(ok("t1"), ok("t3"), ok("t2")), [NO_ANSWER] * 3),  # not the order sent
    (200, results(ok("t1"), ok("t2"), ok("t9")), [NO_ANSWER] * 3),  # a stale reply to another batch
    (200, results(ok("t1"), {"http_status": 422, "error": "player_blocked"}, ok("t3")), [NO_ANSWER] * 3),  # unnamed
    (200, results(ok("t1"), ok("t2"), ok("t3"), ok("t4")), [NO_ANSWER] * 3),
    (200, json.dumps({"status": "ok", "transaction_id": "t1"}), [NO_ANSWER] * 3),  # a single call's answer
    (200, "[1, 2, 3]", [NO_ANSWER] * 3),
    (200, "<html>", [NO_ANSWER] * 3),
    (503, results(ok("t1"), ok("t2"), ok("t3")), [NO_ANSWER] * 3),
    (401, json.dumps({"error": "invalid_signature"}), [NO_ANSWER] * 3),
    (422, json.dumps({"error": "malformed_request"}), [NO_ANSWER] * 3),  # a refusal of the batch is no item's
])
def test_batch_answers(status: int, text: str, outcomes: list[str]) -> None:
    answers = classify_batch(ITEMS, status, text)
    assert [a.outcome for a in answers] == outcomes
    if outcomes[0] == OK and status == 200:
        assert json.loads(answers[0].text)["transaction_id"] == "t1"  # the item's own answer is kept


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "wallet.toml"
    path.write_text(text)
    return str(path)


def test_batch_max_defaults_to_one_call_per_transaction(tmp_path: Path) -> None:
    base = '[operators.a]\nurl = "http://x"\nsecret_env = "S"\n'
    assert load(write(tmp_path, base), {"S": "s"})["a"].batch_max == 1
    assert load(write(tmp_path, base + "batch_max = 500\n"), {"S": "s"})["a"].batch_max == 500


@pytest.mark.parametrize(("text", "says"), [
    ("[operators.a]\nurl = 'http://x'\nsecret_env = 'S'\nbatch_max = 0\n", "batch_max must be 1..500"),
    ("[operators.a]\nurl = 'http://x'\nsecret_env = 'S'\nbatch_max = 501\n", "batch_max must be 1..500"),
    ("[operators.a]\nurl = 'http://x'\nsecret_env = 'S'\nbatch_max = 2.0\n", "batch_max must be int"),
    ("[operators.a]\nurl = 'http://x'\nsecret_env = 'S'\nbatch_max = true\n", "batch_max must be int"),
    ("[operators.a]\ntransport = 'jetstream'\nsecret_env = 'S'\nbatch_max = 8\n", "batch_max is for transport http"),
])
def test_batch_max_mistakes(tmp_path: Path, text: str, says: str) -> None:
    with pytest.raises(ConfigError, match=says):
        load(write(tmp_path, text), {"S": "secret"})
