"""A busy NATS server answering late must not stop a consumer, and a timeout that does end a
command is reported as one, not as an unreadable input file (nats' TimeoutError is an OSError)."""
from __future__ import annotations

import asyncio
from typing import Any

import nats.errors
import pytest

from ops.cli.errors import ErrorCode, classify
from ops.jetstream.intake import CONTROL_ATTEMPTS, Consumer, patiently

# nats-py raises its own TimeoutError, and in fetch also a bare asyncio.TimeoutError
TIMEOUTS = [nats.errors.TimeoutError, asyncio.TimeoutError]


class LateServer:
    """Times out the first `late` requests, then answers."""

    def __init__(self, late: int, timeout: type[BaseException] = nats.errors.TimeoutError) -> None:
        self.late, self.calls, self.timeout = late, 0, timeout

    async def request(self) -> str:
        self.calls += 1
        if self.calls <= self.late:
            raise self.timeout
        return "answer"


@pytest.mark.parametrize("timeout", TIMEOUTS)
def test_a_control_request_is_asked_again_when_it_times_out(timeout: type[BaseException]) -> None:
    server = LateServer(late=CONTROL_ATTEMPTS - 1, timeout=timeout)
    assert asyncio.run(patiently(server.request)) == "answer"
    assert server.calls == CONTROL_ATTEMPTS


def test_a_server_that_never_answers_ends_with_its_timeout() -> None:
    server = LateServer(late=CONTROL_ATTEMPTS)
    with pytest.raises(nats.errors.TimeoutError):
        asyncio.run(patiently(server.request))
    assert server.calls == CONTROL_ATTEMPTS


@pytest.mark.parametrize("timeout", TIMEOUTS)
def test_an_unanswered_drain_check_means_not_drained(timeout: type[BaseException]) -> None:
    class Sub:
        async def consumer_info(self) -> Any:
            raise timeout

    consumer = Consumer.__new__(Consumer)  # only _drained is exercised: no app, no server
    assert asyncio.run(consumer._drained(Sub())) is False


@pytest.mark.parametrize("timeout", TIMEOUTS)
def test_a_fetch_that_times_out_is_no_messages_yet(timeout: type[BaseException]) -> None:
    class Sub:
        async def fetch(self, batch: int, timeout: float) -> list[Any]:
            raise timeout_kind

    timeout_kind = timeout
    consumer = Consumer.__new__(Consumer)  # only _fetch is exercised: no app, no server
    consumer.batch = 10
    assert asyncio.run(consumer._fetch(Sub(), 0.1)) is None


@pytest.mark.parametrize("exc", [nats.errors.TimeoutError(), nats.errors.FlushTimeoutError(), TimeoutError()])
def test_a_timeout_is_a_service_timeout_not_an_unreadable_input(exc: BaseException) -> None:
    assert classify(exc).code == ErrorCode.SERVICE_TIMEOUT
