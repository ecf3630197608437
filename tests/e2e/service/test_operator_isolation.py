"""Isolation proved (issue 30, item 5): on a studio day of 3 operators whose player ids
overlap (`ledger simulate --operators 3`'s generator), every HTTP read route (enumerated from
the app, so a new route is covered or fails here) answered to a backoffice key of OP2 (and
the audit routes, which a back office may not read, to an auditor key of OP2), the upload
routes (OP2's wallet, a redacted audit export), and every CLI read with `--operator OP2`
(the reconciliation of OP2's wallet and its DGOJ batch too), holds none of the other
operators' player keys, bare player ids (those OP2 has not), bet ids or per-bet amounts
(their stakes are made distinctive for that). And the search can fail: with the key's scope
removed it finds them."""
from __future__ import annotations

import json
import re
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from domain.operators import EVERY_OPERATOR, OperatorScope
from ledger.eventlog import EventLog
from ledger.keys import ApiKey, key_store
from ledger.store import open_app
from ops.bundle.verify import verify as verify_bundle
from ops.service.app import Settings, create_app
from ops.sim.simulator import Studio
from ops.sim.wallet import write_wallet
from projections.audit import GENESIS_HEX
from projections.audit_export import FORMAT
from tests.e2e.service.conftest import auth
from tests.support import operator_day
from tests.support.ksa_week import make_party

MINE = operator_day.MINE
# Routes that are no read of the ledger's players: the feed, the API's documentation, health.
NOT_READS = {"/v1/commands", "/healthz", "/readyz", "/metrics", "/openapi.json", "/docs", "/redoc",
             "/docs/oauth2-redirect"}
# POST routes that answer data: uploads (a wallet, an export to verify), searched in `upload_findings`.
UPLOADS = {"/v1/reconcile", "/v1/audit/verify"}
WORD = re.compile(r"[\w~-]+")
NUMBER = re.compile(r"(?<![\w.,-])\d+(?:\.\d+)?(?![\w-]|\.\d)")
MARKED_MIN = 1900  # the distinctive stakes (no event position of the day is this high)
LATE = operator_day.LATE  # refused bets added to the day (their rounds are over): the rejections route has some of each


def distinctive(lines: list[bytes]) -> list[bytes]:
    """The other operators' stakes of 20.00 or more made a few cents less, each by its own count
    (and never a year): a number an answer holds that is one of them is their per-bet amount."""
    out, k = [], 0
    for line in lines:
        c = json.loads(line)
        if c.get("type") == "place_bet" and c["operator_id"] != MINE and c["stake_minor"] >= MARKED_MIN + 100:
            k = k % 97 + 1
            c["stake_minor"] -= k + (c["stake_minor"] - k == 2026)
            line = json.dumps(c, separators=(",", ":")).encode()
        out.append(line)
    return out


def late_bets(lines: list[bytes]) -> list[bytes]:
    """A bet of OP1 and one of OP2 sent after their round closed (refused), and a card dealt to
    it (refused, naming no player: the studio's)."""
    first = json.loads(next(line for line in lines if b'"place_bet"' in line))
    base = {k: first[k] for k in ("table_id", "round_no", "studio_time", "spot", "bet_type")}
    bets = [{**base, "type": "place_bet", "command_id": f"{LATE}{op}", "bet_id": f"{LATE}{op}-bet", "operator_id": op,
             "player_id": f"p-{LATE}{op}", "stake_minor": 4321} for op in ("OP1", MINE)]
    card = {**{k: base[k] for k in ("table_id", "round_no", "studio_time")}, "type": "deal_card",
            "command_id": f"{LATE}card", "card": "AS", "target": "player"}
    return [json.dumps(c).encode() for c in (*bets, card)]


class Day(operator_day.Day):
    """The feed's bets (tests/support/operator_day.py's reading of them): what OP2 may see and
    the tokens of everyone else's; their per-bet amounts are this module's distinctive stakes."""

    auditor = ""  # OP2's auditor key
    wallet = Path()  # OP2's wallet file

    def __init__(self, lines: list[bytes]) -> None:
        super().__init__(lines)
        bets = [b for b in map(json.loads, lines) if b.get("type") == "place_bet"]
        amounts = {b["stake_minor"] for b in bets
                   if b["operator_id"] != MINE and b["stake_minor"] >= MARKED_MIN and b["stake_minor"] % 100}
        amounts -= {b["stake_minor"] for b in bets if b["operator_id"] == MINE}
        self.amounts = {str(a) for a in amounts} | {f"{a // 100}.{a % 100:02d}" for a in amounts}

    def found(self, text: str) -> set[str]:
        """The tokens and amounts `text` names whole (an id not inside a longer one, a bare id not
        after `~`; an amount not inside a longer number): a pass over the words, not a search per token."""
        runs = set(WORD.findall(text))
        words = runs | {run.split("~", 1)[0] for run in runs if "~" in run}
        return (words & self.tokens) | (set(NUMBER.findall(text)) & self.amounts)


