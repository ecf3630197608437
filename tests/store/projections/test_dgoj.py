"""`ledger export dgoj` on SQLite and PostgreSQL, over a simulated day with voids
and settlement reversals: the batch is valid against DGOJ's XSD v3.3 (xmlschema,
and lxml as a second, independent validator); every euro staked, refunded and
returned in it equals the ledger's views (recall per player and table, ggr per
table); a settlement reversed after an export yields exactly one rectifying
record naming the record it replaces; Teen Patti is left out and counted, or
reported under the named code asked for."""
from __future__ import annotations

import json
import os
from collections import Counter, defaultdict
from decimal import Decimal
from pathlib import Path

import pytest
import xmlschema
from lxml import etree

from ledger.eventlog import EventLog
from ledger.store import open_app
from ops.cli import main
from ops.sim.simulator import simulate
from projections.runner import Projector
from tests.support.feed import Feed, baccarat_round, lines

XSD_NAME = "DGOJ_Monitorizacion_3.3.xsd"
NS = {"d": "http://cnjuego.gob.es/sci/v3.3.xsd"}
ROOT = Path(__file__).resolve().parents[3]


def find_xsd() -> Path:
    """The regulator's schema: the copy in ops/schemas/, else shared/ above the checkout;
    LEDGER_DGOJ_XSD overrides. Missing is a failure, never a skip."""
    if os.environ.get("LEDGER_DGOJ_XSD"):
        return Path(os.environ["LEDGER_DGOJ_XSD"])
    bundled = ROOT / "ops" / "schemas" / XSD_NAME  # the copy shipped with the code (a fresh clone has it)
    if bundled.is_file():
        return bundled
    for parent in ROOT.parents:
        candidate = parent / "shared" / "schemas" / "es-dgoj" / XSD_NAME
        if candidate.is_file():
            return candidate
    pytest.fail(f"{XSD_NAME} not found in shared/schemas/es-dgoj/ above {ROOT}; set LEDGER_DGOJ_XSD")


@pytest.fixture(scope="module")
def xsd() -> Path:
    return find_xsd()


@pytest.fixture(scope="module")
def lxml_schema(xsd: Path) -> etree.XMLSchema:
    return etree.XMLSchema(etree.parse(str(xsd)))


@pytest.fixture(scope="module")
def xmlschema_schema(xsd: Path) -> xmlschema.XMLSchema:
    return xmlschema.XMLSchema(str(xsd))


@pytest.fixture
def day(store_url: str) -> str:
    """A studio day (5 tables, every rule set) with voids and reversals, some followed by a void."""
    feed = list(simulate(tables=5, rounds=12, seed=2, fault_rate=500))
    kinds = Counter(json.loads(line)["type"] for line in feed)
    assert kinds["void"] >= 3 and kinds["reverse_settlement"] >= 3
    app = open_app(store_url)
    app.ingest(feed)
    app.close()
    return store_url


def export(url: str, out: Path, capsys, *extra: str) -> dict:
    code = main(["export", "dgoj", "--db", url, "--operator-id", "OP01", "--store-id", "ALM1",
                 "--out", str(out), "--json", *extra])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return json.loads(captured.out)


def cents(importe) -> dict[str, int]:
    """An Importe element -> currency -> integer cents (Decimal, exact)."""
    out: dict[str, int] = {}
    for line in importe.findall("d:Linea", NS):
        amount = Decimal(line.findtext("d:Cantidad", namespaces=NS)) * 100
        assert amount == amount.to_integral_value()
        out[line.findtext("d:Unidad", namespaces=NS)] = int(amount)
    return out


def records(path: Path) -> list[dict]:
    out = []
    for reg in etree.parse(str(path)).getroot().findall("d:Registro", NS):
        juego, jugador = reg.find("d:Juego", NS), reg.find("d:Jugador", NS)
        rect = reg.find("d:Cabecera/d:Rectificacion", NS)
        out.append({
            "registro_id": reg.findtext("d:Cabecera/d:RegistroId", namespaces=NS),
            "fecha": reg.findtext("d:Cabecera/d:Fecha", namespaces=NS),
            "rectifies": None if rect is None else (rect.findtext("d:RegistroId", namespaces=NS),
                                                    rect.findtext("d:RegistroFecha", namespaces=NS)),
            "type": juego.findtext("d:TipoJuego", namespaces=NS), "table": juego.findtext("d:MesaId", namespaces=NS),
            "live": juego.findtext("d:JuegoEnVivo", namespaces=NS),
            "rounds": int(juego.findtext("d:PartidasJugadas", namespaces=NS)),
            "staked": cents(juego.find("d:Participacion", NS)),
            "refunded": cents(juego.find("d:ParticipacionDevolucion", NS)),
            "won": cents(juego.find("d:Premios", NS)), "jackpots": cents(juego.find("d:Botes/d:Total", NS)),
            "player": jugador.findtext("d:JugadorId", namespaces=NS),
            "session": jugador.findtext("d:Sesion/d:SesionId", namespaces=NS),
            "new": jugador.findtext("d:Sesion/d:SesionNueva", namespaces=NS),
            "complete": jugador.findtext("d:Sesion/d:SesionCompleta", namespaces=NS),
        })
    return out


