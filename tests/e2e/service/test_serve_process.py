"""`ledger keys` and `ledger serve --workers 2` as real processes: metrics summed over
the workers, and SIGTERM finishing the open batch before the exit."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

from tests.e2e.service.conftest import auth, feed, free_port

LEDGER = [sys.executable, "-m", "ops.cli"]


def ledger(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*LEDGER, *args], capture_output=True, text=True, timeout=60)


def test_keys_cli(tmp_path, capsys):
    from ops.cli import main

    def ledger(*args: str) -> subprocess.CompletedProcess[str]:
        code = main(list(args))
        return subprocess.CompletedProcess(args, code, capsys.readouterr().out, "")

    db = f"sqlite:///{tmp_path / 'k.db'}"
    made = json.loads(ledger("keys", "add", "--role", "studio", "--tables", "T1,T2", "--name", "s1", "--db", db,
                             "--json").stdout)
    assert made["role"] == "studio" and made["name"] == "s1" and made["key"].startswith("lk_")
    assert ledger("keys", "add", "--role", "auditor", "--db", db).stdout.startswith("lk_")
    listed = json.loads(ledger("keys", "list", "--db", db, "--json").stdout)
    assert [(k["name"], k["tables"]) for k in listed][0] == ("s1", ["T1", "T2"])
    assert made["key"] not in json.dumps(listed) and made["key"].split("_", 2)[2] not in Path(tmp_path / "k.db").read_text(
        errors="replace")  # only the hash is stored
    assert ledger("keys", "revoke", "s1", "--db", db).returncode == 0
    assert ledger("keys", "revoke", "s1", "--db", db).returncode == 1  # already revoked
    assert json.loads(ledger("keys", "list", "--db", db, "--json").stdout)[0]["revoked_at"]


def _wait_ready(url: str, proc: subprocess.Popen) -> None:
    while True:
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        try:
            if httpx.get(url + "/readyz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.05)


def _metric(text: str, name: str) -> float:
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(name))


def test_serve_two_workers_metrics_and_sigterm(tmp_path):
    db = f"sqlite:///{tmp_path / 's.db'}"
    key = json.loads(ledger("keys", "add", "--role", "admin", "--db", db, "--json").stdout)["key"]
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen([*LEDGER, "serve", "--db", db, "--port", str(port), "--workers", "2",
                             "--max-wait-ms", "1500"], stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        _wait_ready(url, proc)
        lines = feed(tables=5, rounds=1, fault_rate=0)
        half = len(lines) // 2
        with httpx.Client(base_url=url, headers={**auth(key), "Content-Type": "application/x-ndjson"},
                          timeout=30) as http:
            r = http.post("/v1/commands", content=b"\n".join(lines[:half]))
            assert r.status_code == 200 and {x["status"] for x in r.json()} == {"accepted"}
            for _ in range(4):  # several scrapes: whichever worker answers, the sums are the same
                text = http.get("/metrics").text
                assert _metric(text, 'ledger_commands_total{code="",status="accepted"}') == half
            late: dict[str, object] = {}

            def post_late() -> None:
                late["response"] = http.post("/v1/commands", content=b"\n".join(lines[half:]))

            poster = threading.Thread(target=post_late)
            poster.start()
            time.sleep(0.5)  # the request now waits in its 1.5 s group-commit window
            proc.send_signal(signal.SIGTERM)
            poster.join()
            assert proc.wait(timeout=60) == 0
        response = late["response"]
        assert response.status_code == 200 and {x["status"] for x in response.json()} == {"accepted"}
        logs = [json.loads(x) for x in proc.stderr.read().splitlines() if x.startswith("{")]
        assert {x["route"] for x in logs if x.get("event") == "request"} >= {"/v1/commands", "/metrics"}
    finally:
        if proc.poll() is None:
            proc.kill()
    from ledger.store import open_app

    app = open_app(db)
    try:
        assert len(app.ledger_recorder().select_commands([json.loads(x)["command_id"] for x in lines])) == len(lines)
    finally:
        app.close()


def test_serve_refuses_a_sqlite_store_that_does_not_exist(tmp_path):
    """A mistyped --db made an empty store that answered ready: now one line, exit 2, naming --create."""
    typo = tmp_path / "typo.db"
    done = subprocess.run([*LEDGER, "serve", "--db", f"sqlite:///{typo}", "--port", str(free_port())],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1, done.stderr
    assert done.stderr.startswith("ledger serve: error store_missing: ") and "--create" in done.stderr
    assert not typo.exists() and not done.stdout


def _start_line(proc: subprocess.Popen) -> str:
    assert proc.stderr is not None
    return proc.stderr.readline()


def test_serve_says_where_it_listens_and_when_it_stops(tmp_path):
    """--create makes the store; the first line names the URL, the store and the console; a
    last line says it stopped (SIGINT, as Ctrl-C: a graceful stop, exit 0)."""
    db = f"sqlite:///{tmp_path / 'new.db'}"
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen([*LEDGER, "serve", "--db", db, "--create", "--port", str(port)], stderr=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        line = _start_line(proc)
        assert line.startswith(f"ledger serve: {url} on store {db} (1 worker); console {url}/ui/"), line
        _wait_ready(url, proc)
        assert httpx.get(url + "/ui/", follow_redirects=True, timeout=5).status_code == 200
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 0
        assert proc.stderr is not None and proc.stdout is not None
        rest = proc.stderr.read().splitlines()
        assert rest[-1] == f"ledger serve: stopped ({url})", rest
        assert proc.stdout.read() == ""
    finally:
        if proc.poll() is None:
            proc.kill()


def test_serve_hides_the_store_password(pg_schema_url):
    """PostgreSQL here trusts local users: a password in the URL is accepted, and never printed."""
    db = re.sub(r"^(postgres(?:ql)?://[^@:/]+)@", r"\1:s3cret@", pg_schema_url)
    assert "s3cret" in db
    port = free_port()
    proc = subprocess.Popen([*LEDGER, "serve", "--db", db, "--port", str(port)], stderr=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        line = _start_line(proc)
        assert "postgresql://postgres:***@" in line and "s3cret" not in line, line
        _wait_ready(f"http://127.0.0.1:{port}", proc)
        proc.terminate()
        assert proc.wait(timeout=60) == 0
        assert proc.stderr is not None and "s3cret" not in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
