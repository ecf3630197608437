"""The README is a front door: every shell block in it runs as written on a fresh copy of the
tree, and every relative link in it and in docs/*.md names a file of the repository.

The copy holds the files git tracks (and new ones in the source folders), without `.venv`,
stores or outputs; its `.venv` is a link to this checkout's, so the install commands are not
re-run: they are checked instead (valid bash, the files and extras they name exist, .ci/run
reads the test command), and what the main command runs after installing is run. Every other
`bash` block runs in order in one copy, each line checked for its status: 0, or N where the
line has the comment `# exit N` (or `# exit N: why`). The one change made to a block: the
service's port 8080 becomes a free one, so a run never meets another process's server.
"""
from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
README = ROOT / "README.md"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.S | re.M)
MARKER = re.compile(r"<!-- (main-command|test-command) -->\n```")
EXPECTED_EXIT = re.compile(r"\s#\s*exit (\d+)(?::|\s*$)")
LINK = re.compile(r"\]\(([^)\s]+)\)")
DOC_MENTION = re.compile(r"(?<![\w/.-])(docs/[\w./-]+\.(?:md|jsonl?))(?![\w])")
INSTALL = ("python3 -m venv .venv", ".venv/bin/pip install ")
SERVICE_PORT = "8080"
# A block's bound: the tour's first block (about 25 commands, each a Python process) took 182 s
# at load 10-15 on 2 cores; a hang still ends here with the block's output, not at CI's limit.
BLOCK_TIMEOUT_S = 420
TOUR_TIMEOUT_S = 600  # the test's own (pyproject's 300 s is for one step; the tour is three blocks)
SOURCE_FOLDERS = {"docs", "domain", "ledger", "projections", "ops", "tests", ".ci"}


def blocks(text: str) -> list[tuple[str, str]]:
    """(kind, body) of every fenced block: kind is the marker's name or the fence's language."""
    marked = {m.end() - 3: m.group(1) for m in MARKER.finditer(text)}
    return [(marked.get(m.start(), m.group(1)), m.group(2)) for m in FENCE.finditer(text)]