@pytest.fixture(scope="module")
def day(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Day, str, str]]:
    """SQLite: the matrix is about what the reads answer (the key table on PostgreSQL:
    test_operator_keys.py). Keys: OP2's back office, then OP2's auditor. One day for the
    module: its tests read it (what the CLI's exports write to the store, registers and the
    chain index, is no answer either test searches)."""
    tmp_path = tmp_path_factory.mktemp("ops3")
    store_url = f"sqlite:///{tmp_path / 'ops3.db'}"
    lines = distinctive(list(Studio(3, 10, seed=3, operators=3).lines()))
    lines += late_bets(lines)
    app = open_app(store_url)
    try:
        results = app.ingest(lines)
        assert [r.status for r in results[-3:]] == ["refused"] * 3, results[-3:]
        keys = key_store(app)
        key = keys.add("backoffice", "op2", operators=[MINE])[0]
        found = Day(lines)
        found.auditor = keys.add("auditor", "op2-audit", operators=[MINE])[0]
        found.wallet = tmp_path / f"wallet-{MINE}.csv"
        write_wallet(list(EventLog(app).records()), found.wallet, scope=OperatorScope.of(MINE))
    finally:
        app.close()
    yield found, store_url, key


def read_routes(api: Any) -> list[tuple[str, bool]]:
    """Every route of the API's own description (/openapi.json) but NOT_READS: a GET route is
    searched, a new POST one fails here until it is."""
    paths = {p: ops for p, ops in api.openapi()["paths"].items() if p not in NOT_READS}
    posts = {p for p, ops in paths.items() if "post" in ops}
    assert posts == UPLOADS, f"a new POST route: search its answers here ({posts ^ UPLOADS})"
    assert all(set(ops) <= {"get", "post"} for ops in paths.values()), paths
    return sorted((p, any(q["name"] == "operator" for q in ops["get"].get("parameters", [])))
                  for p, ops in paths.items() if "get" in ops)


def _path(route: str, day: Day) -> str:
    values: dict[str, str] = {"round_ref": day.shared_round.replace("#", "%23"), "player": day.player, "operator_id": "OP1",
              "ref": day.shared_round.replace("#", "%23"), "table": day.shared_round.split("#")[0]}

    def fill(m: re.Match[str]) -> str:
        assert m.group(1) in values, f"{route}: teach the isolation matrix its parameter {m.group(1)}"
        return values[m.group(1)]

    return re.sub(r"\{(\w+)(?::\w+)?\}", fill, route)


def http_findings(client: TestClient, day: Day, key: str) -> dict[str, set[str]]:
    """Every read route for OP2's back office; those its role may not read (the audit trail),
    for OP2's auditor. Each answers (redacted), none refuses the key for its operators (the
    admin's routes refuse both roles)."""
    findings: dict[str, set[str]] = {}
    for route, takes_operator in read_routes(client.app):
        path = _path(route, day)
        for query in ("", f"?operator={MINE}") if takes_operator else ("",):
            answer = client.get(path + query, headers=auth(key))
            if answer.status_code == 403 and answer.json()["code"] == "forbidden":
                answer = client.get(path + query, headers=auth(day.auditor))
            assert answer.status_code == 200 or answer.json()["code"] == "forbidden", (
                path + query, answer.status_code, answer.text[:300])
            found = day.found(answer.text)
            if found:
                findings[path + query] = found
    return findings


def upload_findings(client: TestClient, day: Day, key: str, scoped: bool = True) -> dict[str, set[str]]:
    """The POST routes that answer data: OP2's wallet reconciled, and OP2's auditor's export
    (redacted) verified from its files and against the store: it verifies (the chain links
    through the redacted lines), and neither answer names another operator's bet."""
    findings: dict[str, set[str]] = {}
    answer = client.post("/v1/reconcile", headers=auth(key), files={"wallet": day.wallet.read_bytes()})
    assert answer.status_code == 200 and (answer.json()["discrepancies"] == 0 or not scoped), answer.text[:300]
    findings["/v1/reconcile"] = day.found(answer.text)
    export = client.get("/v1/audit/export", headers=auth(day.auditor)).text
    links = [json.loads(line) for line in export.splitlines()]
    assert any(link["record"].get("redacted") for link in links) == scoped
    manifest = {"format": FORMAT, "count": len(links), "first_position": links[0]["record"]["position"],
                "last_position": links[-1]["record"]["position"], "first_seq": 1, "last_seq": len(links),
                "head_hash": links[-1]["hash"], "chain_start_hash": GENESIS_HEX}
    for against in ("false", "true"):
        answer = client.post(f"/v1/audit/verify?against_store={against}", headers=auth(day.auditor),
                             files={"events_jsonl": export.encode(), "manifest_json": json.dumps(manifest).encode()})
        assert answer.status_code == 200, answer.text[:300]
        assert {f["kind"] for f in answer.json()["findings"]} == {"csv"}, answer.text[:600]  # no events.csv sent
        findings[f"/v1/audit/verify?against_store={against}"] = day.found(answer.text)
    return {path: found for path, found in findings.items() if found}


