"""`ledger.logging.debug_enabled` (asked once per batch: are per-command lines logged?) follows the
level `configure` set, and `kept_configuration` gives the caller's back: `ingest --log-level
debug` run in-process logs its commands, and the service's workers after it do not."""
from __future__ import annotations

from ledger.logging import configure, debug_enabled, kept_configuration


def test_debug_enabled_follows_the_configured_level() -> None:
    with kept_configuration():
        configure("info")
        assert not debug_enabled()
        with kept_configuration():
            configure("debug")
            assert debug_enabled()
        assert not debug_enabled()  # the outer level is back
        configure("DEBUG")
        assert debug_enabled()
        configure("warning")
        assert not debug_enabled()


def test_lines_go_to_the_stderr_of_the_moment_not_the_one_configured_with(monkeypatch) -> None:
    """pytest replaces and closes sys.stderr between tests; a consumer that logged to the stream
    it was configured with died writing to a closed file (seen in test_jetstream.py)."""
    import io

    import structlog

    first, second = io.StringIO(), io.StringIO()
    with kept_configuration():
        monkeypatch.setattr("sys.stderr", first)
        configure("info", json_output=True)
        first.close()
        monkeypatch.setattr("sys.stderr", second)
        structlog.get_logger().info("after_the_swap")
    assert "after_the_swap" in second.getvalue()