def logical_lines(body: str) -> list[str]:
    """The block's commands: continuation lines joined, blank lines and comment lines left out."""
    joined = body.replace("\\\n", " ")
    return [line for line in joined.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def checked_script(body: str) -> str:
    """The block as one bash script that stops at the first line whose status is not its own."""
    out = []
    for number, line in enumerate(logical_lines(body), 1):
        match = EXPECTED_EXIT.search(line)
        want = int(match.group(1)) if match else 0
        out.append(line)
        out.append(f'rc=$?; if [ "$rc" -ne {want} ]; then echo "README command {number} exited $rc, not {want}:" '
                   f"{_quote(line)} >&2; exit 99; fi")
    return "\n".join(out) + "\n"


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def fresh_copy(dest: Path) -> Path:
    """What a clone holds: the tracked files, and new ones in the source folders (not what a
    tour run here left at the top, such as audit-out/, which would make the copy's differ)."""
    tracked = git_files("--cached")
    new = [n for n in git_files("--others", "--exclude-standard") if n.split("/")[0] in SOURCE_FOLDERS]
    for name in tracked + new:
        source = ROOT / name
        if source.is_file():  # a tracked file deleted in the working tree is not in a clone either
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    (dest / ".venv").symlink_to(ROOT / ".venv")
    return dest


def git_files(*options: str) -> list[str]:
    listed = subprocess.run(["git", "ls-files", "-z", *options], cwd=ROOT, capture_output=True, check=True)
    return [name for name in listed.stdout.decode().split("\0") if name]


def run_script(script: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEDGER_") and k != "VIRTUAL_ENV"}
    return subprocess.run(["bash", "-c", script], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=BLOCK_TIMEOUT_S)


def free_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return str(s.getsockname()[1])


def install_parts(body: str) -> tuple[list[str], list[str]]:
    """The `&&` parts of an install command: (creating the venv and pip, everything else)."""
    parts = [p.strip() for p in body.strip().split("&&")]
    return [p for p in parts if p.startswith(INSTALL)], [p for p in parts if not p.startswith(INSTALL)]


@pytest.fixture(scope="module")
def readme_blocks() -> list[tuple[str, str]]:
    found = blocks(README.read_text())
    assert {kind for kind, _ in found} >= {"main-command", "test-command", "bash"}
    return found


def test_every_block_is_labelled_so_none_escapes_the_run(readme_blocks: list[tuple[str, str]]) -> None:
    assert {kind for kind, _ in readme_blocks} <= {"main-command", "test-command", "bash", "json", "text"}


@pytest.mark.parametrize("kind", ["main-command", "test-command"])
def test_an_install_command_is_valid_bash_and_names_what_exists(
        readme_blocks: list[tuple[str, str]], kind: str) -> None:
    (body,) = [b for k, b in readme_blocks if k == kind]
    assert len(body.strip().splitlines()) == 1, "one line: .ci/run and a newcomer copy it whole"
    assert subprocess.run(["bash", "-n", "-c", body]).returncode == 0
    install, rest = install_parts(body)
    target = "." if kind == "main-command" else "'.[test]'"
    assert install == ["python3 -m venv .venv", f".venv/bin/pip install -q -e {target}"]
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert 'ledger = "ops.cli:main"' in pyproject and (kind == "main-command" or "\ntest = [" in pyproject)
    for part in rest:
        tool = part.split()[0]
        if tool == "bash":
            assert (ROOT / part.split()[1]).is_file(), part
        else:
            assert tool.startswith(".venv/bin/") and (ROOT / tool).exists(), part


def test_ci_runs_the_readme_test_command(readme_blocks: list[tuple[str, str]]) -> None:
    (body,) = [b for k, b in readme_blocks if k == "test-command"]
    awk = re.search(r"awk '([^']+)' README.md", (ROOT / ".ci" / "run").read_text())
    assert awk, ".ci/run reads the test command with awk"
    read = subprocess.run(["awk", awk.group(1), str(README)], capture_output=True, text=True, check=True).stdout
    assert read.strip() == body.strip()


def test_the_main_command_runs_after_the_install(readme_blocks: list[tuple[str, str]], tmp_path: Path) -> None:
    (body,) = [b for k, b in readme_blocks if k == "main-command"]
    _, rest = install_parts(body)
    done = run_script(" && ".join(rest), fresh_copy(tmp_path))
    assert done.returncode == 0, done.stderr[-3000:]
    assert "every payout matches" in done.stdout


@pytest.mark.timeout(TOUR_TIMEOUT_S)
def test_the_tour_and_the_service_run_as_written(readme_blocks: list[tuple[str, str]], tmp_path: Path) -> None:
    clone = fresh_copy(tmp_path)
    port = free_port()
    said = ""
    for number, (kind, body) in enumerate(readme_blocks):
        if kind != "bash":
            continue
        done = run_script(checked_script(body.replace(SERVICE_PORT, port)), clone)
        assert done.returncode == 0, f"README block {number}:\n{done.stderr[-3000:]}"
        said += done.stdout + done.stderr
    # what the README says these commands show
    assert "3911 commands: " in said and " 6 refused," in said and "reconciled: no discrepancies" in said
    assert "table bj-sb-2: 2 configuration version(s)" in said and "valid against" in said
    assert said.count('"status":"duplicate"') == 2 and "403\n" in said and '"status":"ready"' in said
    assert (clone / "round.html").stat().st_size > 0 and (clone / "lote.xml").stat().st_size > 0


def test_a_line_that_exits_otherwise_than_written_fails_the_block(tmp_path: Path) -> None:
    assert run_script(checked_script("true\nfalse  # exit 1\n"), tmp_path).returncode == 0
    failed = run_script(checked_script("true\nfalse\ntouch never\n"), tmp_path)
    assert failed.returncode == 99 and "command 2 exited 1, not 0" in failed.stderr
    assert not (tmp_path / "never").exists()
    assert run_script(checked_script("true  # exit 1\n"), tmp_path).returncode == 99


def test_the_routes_the_readme_says_need_no_key_are_exactly_those(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient
    from starlette.routing import Route

    from ledger.store import open_app
    from ops.service.app import Settings, create_app

    sentence = re.search(r"((?:`/[a-z.]+`,? (?:and )?)+)answer without a key", " ".join(README.read_text().split()))
    assert sentence, "the README says which routes answer without a key"
    keyless = set(re.findall(r"`(/[a-z.]+)`", sentence.group(1)))
    url = f"sqlite:///{tmp_path / 'l.db'}"
    open_app(url).close()
    app = create_app(Settings(db_url=url, key_cache_s=0.0))
    with TestClient(app) as client:
        # the documented routes (routers included in the app are not in app.routes), and the docs pages
        declared = [(m.upper(), path) for path, methods in app.openapi()["paths"].items() for m in methods]
        declared += [(m, r.path) for r in app.routes if isinstance(r, Route) for m in sorted(r.methods or ())]
        routes = sorted({(m, re.sub(r"{[^}]+}", "x", path)) for m, path in declared
                         if m in ("GET", "POST") and "oauth2" not in path})
        answers = {(m, path): client.request(m, path).status_code for m, path in routes}
    assert {path for (_, path), status in answers.items() if status != 401} == keyless, answers


def markdown_files() -> list[Path]:
    return [README, *sorted((ROOT / "docs").glob("*.md"))]


@pytest.mark.parametrize("doc", markdown_files(), ids=lambda p: p.name)
def test_every_relative_link_names_a_file_of_the_repository(doc: Path) -> None:
    text = doc.read_text()
    targets = [t for t in LINK.findall(text) if not re.match(r"[a-z]+:|#", t)]
    for target in targets:
        path = (doc.parent / target.split("#")[0]).resolve()
        assert path.is_relative_to(ROOT) and path.exists(), f"{doc.name}: link {target} names no file of the repo"


@pytest.mark.parametrize("doc", markdown_files(), ids=lambda p: p.name)
def test_every_docs_path_mentioned_exists(doc: Path) -> None:
    missing = {m for m in DOC_MENTION.findall(doc.read_text()) if not (ROOT / m).exists()}
    assert not missing, f"{doc.name} mentions {sorted(missing)}"