def assert_valid(path: Path, xmlschema_schema, lxml_schema) -> None:
    assert [e.reason for e in xmlschema_schema.iter_errors(str(path))] == []
    doc = etree.parse(str(path))
    assert lxml_schema.validate(doc), lxml_schema.error_log.last_error
    # Teeth: the same document with one required element removed is refused by both.
    doc.getroot().find("d:Registro/d:Juego/d:Premios", NS).getparent().remove(
        doc.getroot().find("d:Registro/d:Juego/d:Premios", NS))
    assert not lxml_schema.validate(doc) and not xmlschema_schema.is_valid(doc)


def views(url: str) -> tuple[dict, dict]:
    """From the ledger's views: recall per (player, table) and ggr per table, money in cents."""
    log = EventLog.open(url)
    p = Projector(log)
    p.catch_up()
    recall: dict = defaultdict(lambda: {"staked": 0, "refunded": 0, "won": 0, "rounds": 0, "game": None})
    for player, table, game, status, staked, returned, refunded in p.db.query(
            "SELECT player_id, table_id, game, status, staked_minor, returned_minor, refunded_minor "
            "FROM proj_recall"):
        assert status in ("settled", "voided")  # the whole day is closed
        r = recall[(player, table)]
        r["staked"] += staked
        r["refunded"] += refunded
        r["won"] += returned
        r["rounds"] += 1
        r["game"] = game
    ggr: dict = defaultdict(lambda: {"staked": 0, "refunded": 0, "won": 0})
    for table, staked, paid, refunded in p.db.query(
            "SELECT table_id, staked_minor, paid_minor, refunded_minor FROM proj_ggr"):
        g = ggr[table]
        g["staked"] += staked
        g["won"] += paid
        g["refunded"] += refunded
    p.close()
    log.close()
    return dict(recall), dict(ggr)


def tp_round_ids(url: str) -> set[str]:
    """The Teen Patti rounds anyone played (the recall view: one row per player and round)."""
    log = EventLog.open(url)
    p = Projector(log)
    p.catch_up()
    ids = {r[0] for r in p.db.query("SELECT round_id FROM proj_recall WHERE game = 'teen-patti'")}
    p.close()
    log.close()
    return ids


def by_player_table(recs: list[dict]) -> dict:
    out: dict = defaultdict(lambda: {"staked": 0, "refunded": 0, "won": 0, "rounds": 0})
    for r in recs:
        t = out[(r["player"], r["table"])]
        for k in ("staked", "refunded", "won"):
            assert set(r[k]) == {"EUR"}
            t[k] += r[k]["EUR"]
        t["rounds"] += r["rounds"]
    return dict(out)


def test_day_is_valid_and_every_euro_equals_the_views(day, tmp_path, capsys, xmlschema_schema, lxml_schema,
                                                      xsd) -> None:
    out = tmp_path / "lote.xml"
    info = export(day, out, capsys, "--xsd", str(xsd))
    assert_valid(out, xmlschema_schema, lxml_schema)
    recs = records(out)
    assert info["records"] == info["new"] == len(recs) > 0 and info["pending"]["sessions"] == 0
    assert {r["type"] for r in recs} == {"BLJ", "PUN"} and {r["live"] for r in recs} == {"S"}
    assert all(r["jackpots"] == {"EUR": 0} and r["rectifies"] is None and r["new"] == "S" for r in recs)
    assert len({r["registro_id"] for r in recs}) == len(recs) == len({r["session"] for r in recs})
    recall, ggr = views(day)
    exported = by_player_table(recs)
    expected = {k: {f: v[f] for f in ("staked", "refunded", "won", "rounds")}
                for k, v in recall.items() if v["game"] != "teen-patti"}
    assert exported == expected
    assert any(v["refunded"] for v in exported.values())  # the voids are in it
    for table in {t for _, t in exported}:
        mine = [v for (_, t), v in exported.items() if t == table]
        assert {k: sum(v[k] for v in mine) for k in ("staked", "refunded", "won")} == ggr[table]
    # Teen Patti: left out, counted (rounds as rounds, not one per player), its money in the
    # summary equal to the views'.
    tp = [v for v in recall.values() if v["game"] == "teen-patti"]
    tp_rounds = tp_round_ids(day)
    omitted = info["omitted"]
    assert omitted["rule"] == "teen-patti=omit" and omitted["rounds"] == len(tp_rounds) > 0
    assert sum(v["rounds"] for v in tp) > len(tp_rounds)  # teeth: more player-plays than rounds
    assert omitted["money"]["EUR"] == {"participacion_minor": sum(v["staked"] for v in tp),
                                       "devolucion_minor": sum(v["refunded"] for v in tp),
                                       "premios_minor": sum(v["won"] for v in tp)}


