"""What a batch of feed commands gives back (`Result`), how a feed is cut into batches,
and how the cyclic collector is spared while batches run.

Shared by the application (ledger/app.py) and the ingest workers (ledger/partitions.py),
which therefore do not import each other.
"""
from __future__ import annotations

import gc
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, NamedTuple, TypeVar

from pydantic import BaseModel

Raw = BaseModel | bytes | str  # a feed command: parsed already, or its JSON text
STATUSES = ("accepted", "duplicate", "refused", "conflict")
T = TypeVar("T")


class Result(NamedTuple):
    """One command's answer. A tuple: immutable, and made for every command, where a
    frozen dataclass's __init__ sets each field through object.__setattr__."""

    status: str  # accepted | duplicate | refused | conflict
    command_id: str | None
    code: str | None = None
    message: str = ""
    round_id: str | None = None
    events: tuple[str, ...] = ()  # names of the events this command recorded
    original_status: str | None = None  # for a duplicate: the status of the first delivery

    def as_dict(self) -> dict[str, Any]:
        return {
            "status": self.status, "command_id": self.command_id, "code": self.code, "message": self.message,
            "round_id": self.round_id, "events": list(self.events), "original_status": self.original_status,
        }


def batches(items: Iterable[T], size: int) -> Iterator[list[T]]:
    batch: list[T] = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


class Spared:
    """Runs a batch with the cyclic collector paused, then collects the batch's young
    objects once (and freezes what survived, when `freeze`). A batch makes some 20
    tracked objects a command that reference counting frees or the batch keeps; the
    collector, left on, would walk the survivors every 700 allocations and again in
    each older pass (a twentieth of ingest's CPU), and finds almost no cycles."""

    def __init__(self, freeze: bool) -> None:
        self.freeze = freeze

    def __call__(self, work: Callable[[], T]) -> T:
        if not gc.isenabled():  # someone else runs the collector: leave it to them
            return work()
        gc.disable()
        try:
            done = work()
        finally:
            gc.enable()
        if self.freeze:
            _freeze_survivors()
        else:
            gc.collect(0)
        return done


@contextmanager
def collector_spared() -> Iterator[Spared]:
    """Yields how to run each batch (`spared(lambda: run(batch))`): the collector is paused
    while a batch runs and its young objects collected once after it; what survived the
    batch (cached rounds and their models, results) is frozen, so the cyclic collector stops
    re-walking it on every older-generation pass, which grows with everything ingest keeps.
    Refcounting still frees what dies; everything goes back to the collector when ingest
    ends, however it ends. A caller that froze objects itself (e.g. before forking) keeps
    its frozen set as it is: its batches are collected, not frozen."""
    if gc.get_freeze_count() != 0:
        yield Spared(freeze=False)
        return
    try:
        yield Spared(freeze=True)
    finally:
        gc.unfreeze()


def _freeze_survivors() -> None:
    gc.collect(0)  # young cyclic garbage goes first, not into the frozen set
    gc.freeze()