def unzipped(path: Path) -> str:
    with zipfile.ZipFile(path) as z:
        return "".join(z.read(name).decode("utf-8") for name in z.namelist())


def cli_findings(day: Day, store_url: str, capsys: pytest.CaptureFixture[str]) -> dict[str, set[str]]:
    from ops.cli import main

    findings: dict[str, set[str]] = {}
    batch, bundle, ksa = day.wallet.with_name("lote.xml"), day.wallet.with_name("dispute.zip"), day.wallet.parent / "ksa"
    audit = day.wallet.parent / "audit"
    keys = {name: make_party(day.wallet.parent, name) for name in ("operator", "ksa")}  # a signer, a recipient
    for argv in (["ggr"], ["balances"], ["refunds"], ["recall", day.player], ["round", "list"],
                 ["round", "list", "--player", day.player], ["reconcile", str(day.wallet)], ["rejections"],
                 ["export", "dgoj", "--operator-id", "OP02", "--store-id", "ALM1", "--out", str(batch),
                  "--no-register"], ["replay", day.shared_round], ["replay", day.shared_round, "--bundle", str(bundle)],
                 ["audit", "export", str(audit)], ["audit", "verify", str(audit)],
                 ["export", "ksa", "--out", str(ksa), "--signing-key", str(keys["operator"].key), "--signing-cert",
                  str(keys["operator"].cert), "--recipient-cert", str(keys["ksa"].cert)]):
        json_out = [] if argv[:2] == ["audit", "export"] else ["--json"]  # it writes files, its output is text
        code = main([*argv, "--db", store_url, "--operator", MINE, *json_out])
        out = capsys.readouterr().out + (batch.read_text(encoding="utf-8") if argv[:2] == ["export", "dgoj"] else "")
        if "--bundle" in argv:
            out += unzipped(bundle)
        if argv[:2] == ["audit", "export"]:
            out += "".join(f.read_text(encoding="utf-8") for f in sorted(audit.iterdir()))
        if argv[:2] == ["export", "ksa"]:  # the batches as the regulator reads them (the zips the .enc files hold)
            out += "".join(unzipped(z) for z in ksa.glob("*.zip")) + "".join(m.read_text() for m in ksa.glob("*.xml"))
            assert "<Transaction_ID>" in out
        assert code == 0 and out, argv
        found = day.found(out)
        if found:
            findings[" ".join(argv)] = found
    assert main(["replay", day.shared_round, "--db", store_url, "--operator", MINE]) == 2  # the text names everyone
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    return findings


def test_an_operators_key_sees_no_other_operators_player(day: tuple[Day, str, str],
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    found, store_url, key = day
    assert len(found.tokens) > 100
    with TestClient(create_app(Settings(db_url=store_url, key_cache_s=0.0))) as client:
        assert http_findings(client, found, key) == {}
        assert upload_findings(client, found, key) == {}
        rejected = client.get("/v1/rejections", headers=auth(key)).json()["rejections"]
        assert [r["command_id"] for r in rejected] == [f"{LATE}{MINE}"]  # its own, not OP1's nor the studio's
        # the console's pages, signed in with such a key: tests/e2e/console/test_operator_isolation_console.py
    assert cli_findings(found, store_url, capsys) == {}
    report, problems = verify_bundle(found.wallet.with_name("dispute.zip"))  # OP2's bundle verifies offline,
    assert problems == [] and report["redacted"] > 0 and report["results"], problems  # the others' events by hash


def test_the_matrix_finds_the_leak_without_the_scope(day: tuple[Day, str, str],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    found, store_url, key = day
    monkeypatch.setattr(ApiKey, "scope", property(lambda self: EVERY_OPERATOR))
    with TestClient(create_app(Settings(db_url=store_url, key_cache_s=0.0))) as client:
        leaks = http_findings(client, found, key) | upload_findings(client, found, key, scoped=False)
    assert len(leaks) >= 3 and any("/v1/rounds/" in path for path in leaks), leaks
    for route in ("/replay.html", "/v1/rejections", "/v1/audit/export", "/v1/reconcile"):
        assert any(route in path for path in leaks), (route, sorted(leaks))
    assert any(found.amounts & leak for leak in leaks.values()), "no per-bet amount found"
    assert OperatorScope.of(MINE).allows_key(f"{MINE}~p1")
