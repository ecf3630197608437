"""POST /v1/commands: the CLI's results, durable before the answer, JSON and NDJSON, scope."""
from __future__ import annotations

import json

from ledger.store import open_app
from tests.e2e.service.conftest import auth, cli_results, feed, round_events, second_store


def test_http_results_equal_the_cli_for_a_feed_with_faults(client, keys, store_url, tmp_path, request):
    lines = feed()
    cli_url = second_store(store_url, tmp_path, request)
    expected = cli_results(lines, cli_url)
    got = []
    for i in range(0, len(lines), 37):  # JSON arrays and NDJSON bodies, alternately
        chunk = lines[i : i + 37]
        if (i // 37) % 2:
            r = client.post("/v1/commands", content=b"\n".join(chunk),
                            headers={**auth(keys["studio"]), "Content-Type": "application/x-ndjson"})
        else:
            r = client.post("/v1/commands", json=[json.loads(x) for x in chunk], headers=auth(keys["admin"]))
        assert r.status_code == 200, r.text
        got.extend(r.json())
    assert got == expected
    assert {r["status"] for r in got} >= {"accepted", "refused", "duplicate"}  # the faults were exercised
    assert round_events(store_url, lines) == round_events(cli_url, lines)


def test_answer_means_committed(client, keys, store_url):
    lines = feed(tables=1, rounds=1, fault_rate=0)
    r = client.post("/v1/commands", json=[json.loads(x) for x in lines], headers=auth(keys["studio"]))
    assert r.status_code == 200 and all(x["status"] == "accepted" for x in r.json())
    fresh = open_app(store_url)  # another connection sees every command
    try:
        known = fresh.ledger_recorder().select_commands([json.loads(x)["command_id"] for x in lines])
    finally:
        fresh.close()
    assert len(known) == len(lines)


def test_bad_bodies_are_client_errors(client, keys):
    h = auth(keys["studio"])
    assert client.post("/v1/commands", content=b"{not json", headers=h).status_code == 422
    assert client.post("/v1/commands", json={"type": "open_round"}, headers=h).status_code == 422
    r = client.post("/v1/commands", json=[5, "x", {"type": "nope"}], headers=h)
    assert r.status_code == 200 and [x["code"] for x in r.json()] == ["bad_command"] * 3
    r = client.post("/v1/commands", content=b"not json\n", headers={**h, "Content-Type": "application/x-ndjson"})
    assert r.json()[0]["code"] == "bad_command"
    assert client.post("/v1/commands", json=[], headers=h).json() == []


def test_a_scoped_key_gets_table_not_allowed_per_command(client, keys, store_url):
    lines = feed(tables=3, rounds=1, fault_rate=0)
    mine = json.loads(lines[0])["table_id"]
    tables = {json.loads(x)["table_id"] for x in lines}
    assert len(tables) > 1
    from tests.e2e.service.conftest import make_keys

    key = make_keys(store_url, only_mine=[mine])["only_mine"]
    r = client.post("/v1/commands", json=[json.loads(x) for x in lines], headers=auth(key))
    assert r.status_code == 200
    for line, result in zip(lines, r.json()):
        if json.loads(line)["table_id"] == mine:
            assert result["status"] == "accepted"
        else:
            assert (result["status"], result["code"]) == ("refused", "table_not_allowed")
            assert result["command_id"] == json.loads(line)["command_id"]
    rejected = client.get("/v1/rejections", headers=auth(keys["backoffice"])).json()
    assert rejected == []  # a scope refusal records nothing


def test_a_lone_surrogate_in_a_refused_command_is_answered_not_a_500(client, store_url):
    """A scoped key's refusal echoes the table id; orjson cannot write a lone surrogate, so
    the answer once became a 500 after the batch's other commands had been committed."""
    from tests.e2e.service.conftest import make_keys

    key = make_keys(store_url, only_t1=["T1"])["only_t1"]
    body = b'{"table_id": "\\ud800", "command_id": "c\\ud800"}\n' + feed(tables=1, rounds=1, fault_rate=0)[0]
    r = client.post("/v1/commands", content=body, headers={**auth(key), "Content-Type": "application/x-ndjson"})
    assert r.status_code == 200
    first = r.json()[0]
    assert (first["status"], first["code"], first["command_id"]) == ("refused", "table_not_allowed", "c\\ud800")
    assert "\\ud800" in first["message"]


def test_hostile_text_over_http_is_refused_by_field_and_the_views_answer(client, keys, store_url):
    """Issue 27: the NUL note of the issue, posted; refused text_invalid naming void.note, and the
    read routes that catch the views up still answer."""
    lines = feed(tables=1, rounds=1, fault_rate=0)
    opened = json.loads(lines[0])
    void = {k: opened[k] for k in ("table_id", "round_no", "studio_time")} | {
        "type": "void", "command_id": "nul-note", "cause": "human_error", "by": "sup", "note": "a\u0000b"}
    r = client.post("/v1/commands", content=b"\n".join([*lines[:3], json.dumps(void).encode()]),
                    headers={**auth(keys["studio"]), "Content-Type": "application/x-ndjson"})
    assert r.status_code == 200, r.text
    last = r.json()[-1]
    assert (last["status"], last["code"]) == ("refused", "text_invalid")
    assert last["message"].startswith("void.note: U+0000 (NUL) at character 2")
    for path in ("/v1/balances", "/v1/rejections", "/v1/refunds"):
        assert client.get(path, headers=auth(keys["admin"])).status_code == 200, path