def test_reversal_after_an_export_is_rectified_once(day, tmp_path, capsys, xmlschema_schema, lxml_schema) -> None:
    export(day, tmp_path / "a.xml", capsys)
    first = records(tmp_path / "a.xml")
    # Reverse a settled baccarat round in which some player got money back, then void it.
    log = EventLog.open(day)
    p = Projector(log)
    p.catch_up()
    round_no, round_id = p.db.query(
        "SELECT round_no, round_id FROM proj_recall WHERE table_id = 'bacc-1' AND status = 'settled' "
        "AND returned_minor > 0 ORDER BY round_no")[0]
    players = {r[0] for r in p.db.query("SELECT player_id FROM proj_recall WHERE round_id = ?", (round_id,))}
    p.close()
    log.close()
    app = open_app(day)
    app.ingest([json.dumps({"type": "reverse_settlement", "command_id": "test-rev-1", "table_id": "bacc-1",
                            "round_no": round_no, "studio_time": "2026-11-22T09:00:00.000+00:00",
                            "by": "sup-1", "reason": "dealer misread the third card", "then": "void"}).encode()])
    app.close()
    info = export(day, tmp_path / "b.xml", capsys, "--since", "2026-11-22")  # the next day's export carries it
    assert_valid(tmp_path / "b.xml", xmlschema_schema, lxml_schema)
    rects = records(tmp_path / "b.xml")
    originals = {r["session"]: r for r in first}
    figures = ("staked", "refunded", "won", "rounds")
    money = [r for r in rects if any(r[k] != originals[r["session"]][k] for k in figures)]
    # One rectifying record per player of that round (each in one session); the others say only
    # that a session sent incomplete is now complete (the reversal moved the studio's clock on by a
    # night), nothing else is sent again.
    assert {r["player"] for r in money} == players and len(money) == len(players)
    for rect in rects:
        if rect not in money:
            assert (originals[rect["session"]]["complete"], rect["complete"]) == ("N", "S")
            assert rect["rectifies"] == (originals[rect["session"]]["registro_id"], originals[rect["session"]]["fecha"])
    assert info["rectifications"] == info["records"] == len(rects) and info["unchanged"] == len(first) - len(rects)
    for rect in money:
        original = originals[rect["session"]]
        assert rect["table"] == "bacc-1" and rect["new"] == "N"
        assert rect["rectifies"] == (original["registro_id"], original["fecha"])
        assert rect["registro_id"] != original["registro_id"]
        assert rect["staked"] == original["staked"] and rect["rounds"] == original["rounds"]
        assert rect["refunded"]["EUR"] > original["refunded"]["EUR"]  # the void refunds the round's stakes
    assert any(r["won"]["EUR"] < originals[r["session"]]["won"]["EUR"] for r in money)
    recall, _ = views(day)
    now = by_player_table([r for r in first if r["session"] not in {x["session"] for x in rects}] + rects)
    assert now == {k: {f: v[f] for f in ("staked", "refunded", "won", "rounds")}
                   for k, v in recall.items() if v["game"] != "teen-patti"}
    # Nothing new: nothing sent again, in any period.
    assert export(day, tmp_path / "c.xml", capsys)["records"] == 0 and records(tmp_path / "c.xml") == []
    assert export(day, tmp_path / "d.xml", capsys, "--since", "2026-11-22")["records"] == 0


