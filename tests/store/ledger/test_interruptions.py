"""Player-side interruptions leave a trace (Round.Interrupted) through the application,
on SQLite and PostgreSQL: in the stored events, the replay, the audit export; a pause
that completes hands completes only the named player's; the player is required."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ops.cli import main
from tests.support.feed import Feed, baccarat_round, lines, teen_patti_round


def event_names(app: Any, rnd: Any) -> list[str]:
    return [type(e).__name__ for e in app.repository.event_store.get(rnd.id)]


def _disconnect(f: Feed, player_id: str | None, cause: str = "player_connection_lost") -> dict[str, Any]:
    extra = {} if player_id is None else {"player_id": player_id}
    return f.cmd("pause", cause=cause, by="studio", note="lost connection", **extra)


def _mid_deal(round_cmds: list[Any], after_cards: int) -> list[Any]:
    """The round's commands with the cards cut after `after_cards`: (before, rest)."""
    flat: list[Any] = []
    for c in round_cmds:
        flat.extend(c if isinstance(c, list) else [c])
    first_card = next(i for i, c in enumerate(flat) if c["type"] == "deal_card")
    cut = first_card + after_cards
    return [flat[:cut], flat[cut:]]


@pytest.mark.parametrize(("game", "table", "player"), [("teen-patti", "tp-int", "bob"), ("baccarat", "bacc-int", "alice")])
def test_a_disconnect_with_nothing_to_complete_is_recorded_and_the_round_goes_on(
        ledger: Any, game: str, table: str, player: str) -> None:
    f = Feed(table)
    cmds = teen_patti_round(f) if game == "teen-patti" else baccarat_round(f)
    before, rest = _mid_deal(cmds, 2)
    ledger.ingest(lines(*before))
    result = ledger.ingest(lines(_disconnect(f, player)))[0]
    assert (result.status, result.events) == ("accepted", ("Interrupted",))
    results = ledger.ingest(lines(*rest))
    assert all(r.status == "accepted" for r in results), [(r.status, r.code) for r in results]
    rnd = ledger.find_round(table, 1)
    assert rnd.phase == "settled"  # confirmed bets stay valid and settle at the end
    assert rnd.interruptions == [{"cause": "player_connection_lost", "player_id": player, "action": "complete"}]
    names = event_names(ledger, rnd)
    assert names.count("Interrupted") == 1 and "Paused" not in names
    stored = next(e for e in ledger.repository.event_store.get(rnd.id) if type(e).__name__ == "Interrupted")
    assert (stored.cause, stored.player_id, stored.by, stored.action) == (
        "player_connection_lost", player, "studio", "complete")


