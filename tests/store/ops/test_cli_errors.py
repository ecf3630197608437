"""Issue 22, "one CLI error path": EVERY command (enumerated from the parser, nested ones
included) reports an unknown option, a bad value and a missing input as ONE line,
`ledger <cmd>: error <code>: ...`, under its own name, with exit status 2. The period
options are the same on every command that reads a period; progress off a terminal is a
JSON line (done, total, rate) and `--quiet` silences it; docs/cli.md's table of codes is
the catalogue's."""
from __future__ import annotations

import argparse
import json
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from ops.cli import build_parser, errors, leaf_commands, main, options
from ops.cli.errors import ErrorCode
from ops.sim.simulator import simulate

ROOT = Path(__file__).resolve().parents[3]
MISSING_DB = "sqlite:///{tmp}/missing.db"
NO_FOLDER_DB = "sqlite:///{tmp}/no-such-folder/ledger.db"

# command -> (argv that gets past argparse, a bad value (argv, code), a missing input (argv, code)).
# A missing input is None only for commands that read none (no file, no store); checked below.
U = ErrorCode.USAGE
M = ["--db", MISSING_DB]
CASES: dict[str, tuple[list[str], tuple[list[str], ErrorCode], tuple[list[str], ErrorCode] | None]] = {
    "audit export": (["{tmp}/out", *M], (["{tmp}/out", *M, "--since", "2026-13-01"], U),
                     (["{tmp}/out", *M], ErrorCode.STORE_MISSING)),
    "audit verify": (["{tmp}/none"], (["{tmp}/none", "--findings", "-1"], U),
                     (["{tmp}/none"], ErrorCode.INPUT_MISSING)),
    "audit replay": (M, ([*M, "--workers", "0"], U), (M, ErrorCode.STORE_MISSING)),
    "balances": (M, ([*M, "--kind", "casino"], U), (M, ErrorCode.STORE_MISSING)),
    "consume": (["--db", NO_FOLDER_DB], (["--db", NO_FOLDER_DB, "--partitions", "0"], U),
                (["--db", NO_FOLDER_DB], ErrorCode.STORE_MISSING)),
    "demo": (["--db", NO_FOLDER_DB], (["--db", NO_FOLDER_DB, "--rounds", "-1"], U),
             (["--db", NO_FOLDER_DB], ErrorCode.STORE_UNREACHABLE)),
    "export dgoj": (["--operator-id", "OP01", "--store-id", "A1", "--out", "{tmp}/x.xml", *M],
                    (["--operator-id", "OPERATOR1", "--store-id", "A1", "--out", "{tmp}/x.xml", *M], U),
                    (["--operator-id", "OP01", "--store-id", "A1", "--out", "{tmp}/x.xml", "--xsd", "{tmp}/none.xsd",
                      *M], ErrorCode.INPUT_MISSING)),
    "export ksa": (["--out", "{tmp}/ksa", "--signing-key", "{tmp}/k.pem", "--signing-cert", "{tmp}/c.pem",
                    "--recipient-cert", "{tmp}/r.pem", *M],
                   (["--out", "{tmp}/ksa", "--signing-key", "{tmp}/k.pem", "--signing-cert", "{tmp}/c.pem",
                     "--recipient-cert", "{tmp}/r.pem", "--session-gap-minutes", "0", *M], U),
                   (["--out", "{tmp}/ksa", "--signing-key", "{tmp}/k.pem", "--signing-cert", "{tmp}/c.pem",
                     "--recipient-cert", "{tmp}/r.pem", *M], ErrorCode.INPUT_MISSING)),
    "export verify": (["{tmp}/none"], (["{tmp}", "--signing-cert", "{tmp}"], ErrorCode.INPUT_IS_DIRECTORY),
                      (["{tmp}/none"], ErrorCode.INPUT_MISSING)),
    "ggr": (M, ([*M, "--since", "2026-11-21T03:00"], U), (M, ErrorCode.STORE_MISSING)),
    "ingest": (["{tmp}/none.jsonl"], (["{tmp}/none.jsonl", "--batch-size", "0"], U),
               (["{tmp}/none.jsonl"], ErrorCode.INPUT_MISSING)),
    "keys add": (["--role", "admin", "--db", NO_FOLDER_DB], (["--role", "god", "--db", NO_FOLDER_DB], U),
                 (["--role", "admin", "--db", NO_FOLDER_DB], ErrorCode.STORE_UNREACHABLE)),
    "keys list": (M, (["--db", "mysql://x"], ErrorCode.BAD_DB_URL), (M, ErrorCode.STORE_MISSING)),
    "keys revoke": (["k1", *M], (["k1", "--db", "mysql://x"], ErrorCode.BAD_DB_URL),
                    (["k1", *M], ErrorCode.STORE_MISSING)),
    "monitor": (M, ([*M, "--alpha", "1.5"], U), (M, ErrorCode.STORE_MISSING)),
    "project": (M, ([*M, "--page-size", "0"], U), (M, ErrorCode.STORE_MISSING)),
    "publish": (["{tmp}/none.jsonl"], (["{tmp}"], ErrorCode.INPUT_IS_DIRECTORY),
                (["{tmp}/none.jsonl"], ErrorCode.INPUT_MISSING)),
    "recall": (["p1", *M], (["p1", *M, "--last", "x"], U), (["p1", *M], ErrorCode.STORE_MISSING)),
    "reconcile": (["{tmp}/none.csv", *M], (["{tmp}/none.csv", *M, "--findings", "-1"], U),
                  (["{tmp}/none.csv", *M], ErrorCode.INPUT_MISSING)),
    "refunds": (M, ([*M, "--since", "2026-02-30"], U), (M, ErrorCode.STORE_MISSING)),
    "rejections": (M, ([*M, "--limit", "x"], U), (M, ErrorCode.STORE_MISSING)),
    "replay": (["t#1", *M], (["t#1", *M, "--at", "0"], U), (["t#1", *M], ErrorCode.STORE_MISSING)),
    "round show": (["t#1", *M], (["t#1", "--db", "mysql://x"], ErrorCode.BAD_DB_URL),
                   (["t#1", *M], ErrorCode.STORE_MISSING)),
    "round list": (M, ([*M, "--limit", "-1"], U), (M, ErrorCode.STORE_MISSING)),
    "rtp": ([], (["--game", "poker"], U), None),
    "schema": ([], (["extra"], U), None),
    "serve": (["--db", NO_FOLDER_DB], (["--db", NO_FOLDER_DB, "--port", "70000"], U),
              None),  # its store and its port: test_serve_..., in a process of its own
    "settle": (["{tmp}/none.json"], (["{tmp}"], ErrorCode.INPUT_IS_DIRECTORY),
               (["{tmp}/none.json"], ErrorCode.INPUT_MISSING)),
    "simulate": ([], (["--tables", "0"], U), None),
    "table show": (["t1", *M], (["t1", "--db", "mysql://x"], ErrorCode.BAD_DB_URL),
                   (["t1", *M], ErrorCode.STORE_MISSING)),
    "table list": (M, (["--db", "mysql://x"], ErrorCode.BAD_DB_URL), (M, ErrorCode.STORE_MISSING)),
    "operator show": (["OP1", *M], (["OP~1", *M], ErrorCode.USAGE), (["OP1", *M], ErrorCode.STORE_MISSING)),
    "operator list": (M, (["--db", "mysql://x"], ErrorCode.BAD_DB_URL), (M, ErrorCode.STORE_MISSING)),
    "wallet deliver": (["--config", "{tmp}/none.toml", *M], (["--config", "{tmp}", *M], ErrorCode.INPUT_IS_DIRECTORY),
                       (["--config", "{tmp}/none.toml", *M], ErrorCode.INPUT_MISSING)),
    "wallet status": (M, (["--db", "mysql://x"], ErrorCode.BAD_DB_URL), (M, ErrorCode.STORE_MISSING)),
    "wallet reconcile": (["--config", "{tmp}/none.toml", "--statement", "{tmp}/none.csv", *M],
                         (["--config", "{tmp}", "--statement", "{tmp}/none.csv", *M], ErrorCode.INPUT_IS_DIRECTORY),
                         (["--config", "{tmp}/none.toml", "--statement", "{tmp}/none.csv", *M],
                          ErrorCode.INPUT_MISSING)),
    "wallet retry": (["tx1", "--by", "me", "--why", "x", *M],
                     (["tx1", "--by", "me", "--why", "x", "--db", "mysql://x"], ErrorCode.BAD_DB_URL),
                     (["tx1", "--by", "me", "--why", "x", *M], ErrorCode.STORE_MISSING)),
    "wallet resolve": (["tx1", "--by", "me", "--why", "x", *M],
                       (["tx1", "--by", "me", "--why", "x", "--db", "mysql://x"], ErrorCode.BAD_DB_URL),
                       (["tx1", "--by", "me", "--why", "x", *M], ErrorCode.STORE_MISSING)),
}


