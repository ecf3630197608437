"""`Deliverer` against the fake wallet, in process, on SQLite and PostgreSQL: every wallet
ends as the ledger, to the cent, whatever the wallet does (docs/wallet.md)."""
from __future__ import annotations

from pathlib import Path

import pytest

from ops.bench.fake_wallet import MISBEHAVIOURS, Chaos, FakeWallet
from ops.bench.wallet_check import describe, problems
from ops.wallet.config import load
from ops.wallet.deliverer import Deliverer
from tests.e2e.wallet.conftest import SECRET, config_file, deliver, filled


def test_a_calm_wallet_gets_every_payout_once(store_url: str, tmp_path: Path) -> None:
    url = filled(store_url, rounds=3, seed=38)
    with FakeWallet(SECRET) as wallet:
        first = deliver(url, config_file(tmp_path, wallet.url))
        assert first.result.calls > 0 and set(first.result.outcomes) == {"ok"}
        assert problems(url, wallet.state) == [], describe(url, wallet.state)
        again = deliver(url, config_file(tmp_path, wallet.url))
        assert again.result.calls == 0 and again.result.events == 0


def misbehaving(url: str, tmp: Path, chaos: Chaos) -> None:
    """A small day with a void and two reversals (seed 38) delivered to a wallet misbehaving
    as `chaos` says; a late or timed-out answer comes just past a short timeout, and many calls
    are in flight, so each costs little time."""
    filled(url, rounds=3, seed=38)
    with FakeWallet(SECRET, chaos=chaos) as wallet:
        deliver(url, config_file(tmp, wallet.url, concurrency=16, timeout_s=0.12))
        assert problems(url, wallet.state) == [], describe(url, wallet.state)
        assert {kind for _tx, kind, _effect in wallet.state.log} == {"debit", "credit", "rollback", "round"}


@pytest.mark.parametrize("how", MISBEHAVIOURS)
def test_each_misbehaviour(how: str, tmp_path: Path) -> None:
    """Each alone, often (SQLite: what the wallet does is the store's concern only through the
    outcomes recorded, which the test of them all at once checks on both stores)."""
    misbehaving(f"sqlite:///{tmp_path / 'ledger.db'}", tmp_path, Chaos({how: 0.3}, delay_s=0.2, seed=3))


def test_every_misbehaviour_at_once(store_url: str, tmp_path: Path) -> None:
    odds = dict.fromkeys(MISBEHAVIOURS, 0.05)
    misbehaving(store_url, tmp_path, Chaos(odds, delay_s=0.2, seed=4))


def test_a_free_slot_goes_to_the_player_whose_head_is_oldest(store_url: str, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """With one call allowed, the player sent first is the one whose next transaction is the
    oldest in ledger order, whatever order the players were met in (the busiest players fell
    behind and were left for a serial tail)."""
    url = filled(store_url, rounds=3, seed=38)
    deliverer = Deliverer(url, load(str(config_file(tmp_path, "http://127.0.0.1:9/wallet", concurrency=1))))
    sent: list[list[object]] = []

    def send(txs: list[object]) -> None:  # no call: the slot taken, as `_send` takes it
        sent.append(txs)
        deliverer.per_operator["default"] += 1

    monkeypatch.setattr(deliverer, "_send", send)
    try:
        while deliverer.derive():
            pass
        deliverer._load()
        assert deliverer.queues is not None and len(deliverer.queues) > 1
        oldest = min(deliverer.queues.values(), key=lambda queue: queue[0].seq)[0]
        deliverer.queues = dict(sorted(deliverer.queues.items(), key=lambda item: -item[1][0].seq))  # newest met first
        deliverer._loaded_at = float("inf")  # not read again from the store
        deliverer.dispatch()
        assert sent == [[oldest]]
    finally:
        deliverer.close()


def test_the_librarys_own_connection_error_is_a_reconnect(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The event log is read through the library's recorder, which raises its own
    OperationalError for psycopg's: a lost session found there is a reconnect like any other
    (it ended the run with exit 2: `store_unreachable: terminating connection due to
    administrator command`, one run in four of test_kill's terminations)."""
    from eventsourcing.persistence import OperationalError as LibraryOperationalError

    url = filled(f"sqlite:///{tmp_path / 'ledger.db'}", rounds=3, seed=38)
    with FakeWallet(SECRET) as wallet:
        deliverer = Deliverer(url, load(str(config_file(tmp_path, wallet.url))))
        derive, failures = deliverer.derive, [1]

        def failing_once(**kwargs: bool) -> int:
            if failures:
                failures.pop()
                raise LibraryOperationalError("terminating connection due to administrator command")
            return derive(**kwargs)

        monkeypatch.setattr(deliverer, "derive", failing_once)  # (the bound original reads the reopened log)
        try:
            result = deliverer.run(until_idle=True)
        finally:
            deliverer.close()
        assert result.reconnects == 1
        assert problems(url, wallet.state) == [], describe(url, wallet.state)