def test_the_interruption_shows_in_replay_and_audit_export(
        ledger: Any, store_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = Feed("tp-trace")
    before, rest = _mid_deal(teen_patti_round(f), 3)
    ledger.ingest(lines(*before, _disconnect(f, "alice"), *rest))
    ledger.close()
    capsys.readouterr()
    assert main(["replay", "tp-trace#1", "--json", "--db", store_url]) == 0
    replay = json.loads(capsys.readouterr().out)
    steps = [s for s in replay["steps"] if s["event"] == "Interrupted"]
    assert len(steps) == 1 and "player_connection_lost of player alice" in steps[0]["text"]
    assert replay["findings"] == []
    page = tmp_path / "dispute.html"
    assert main(["replay", "tp-trace#1", "--html", str(page), "--db", store_url]) == 0
    assert "player_connection_lost of player alice" in page.read_text(encoding="utf-8")
    assert main(["audit", "replay", "--db", store_url]) == 0
    out = tmp_path / "export"
    assert main(["audit", "export", str(out), "--db", store_url, "--quiet"]) == 0
    exported = [json.loads(x)["record"] for x in (out / "events.jsonl").read_text().splitlines()]
    interrupted = [e for e in exported if e["event"] == "Round.Interrupted"]
    assert len(interrupted) == 1
    assert interrupted[0]["fields"]["player_id"] == "alice"
    assert "Round.Interrupted" in (out / "events.csv").read_text()
    assert main(["project", "--db", store_url]) == 0
    capsys.readouterr()
    assert main(["recall", "alice", "--json", "--db", store_url]) == 0
    recalled = capsys.readouterr().out
    assert '"event": "Interrupted"' in recalled and '"player_id": "alice"' in recalled
    assert main(["audit", "verify", str(out), "--db", store_url]) == 0


@pytest.mark.parametrize(("player_id", "code"), [(None, "player_required"), ("nobody", "player_not_in_round")])
@pytest.mark.parametrize("cause", ["player_connection_lost", "player_no_action"])
def test_a_player_side_pause_must_name_a_player_of_the_round(
        ledger: Any, player_id: str | None, code: str, cause: str) -> None:
    f = Feed("tp-req")
    before, _ = _mid_deal(teen_patti_round(f), 1)
    ledger.ingest(lines(*before))
    result = ledger.ingest(lines(_disconnect(f, player_id, cause)))[0]
    assert (result.status, result.code, result.events) == ("refused", code, ())
    rnd = ledger.find_round("tp-req", 1)
    assert "Interrupted" not in event_names(ledger, rnd) and rnd.paused is None


def test_other_causes_need_no_player(ledger: Any) -> None:
    f = Feed("tp-other")
    before, _ = _mid_deal(teen_patti_round(f), 1)
    ledger.ingest(lines(*before))
    result = ledger.ingest(lines(f.pause("system_error")))[0]
    assert (result.status, result.events) == ("accepted", ("Paused",))


def test_player_no_action_under_a_pause_policy_is_recorded_then_paused(ledger: Any) -> None:
    f = Feed("bacc-na")
    before, _ = _mid_deal(baccarat_round(f), 2)
    ledger.ingest(lines(*before))
    result = ledger.ingest(lines(_disconnect(f, "bob", "player_no_action")))[0]
    assert (result.status, result.events) == ("accepted", ("Interrupted", "Paused"))
    assert ledger.find_round("bacc-na", 1).interruptions[0]["action"] == "pause"


def test_a_blackjack_disconnect_completes_only_that_players_hands(ledger: Any) -> None:
    """Dealer ace: both seats wait for their insurance answer; p1 drops: only seat:1 is
    answered by the no-action rule (no insurance); seat:2 still decides for itself."""
    f = Feed("bj-int")
    ledger.ingest(lines(
        f.open("blackjack/live-8d"),
        f.bet("m1", "p1", "seat:1", "main", 1000),
        f.bet("m2", "p2", "seat:2", "main", 1000),
        f.close(),
        f.cards("TS>seat:1", "9H>seat:2", "AD>dealer", "7D>seat:1", "8C>seat:2"),
    ))
    rnd = ledger.find_round("bj-int", 1)
    assert set(rnd.model.legal_decisions()) == {"seat:1", "seat:2"}
    result = ledger.ingest(lines(_disconnect(f, "p1")))[0]
    assert result.status == "accepted", result
    assert result.events[0] == "Interrupted"
    decided = [e for e in ledger.repository.event_store.get(rnd.id) if type(e).__name__ == "DecisionTaken"]
    assert {e.hand for e in decided} == {"seat:1"}
    assert all((e.action, e.source) == ("auto", "system") for e in decided)
    rnd = ledger.find_round("bj-int", 1)
    assert "seat:2" in rnd.model.legal_decisions()
    assert "seat:1" not in rnd.model.legal_decisions()


def test_on_a_spielbank_box_only_the_holders_disconnect_plays_the_hand(ledger: Any) -> None:
    """Ben stakes on Anna's box: his disconnect is recorded but decides nothing (only the
    box holder decides, seed 002); Anna's disconnect lets the no-action rule play the box."""
    f = Feed("sb-int")
    ledger.ingest(lines(
        f.open("blackjack/spielbank"),
        f.bet("b1", "anna", "box:3", "main", 1000, seat_no=3),
        f.bet("b2", "ben", "box:3", "main", 500, seat_no=5),
        f.close(),
        f.cards("5H>box:3", "9C>dealer", "4D>box:3"),
    ))
    assert "box:3" in ledger.find_round("sb-int", 1).model.legal_decisions()
    ben = ledger.ingest(lines(_disconnect(f, "ben")))[0]
    assert (ben.status, ben.events) == ("accepted", ("Interrupted",))
    anna = ledger.ingest(lines(_disconnect(f, "anna")))[0]
    assert (anna.status, anna.events) == ("accepted", ("Interrupted", "DecisionTaken"))
    rnd = ledger.find_round("sb-int", 1)
    assert [i["player_id"] for i in rnd.interruptions] == ["ben", "anna"]