def test_a_session_sent_incomplete_is_completed_when_it_completes(store_url, tmp_path, capsys, xsd,
                                                                  xmlschema_schema, lxml_schema) -> None:
    """Sent while the player could still come back (SesionCompleta N), the session ends with no
    other round or cent: the next export rectifies it with S, and the one after sends nothing."""
    app = open_app(store_url)
    first_table = Feed("bacc-s")
    assert all(r.status == "accepted" for r in app.ingest(lines(*baccarat_round(first_table))))
    info = export(store_url, tmp_path / "a.xml", capsys, "--xsd", str(xsd))
    sent = records(tmp_path / "a.xml")
    assert info["new"] == len(sent) == 2 and {r["complete"] for r in sent} == {"N"}  # the clock is at its end
    # The studio goes on at another table 30 minutes later (past the 20-minute gap): the
    # first table's sessions are over, with nothing else changed.
    later = Feed("bacc-t")
    later.n = first_table.n + 30 * 60
    assert all(r.status == "accepted" for r in app.ingest(lines(*baccarat_round(later))))
    app.close()
    info = export(store_url, tmp_path / "b.xml", capsys, "--xsd", str(xsd))
    assert_valid(tmp_path / "b.xml", xmlschema_schema, lxml_schema)
    again = {r["session"]: r for r in records(tmp_path / "b.xml")}
    assert info["rectifications"] == 2 and info["new"] == 2 and info["unchanged"] == 0
    for before in sent:
        last = again[before["session"]]  # the last word on the session
        assert last["complete"] == "S" and last["new"] == "N"
        assert last["rectifies"] == (before["registro_id"], before["fecha"])
        assert {k: last[k] for k in ("staked", "refunded", "won", "rounds")} == \
            {k: before[k] for k in ("staked", "refunded", "won", "rounds")}
    assert {r["complete"] for r in again.values() if r["table"] == "bacc-t"} == {"N"}
    # Nothing changed since: nothing sent (the second table's sessions are still incomplete).
    third = export(store_url, tmp_path / "c.xml", capsys)
    assert third["records"] == 0 and third["unchanged"] == 4


def test_teen_patti_under_a_named_code_and_the_period(day, tmp_path, capsys, xmlschema_schema, lxml_schema) -> None:
    info = export(day, tmp_path / "tp.xml", capsys, "--teen-patti", "COM", "--no-register")
    assert_valid(tmp_path / "tp.xml", xmlschema_schema, lxml_schema)
    recs = records(tmp_path / "tp.xml")
    assert {r["type"] for r in recs if r["table"] == "tp-1"} == {"COM"} and info["omitted"]["sessions"] == 0
    # --no-register sent nothing for good; a period selects sessions by their first bet.
    early = export(day, tmp_path / "early.xml", capsys, "--until", "2026-11-21T12:05:00")
    late = export(day, tmp_path / "late.xml", capsys, "--since", "2026-11-21T12:05:00")
    assert early["records"] and late["records"]
    assert early["records"] + late["records"] == len([r for r in recs if r["table"] != "tp-1"])
    assert export(day, tmp_path / "again.xml", capsys)["records"] == 0


def test_invalid_batch_writes_nothing_and_registers_nothing(day, tmp_path, capsys) -> None:
    strict = tmp_path / "other.xsd"
    strict.write_text('<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema" '
                      'targetNamespace="urn:other" elementFormDefault="qualified">'
                      '<xs:element name="Other" type="xs:string"/></xs:schema>')
    out = tmp_path / "lote.xml"
    assert main(["export", "dgoj", "--db", day, "--operator-id", "OP01", "--store-id", "ALM1",
                 "--out", str(out), "--xsd", str(strict)]) == 2
    err = capsys.readouterr().err
    assert "not valid against" in err and len(err.strip().splitlines()) == 1
    assert not out.exists()
    assert export(day, out, capsys)["new"] > 0  # nothing was registered by the failed run
    for bad in (["--operator-id", "TOOLONG"], ["--session-gap-minutes", "0"], ["--xsd", str(tmp_path / "no.xsd")],
                ["--out", str(tmp_path / "no-such-dir" / "x.xml")], ["--db", "foo://nowhere"]):
        args = ["export", "dgoj", "--db", day, "--operator-id", "OP01", "--store-id", "ALM1", "--out", str(out)]
        try:
            status = main(args + bad)
        except SystemExit as stop:  # a bad option value: argparse's way out
            status = int(stop.code or 0)
        assert status == 2, bad
        assert capsys.readouterr().err.startswith("ledger export dgoj: error "), bad
