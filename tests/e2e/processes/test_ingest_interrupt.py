"""Ctrl-C during a large `ledger ingest` (a real process, SIGINT half way): it says what was
committed and that the same command resumes, exit 130; the rerun ends as an uninterrupted run."""
from __future__ import annotations

import json
import re
import signal
import time
from pathlib import Path

from ledger.store import open_app
from ops.cli import main as cli
from ops.sim.simulator import simulate
from tests.e2e.processes.test_crash_and_concurrency import _commands, _wait_until, ledger_process
from tests.store.ledger.test_shards import _round_facts

ORPHAN_END_S = 5.0  # a worker checks its parent every 0.5 s
INTERRUPTED = re.compile(r"ledger ingest: interrupted: (\d+) commands committed \((\d+) accepted, (\d+) duplicate, "
                         r"(\d+) refused, (\d+) conflict; (\d+) events recorded\); run the same command again to "
                         r"resume \(what was committed answers duplicate\)")


def test_ctrl_c_says_what_was_committed_and_a_rerun_resumes(tmp_path: Path) -> None:
    feed = list(simulate(4, 60, seed=23, fault_rate=100))
    path, results = tmp_path / "feed.jsonl", tmp_path / "results.jsonl"
    path.write_bytes(b"".join(feed))
    db = f"sqlite:///{tmp_path / 'ledger.db'}"
    proc = ledger_process("ingest", str(path), "--db", db, "--batch-size", "20", "--allow-refusals",
                          "--results", str(results))
    try:
        _wait_until(lambda: results.exists() and results.stat().st_size > 0, proc)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    said = INTERRUPTED.fullmatch(err.decode().strip().splitlines()[-1])
    assert said, err
    committed = [json.loads(x) for x in results.read_text().splitlines()]
    assert 0 < int(said[1]) == len(committed) < len(feed)  # what the results file holds: every commit, no more
    assert int(said[6]) == sum(len(r["events"]) for r in committed)

    rerun = tmp_path / "again.jsonl"
    assert cli(["ingest", str(path), "--db", db, "--allow-refusals", "--quiet", "--results", str(rerun)]) == 0
    answers = [json.loads(x) for x in rerun.read_text().splitlines()]
    assert len(answers) == len(feed)
    assert {a["status"] for a in answers[:len(committed)]} == {"duplicate"}  # resumed where it stopped
    again, clean = open_app(db), open_app(f"sqlite:///{tmp_path / 'clean.db'}")
    try:
        clean.ingest(feed)
        assert _round_facts(again) == _round_facts(clean)
        ids = [json.loads(line)["command_id"] for line in feed]
        assert _commands(again, ids) == _commands(clean, ids)
    finally:
        again.close()
        clean.close()


def test_a_ctrl_c_between_counting_a_batch_and_writing_it_waits_for_the_write(tmp_path: Path, monkeypatch,  # type: ignore[no-untyped-def]
                                                                              capsys) -> None:
    """A Ctrl-C that lands after a committed batch was counted and before its results were
    written (the race behind a flaky run: the message said 80 committed, the file held 60)
    is raised once the batch is written: the message and the results file agree."""
    import os

    from ops.cli.commands import ingest

    feed = list(simulate(2, 10, seed=5))
    path, results = tmp_path / "feed.jsonl", tmp_path / "results.jsonl"
    path.write_bytes(b"".join(feed))
    counted = ingest.Tally.add

    def add_then_ctrl_c(self, batch):  # type: ignore[no-untyped-def]
        counted(self, batch)
        if sum(self.by_status.values()) >= 20:  # the second batch: Ctrl-C before its results are written
            os.kill(os.getpid(), signal.SIGINT)

    monkeypatch.setattr(ingest.Tally, "add", add_then_ctrl_c)
    assert cli(["ingest", str(path), "--db", f"sqlite:///{tmp_path / 'ledger.db'}", "--batch-size", "10",
                "--allow-refusals", "--quiet", "--results", str(results)]) == 130
    said = INTERRUPTED.fullmatch(capsys.readouterr().err.strip().splitlines()[-1])
    assert said and int(said[1]) == 20
    assert len(results.read_text().splitlines()) == 20  # both batches counted were written


def _children(pid: int) -> set[int]:
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        found.update(int(c) for c in (task / "children").read_text().split())
    return found


def test_workers_end_soon_after_their_parent_is_killed(tmp_path: Path) -> None:
    """`ledger ingest --workers 2` killed (-9) mid-feed: its workers end within a few seconds
    (a worker waiting for its next batch used to wait for good, holding its sessions and the
    parent's inherited sockets), and a rerun ends as an uninterrupted run."""
    feed = list(simulate(8, 80, seed=29))
    path, results = tmp_path / "feed.jsonl", tmp_path / "results.jsonl"
    path.write_bytes(b"".join(feed))
    db = f"sqlite:///{tmp_path / 'ledger.db'}"
    proc = ledger_process("ingest", str(path), "--db", db, "--workers", "2", "--batch-size", "50",
                          "--results", str(results))
    try:
        _wait_until(lambda: results.exists() and results.stat().st_size > 0, proc)
        workers = _children(proc.pid)
        assert len(workers) >= 2, workers
        proc.kill()
        proc.wait(10)
    finally:
        proc.kill()
    deadline = time.monotonic() + ORPHAN_END_S
    while (alive := {w for w in workers if Path(f"/proc/{w}").exists() and _state(w) != "Z"}) \
            and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive, f"workers still running {ORPHAN_END_S} s after their parent was killed: {alive}"
    assert cli(["ingest", str(path), "--db", db, "--quiet"]) == 0
    app = open_app(db)
    try:
        assert len(_commands(app, [json.loads(line)["command_id"] for line in feed])) == len(feed)
    finally:
        app.close()


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return "Z"