def run(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, str]:
    try:
        status = main(argv)
    except SystemExit as stop:  # argparse's way out for usage errors
        status = int(stop.code or 0)
    return status, capsys.readouterr().err


def assert_one_line(command: str, code: ErrorCode, status: int, err: str) -> str:
    assert status == 2, err
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert err.startswith(f"ledger {command}: error {code}: "), err
    return err


def fill(argv: list[str], tmp: Path) -> list[str]:
    return [a.replace("{tmp}", str(tmp)) for a in argv]


def test_every_command_has_its_cases() -> None:
    """A new command gets its three cases here; one that reads nothing says so by having no input."""
    commands = leaf_commands()
    assert set(commands) == set(CASES)
    for name, (_, _, missing) in CASES.items():
        if missing is None and name != "serve":
            parser = commands[name]
            reads = [a for a in parser._actions if not a.option_strings or "--db" in a.option_strings]
            assert not reads, f"{name} reads an input: give it a missing-input case"


@pytest.mark.parametrize("command", sorted(CASES))
def test_unknown_option_is_one_line_under_the_command(command: str, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    base = fill(CASES[command][0], tmp_path)
    err = assert_one_line(command, U, *run(capsys, [*command.split(), *base, "--no-such-option"]))
    assert "--no-such-option" in err and f"see ledger {command} --help" in err


@pytest.mark.parametrize("command", sorted(CASES))
def test_bad_value_is_one_line_with_a_code(command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv, code = CASES[command][1]
    assert_one_line(command, code, *run(capsys, [*command.split(), *fill(argv, tmp_path)]))
    assert not (tmp_path / "missing.db").exists()  # nothing was created on the way out


@pytest.mark.parametrize("command", sorted(c for c, case in CASES.items() if case[2] is not None))
def test_missing_input_is_one_line_with_a_code(command: str, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    argv, code = CASES[command][2]  # type: ignore[misc]
    assert_one_line(command, code, *run(capsys, [*command.split(), *fill(argv, tmp_path)]))
    assert not (tmp_path / "missing.db").exists()  # a read command creates no store


def _ledger(*argv: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ops.cli", *argv], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)


def test_serve_on_a_busy_port_and_without_its_store_is_one_line_exit_2(tmp_path: Path) -> None:
    """Not uvicorn's `[Errno 98]` and exit 3 (3 is `settle`'s alone): the port is checked first."""
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = str(busy.getsockname()[1])
        done = _ledger("serve", "--port", port, "--db", f"sqlite:///{tmp_path / 'l.db'}")
    assert done.returncode == 2, done.stderr
    assert re.fullmatch(rf"ledger serve: error address_in_use: 127\.0\.0\.1:{port} is in use[^\n]*\n", done.stderr)
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = str(free.getsockname()[1])
    done = _ledger("serve", "--port", port, "--db", fill([NO_FOLDER_DB], tmp_path)[0])
    assert done.returncode == 2 and done.stderr.startswith("ledger serve: error store_missing: "), done.stderr
    done = _ledger("serve", "--port", port, "--db", fill([NO_FOLDER_DB], tmp_path)[0], "--create")
    assert done.returncode == 2 and done.stderr.startswith("ledger serve: error store_unreachable: "), done.stderr
    assert len(done.stderr.splitlines()) == 1


# ------------------------------------------------------------------ periods
PERIOD_COMMANDS = {"ggr", "refunds", "monitor", "round list", "export dgoj", "export ksa", "audit export"}


def _option(parser: argparse.ArgumentParser, flag: str) -> argparse.Action | None:
    return next((a for a in parser._actions if flag in a.option_strings), None)


def test_every_period_command_takes_the_same_period_options() -> None:
    commands = leaf_commands()
    with_period = {name for name, p in commands.items()
                   if any(_option(p, f) for f in ("--since", "--until", "--day", "--days"))
                   or any(a.dest in ("day_from", "day_to") for a in p._actions)}
    assert with_period == PERIOD_COMMANDS
    for name in PERIOD_COMMANDS:
        parser = commands[name]
        since, until = _option(parser, "--since"), _option(parser, "--until")
        assert since and until and since.dest == "since" and until.dest == "until"
        assert since.type is until.type is options.parse_instant, name
        assert "exclusive" in (until.help or ""), name
        assert since.help and ("UTC" in since.help or "days" in since.help), name
        # the old --from/--to of refunds: hidden aliases of the same two (audit's are positions, not a period)
        for old in ("--from", "--to"):
            alias = _option(parser, old)
            if alias and name != "audit export":
                assert alias.help == argparse.SUPPRESS and alias.dest in ("since", "until"), (name, old)


@pytest.mark.parametrize("command", sorted(PERIOD_COMMANDS))
def test_period_values_are_checked_the_same_everywhere(command: str, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    base = fill(CASES[command][0], tmp_path)
    for period in (["--since", "2026-13-01"], ["--until", "tomorrow"]):
        err = assert_one_line(command, U, *run(capsys, [*command.split(), *base, *period]))
        assert "is not a day (2026-11-21) or an ISO 8601 time" in err
    err = assert_one_line(command, U, *run(capsys, [*command.split(), *base, "--since", "2026-11-22",
                                                    "--until", "2026-11-21"]))
    assert "--since 2026-11-22T00:00:00+00:00 is not before --until 2026-11-21T00:00:00+00:00" in err


def test_period_days_until_is_exclusive_and_old_options_mean_the_same() -> None:
    parser = build_parser()
    new = parser.parse_args(["refunds", "--since", "2026-11-21", "--until", "2026-11-23"])
    old = parser.parse_args(["refunds", "--from", "2026-11-21", "--to", "2026-11-22"])
    assert options.period_days(new) == options.period_days(old) == ("2026-11-21", "2026-11-22")


# ------------------------------------------------------------------ progress
@pytest.fixture
def feed(tmp_path: Path) -> Path:
    path = tmp_path / "feed.jsonl"
    path.write_bytes(b"".join(simulate(2, 5, 3, 0)))
    return path


def _progress_lines(err: str) -> list[dict]:
    lines = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    return [line for line in lines if line.get("event") == "progress"]


@pytest.mark.parametrize("command", ["ingest", "project", "audit replay"])
def test_progress_off_a_terminal_is_json_lines_and_quiet_silences_it(
        command: str, feed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    db = f"sqlite:///{tmp_path / 'l.db'}"
    if command != "ingest":
        assert main(["ingest", str(feed), "--db", db, "--quiet"]) == 0
        capsys.readouterr()
    argv = [*command.split(), *([str(feed)] if command == "ingest" else []), "--db", db]
    if command == "ingest":  # again: every command a duplicate, the same count of progress
        argv = ["ingest", str(feed), "--db", f"sqlite:///{tmp_path / 'fresh.db'}"]
    monkeypatch.setattr(options, "PROGRESS_EVERY_S", 0.0)  # a line per step, not per 5 seconds
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert not err.startswith("\n"), err  # no blank line before the first log line
    lines = _progress_lines(err)
    assert lines, err
    assert all({"done", "total", "rate"} <= set(line) and line["command"] == command for line in lines)
    assert all(isinstance(line["rate"], float) and line["rate"] >= 0 for line in lines)
    last = lines[-1]
    assert last["done"] == last["total"] > 0
    assert [line["done"] for line in lines] == sorted(line["done"] for line in lines)
    if command == "ingest":
        argv[-1] = f"sqlite:///{tmp_path / 'third.db'}"
    assert main([*argv, "--quiet"]) == 0
    assert _progress_lines(capsys.readouterr().err) == []


def test_progress_says_nothing_for_a_short_run(feed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Under PROGRESS_EVERY_S the command's own lines stay alone (an error stays ONE line)."""
    assert main(["ingest", str(feed), "--db", f"sqlite:///{tmp_path / 'l.db'}"]) == 0
    assert _progress_lines(capsys.readouterr().err) == []


# ------------------------------------------------------------------ the catalogue
def test_the_docs_table_of_codes_is_the_catalogue() -> None:
    """One place per code: ErrorCode (ops/cli/errors.py) for the CLI's, domain/refusals.py for refusals."""
    from domain.refusals import RefusalCode

    doc = (ROOT / "docs" / "cli.md").read_text()
    assert errors.markdown_table() in doc, "regenerate: python -m ops.cli.errors --markdown"
    assert not {c.value for c in ErrorCode} & {c.value for c in RefusalCode}


def test_an_unwritable_output_is_output_unwritable_and_creates_no_store(
        feed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["ingest", str(feed), "--db", f"sqlite:///{tmp_path / 'l.db'}", "--results", str(tmp_path / "no" / "r.jsonl")]
    assert_one_line("ingest", ErrorCode.OUTPUT_UNWRITABLE, *run(capsys, argv))
    assert not (tmp_path / "l.db").exists()
