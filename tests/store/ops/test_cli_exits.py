"""One exit-code scheme for every command (docs/cli.md, "Exit statuses"): 0 done, 1 the
answer is "no", 2 the command could not run, reported as ONE line on standard error
with a stable code and no traceback (unless --debug); the same code with --json.
A read command never creates the store it was pointed at."""
from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from ops.cli import main
from ops.cli.errors import ErrorCode
from ops.sim.simulator import simulate
from ops.sim.wallet import write_wallet

SETTLE_EXAMPLE = Path(__file__).resolve().parents[3] / "docs" / "examples" / "baccarat.json"
# A feed (two commands): what ingest reads when the store, not the feed, is the point.
A_FEED = Path(__file__).resolve().parents[3] / "docs" / "examples" / "tables.jsonl"


@pytest.fixture(scope="module")
def feed_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small faulty feed, its wallet file, and a SQLite ledger holding it."""
    d = tmp_path_factory.mktemp("cli")
    (d / "feed.jsonl").write_bytes(b"".join(simulate(3, 4, 9, 300)))
    write_wallet(d / "feed.jsonl", d / "wallet.csv", 3, 9)
    assert main(["ingest", str(d / "feed.jsonl"), "--db", f"sqlite:///{d / 'ledger.db'}", "--allow-refusals"]) == 0
    return d


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def assert_error(capsys: pytest.CaptureFixture[str], code: ErrorCode, *argv: str) -> str:
    """Exit 2 with one line on stderr naming `code`, no traceback; the same with --json."""
    status, _, err = run(capsys, *argv)
    assert status == 2, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert f": error {code}: " in err, err
    return err


# ------------------------------------------------------------------ exit 0 / 1
def test_version_and_help_exit_0(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0 and capsys.readouterr().out.startswith("casino-ledger ")


def test_no_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2


@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_refusals_and_discrepancies_exit_1_with_and_without_json(feed_dir: Path, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str],
                                                                 json_flag: list[str]) -> None:
    fresh = f"sqlite:///{tmp_path / 'fresh.db'}"
    assert run(capsys, "ingest", str(feed_dir / "feed.jsonl"), "--db", fresh, *json_flag)[0] == 1  # refusals
    assert run(capsys, "ingest", str(feed_dir / "feed.jsonl"), "--db", fresh, *json_flag)[0] == 0  # duplicates
    db = f"sqlite:///{feed_dir / 'ledger.db'}"
    assert run(capsys, "reconcile", str(feed_dir / "wallet.csv"), "--db", db, *json_flag)[0] == 1
    assert run(capsys, "recall", "nobody", "--db", db, *json_flag)[0] == 1
    assert run(capsys, "balances", "--db", db, *json_flag)[0] == 0


def test_reingest_counts_the_duplicates_that_were_refusals(feed_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = f"sqlite:///{feed_dir / 'ledger.db'}"
    _, out, _ = run(capsys, "ingest", str(feed_dir / "feed.jsonl"), "--db", db, "--json", "--allow-refusals")
    summary = json.loads(out)
    first = [json.loads(x) for x in (feed_dir / "feed.jsonl").read_text().splitlines()]
    assert summary["duplicate"] == summary["commands"] == len(first)
    assert 0 < summary["duplicate_of_refused"] < summary["duplicate"]


def test_settle_exits_0_then_2_for_a_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "settle", str(SETTLE_EXAMPLE))[0] == 0
    assert_error(capsys, ErrorCode.INPUT_MISSING, "settle", str(tmp_path / "nope.json"))
    assert_error(capsys, ErrorCode.INPUT_IS_DIRECTORY, "settle", str(tmp_path))
    (tmp_path / "latin1.json").write_bytes(b'{"ruleset_id": "caf\xe9"}')
    assert_error(capsys, ErrorCode.INPUT_NOT_UTF8, "settle", str(tmp_path / "latin1.json"))


# ------------------------------------------------------------------ exit 2: inputs
def test_missing_or_directory_inputs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = f"sqlite:///{tmp_path / 'new.db'}"
    assert_error(capsys, ErrorCode.INPUT_MISSING, "ingest", str(tmp_path / "nope.jsonl"), "--db", db)
    assert_error(capsys, ErrorCode.INPUT_IS_DIRECTORY, "ingest", str(tmp_path), "--db", db)
    assert not (tmp_path / "new.db").exists()  # nothing was created for a feed that was not there
    assert_error(capsys, ErrorCode.INPUT_MISSING, "reconcile", str(tmp_path / "nope.csv"), "--db", db)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_unreadable_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    feed = tmp_path / "feed.jsonl"
    feed.write_text("{}\n")
    feed.chmod(0)
    assert_error(capsys, ErrorCode.INPUT_UNREADABLE, "ingest", str(feed), "--db", f"sqlite:///{tmp_path / 'l.db'}")


def test_wallet_files_not_utf8_empty_or_without_columns(feed_dir: Path, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    db = f"sqlite:///{feed_dir / 'ledger.db'}"
    (tmp_path / "latin1.csv").write_bytes("transaction_id,type\nW1,d\xe9bit\n".encode("latin-1"))
    assert_error(capsys, ErrorCode.INPUT_NOT_UTF8, "reconcile", str(tmp_path / "latin1.csv"), "--db", db)
    (tmp_path / "empty.csv").write_text("")
    assert_error(capsys, ErrorCode.INPUT_EMPTY, "reconcile", str(tmp_path / "empty.csv"), "--db", db)
    (tmp_path / "header.csv").write_text("transaction_id,type,reference,player,amount_minor,currency,time\n")
    assert_error(capsys, ErrorCode.INPUT_EMPTY, "reconcile", str(tmp_path / "header.csv"), "--db", db, "--json")
    (tmp_path / "cols.csv").write_text("a,b\n1,2\n")
    assert_error(capsys, ErrorCode.INPUT_INVALID, "reconcile", str(tmp_path / "cols.csv"), "--db", db)


# ------------------------------------------------------------------ exit 2: stores
@pytest.mark.parametrize("url", ["mysql://x/y", "/tmp/ledger.db", "sqlite:///"])
def test_bad_store_urls(url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert_error(capsys, ErrorCode.BAD_DB_URL, "balances", "--db", url)
    assert_error(capsys, ErrorCode.BAD_DB_URL, "ingest", str(A_FEED), "--db", url)


READ_COMMANDS = [["balances"], ["ggr"], ["refunds"], ["recall", "p1"], ["rejections"], ["round", "show", "t#1"],
                 ["replay", "t#1"], ["audit", "replay"], ["audit", "export", "{tmp}/out"]]


@pytest.mark.parametrize("argv", READ_COMMANDS, ids=lambda a: " ".join(a[:2]))
def test_read_commands_refuse_a_store_that_does_not_exist_and_create_nothing(
        argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "missing.db"
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    assert_error(capsys, ErrorCode.STORE_MISSING, *argv, "--db", f"sqlite:///{path}")
    assert not path.exists()
    sqlite3.connect(tmp_path / "other.db").execute("CREATE TABLE x (y int)").connection.commit()
    assert_error(capsys, ErrorCode.NO_LEDGER, *argv, "--db", f"sqlite:///{tmp_path / 'other.db'}")


def test_project_refuses_a_store_that_does_not_exist(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """... but prepares one without a ledger yet: projectors start beside the first ingest."""
    assert_error(capsys, ErrorCode.STORE_MISSING, "project", "--db", f"sqlite:///{tmp_path / 'missing.db'}")
    assert not (tmp_path / "missing.db").exists()


def test_reconcile_and_audit_verify_refuse_a_missing_store(feed_dir: Path, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    missing = f"sqlite:///{tmp_path / 'missing.db'}"
    assert_error(capsys, ErrorCode.STORE_MISSING, "reconcile", str(feed_dir / "wallet.csv"), "--db", missing)
    out = tmp_path / "export"
    assert main(["audit", "export", str(out), "--db", f"sqlite:///{feed_dir / 'ledger.db'}", "--quiet"]) == 0
    capsys.readouterr()
    assert_error(capsys, ErrorCode.STORE_MISSING, "audit", "verify", str(out), "--db", missing)
    assert not (tmp_path / "missing.db").exists()


@pytest.mark.postgres
def test_a_postgres_database_that_does_not_exist_is_named_at_once(capsys: pytest.CaptureFixture[str]) -> None:
    from tests.conftest import pg_base_url

    base = pg_base_url().split("?")[0]
    url = base.rsplit("/", 1)[0] + "/no_such_database_issue9"
    err = assert_error(capsys, ErrorCode.DATABASE_MISSING, "balances", "--db", url)
    assert "no_such_database_issue9" in err
    assert_error(capsys, ErrorCode.DATABASE_MISSING, "ingest", str(A_FEED), "--db", url)


@pytest.mark.postgres
def test_a_postgres_schema_without_a_ledger(pg_schema_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert_error(capsys, ErrorCode.NO_LEDGER, "balances", "--db", pg_schema_url)


def test_demo_refuses_a_store_that_holds_data_unless_forced(feed_dir: Path, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "kept.db"
    db.write_bytes((feed_dir / "ledger.db").read_bytes())
    before = db.read_bytes()
    argv = ["demo", "--db", f"sqlite:///{db}", "--tables", "1", "--rounds", "1", "--quiet",
            "--audit-dir", str(tmp_path / "audit")]
    assert_error(capsys, ErrorCode.STORE_NOT_EMPTY, *argv)
    assert db.read_bytes() == before
    (tmp_path / "notes.db").write_text("not a database")
    assert_error(capsys, ErrorCode.STORE_NOT_EMPTY, *argv[:2], f"sqlite:///{tmp_path / 'notes.db'}", *argv[3:])
    assert run(capsys, *argv, "--force")[0] == 0


# ------------------------------------------------------------------ exit 2: options
@pytest.mark.parametrize("argv", [
    ["refunds", "--from", "2026-13-01"],
    ["refunds", "--from", "2026-02-30"],
    ["refunds", "--from", "2026-03-02", "--to", "2026-03-01"],
    ["rejections", "--limit", "-1"],
    ["rejections", "--code", "no_such_code"],
    ["reconcile", "w.csv", "--findings", "-1"],
    ["audit", "verify", "x", "--findings", "-1"],
    ["audit", "replay", "--from", "0"],
    ["audit", "replay", "--from", "5", "--to", "4"],
    ["audit", "export", "x", "--since", "2026-01-02", "--until", "2026-01-01"],
    ["audit", "export", "x", "--since", "2026-01-02", "--from", "3"],
    ["audit", "export", "x", "--since", "2026-02-30"],
    ["ingest", "f.jsonl", "--log-level", "verbose"],
    ["ingest", "f.jsonl", "--batch-size", "0"],
    ["ggr", "--timezone", "Mars/Olympus"],
    ["recall", "p1", "--last", "x"],
    ["simulate", "--tables", "0"],
    ["demo", "--rounds", "-1"],
    ["balances", "--kind", "casino"],
    ["no-such-command"],
], ids=lambda a: " ".join(a))
def test_bad_options_are_usage_errors(argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def main_exit(*args: str) -> None:
        try:
            status = main(list(args))
        except SystemExit as stop:  # argparse's own errors
            status = int(stop.code or 0)
        _, err = capsys.readouterr()
        assert status == 2, err
        assert len(err.strip().splitlines()) == 1 and f"error {ErrorCode.USAGE}: " in err, err

    main_exit(*argv, "--db", f"sqlite:///{tmp_path / 'none.db'}") if argv[0] not in ("simulate", "no-such-command") \
        else main_exit(*argv)
    assert not (tmp_path / "none.db").exists()


# ------------------------------------------------------------------ audit folders
def test_audit_export_and_verify_folders(feed_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = f"sqlite:///{feed_dir / 'ledger.db'}"
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "keep.txt").write_text("mine")
    assert_error(capsys, ErrorCode.OUTPUT_NOT_EMPTY, "audit", "export", str(tmp_path / "busy"), "--db", db)
    assert_error(capsys, ErrorCode.INPUT_EMPTY, "audit", "export", str(tmp_path / "future"), "--db", db,
                 "--since", "2999-01-01")
    (tmp_path / "empty").mkdir()
    assert_error(capsys, ErrorCode.INPUT_EMPTY, "audit", "verify", str(tmp_path / "empty"))
    assert_error(capsys, ErrorCode.INPUT_INVALID, "audit", "verify", str(tmp_path / "busy"))
    assert_error(capsys, ErrorCode.INPUT_MISSING, "audit", "verify", str(tmp_path / "nowhere"), "--json")


def test_audit_verify_caps_the_findings_it_prints(feed_dir: Path, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "x"
    assert main(["audit", "export", str(out), "--db", f"sqlite:///{feed_dir / 'ledger.db'}", "--quiet"]) == 0
    lines = (out / "events.jsonl").read_text().splitlines()
    (out / "events.jsonl").write_text("\n".join(x.replace('"', "'", 1) for x in lines) + "\n")  # every line broken
    status, text, _ = run(capsys, "audit", "verify", str(out), "--findings", "3")
    assert status == 1
    assert len([x for x in text.splitlines() if x.startswith("  unreadable")]) == 3
    assert "more (--findings N or --json); by kind: " in text
    status, text, _ = run(capsys, "audit", "verify", str(out), "--json")
    assert status == 1 and len(json.loads(text)["findings"]) > len(lines)


# ------------------------------------------------------------------ --debug
def test_debug_shows_the_traceback(tmp_path: Path) -> None:
    from ledger.store import StoreUnavailable

    with pytest.raises(StoreUnavailable):
        main(["--debug", "balances", "--db", f"sqlite:///{tmp_path / 'missing.db'}"])
    with pytest.raises(StoreUnavailable):
        main(["balances", "--debug", "--db", f"sqlite:///{tmp_path / 'missing.db'}"])


def test_permission_and_unexpected_errors_are_one_coded_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from ops.cli.errors import classify

    denied = classify(PermissionError(13, "Permission denied", str(tmp_path / "feed.jsonl")))
    assert denied.code == ErrorCode.INPUT_UNREADABLE and "feed.jsonl" in denied.message

    def broken(args: object) -> int:
        raise KeyError("a bug")

    monkeypatch.setattr("ops.cli.commands.schema.run", broken)
    import ops.cli

    parser = ops.cli.build_parser()
    monkeypatch.setattr(ops.cli, "_parser_for", lambda env: parser)  # main's parser, built once a process
    parser._subparsers._group_actions[0].choices["schema"].set_defaults(func=broken)  # type: ignore[union-attr]
    assert_error(capsys, ErrorCode.INTERNAL, "schema")


def test_a_sqlite_store_in_a_folder_that_does_not_exist(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert_error(capsys, ErrorCode.STORE_UNREACHABLE, "ingest", str(A_FEED), "--db",
                 f"sqlite:///{tmp_path / 'no' / 'such' / 'dir.db'}")


def test_audit_export_of_a_period_holds_the_events_recorded_in_it(feed_dir: Path, tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    db = f"sqlite:///{feed_dir / 'ledger.db'}"
    assert main(["audit", "export", str(tmp_path / "all"), "--db", db, "--quiet"]) == 0
    assert main(["audit", "export", str(tmp_path / "period"), "--db", db, "--quiet",
                 "--since", "2000-01-01", "--until", "2999-01-01T00:00:00+02:00"]) == 0
    capsys.readouterr()
    assert (tmp_path / "period" / "events.jsonl").read_bytes() == (tmp_path / "all" / "events.jsonl").read_bytes()
    manifest = json.loads((tmp_path / "period" / "manifest.json").read_text())
    assert manifest["requested_range"]["since"].startswith("2000-01-01T00:00:00")
