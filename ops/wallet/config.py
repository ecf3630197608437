"""The operators' wallets (docs/wallet.md, "Configuration"): a TOML file, one table per
operator id. The secret is read from the environment variable the file names, and is kept
out of every repr, message and log."""
from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass, field
from typing import Any

CONCURRENCY_MAX = 64
# Batched calls (docs/wallet.md, "Batches"): up to this many transactions in one request; 1 (the
# default) is the one-call-per-transaction protocol.
BATCH_MAX_LIMIT = 500
# JetStream: a resend of a transaction within this of its first publish is dropped by the
# stream; it must outlast the longest the deliverer (or the nats-server) may be away between
# a publish stored but not acknowledged and its resend (docs/wallet.md, "JetStream").
DUPLICATE_WINDOW_S_DEFAULT = 120.0
DUPLICATE_WINDOW_S_MAX = 7 * 86400.0


class ConfigError(Exception):
    """The configuration cannot be used (one line naming why; never a secret's value)."""


TRANSPORTS = ("http", "jetstream")


@dataclass(frozen=True)
class OperatorWallet:
    operator_id: str
    secret_env: str
    url: str = ""  # http: the wallet's base URL
    transport: str = "http"  # http: the deliverer calls the wallet; jetstream: it publishes, the operator consumes
    nats_url: str = "nats://127.0.0.1:4222"
    stream: str = ""  # jetstream: the stream (made if missing); default WALLET_<OPERATOR>
    subject: str = ""  # jetstream: messages on <subject>.<kind>; default ledger.wallet.<operator>
    duplicate_window_s: float = DUPLICATE_WINDOW_S_DEFAULT  # jetstream: the stream's, when the deliverer makes it
    debit_notices: bool = True
    concurrency: int = 8  # requests in flight at once (batched: batches in flight)
    batch_max: int = 1  # http: > 1 posts up to this many transactions (of different players) in one <url>/batch
    timeout_s: float = 5.0
    backoff_s: float = 0.2  # the first retry's wait, doubled each time up to backoff_max_s
    backoff_max_s: float = 30.0
    secret: bytes = field(default=b"", repr=False, compare=False)


_FIELDS = {"url": str, "transport": str, "nats_url": str, "stream": str, "subject": str, "secret_env": str, "debit_notices": bool, "concurrency": int, "batch_max": int,
           "timeout_s": float,
           "backoff_s": float, "backoff_max_s": float, "duplicate_window_s": float}


def load(path: str, env: dict[str, str] | None = None, *, secrets: bool = True) -> dict[str, OperatorWallet]:
    """Every operator's wallet in the file at `path`, with its secret from the environment
    (`secrets=False`: without, for what calls no wallet, as `ledger wallet reconcile`)."""
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except FileNotFoundError as exc:
        raise ConfigError(f"{path} does not exist") from exc
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not a readable TOML file: {exc}") from exc
    operators = data.get("operators")
    if not isinstance(operators, dict) or not operators:
        raise ConfigError(f"{path}: no [operators.<id>] table")
    return {op: _operator(path, op, table, os.environ if env is None else env, secrets) for op, table in operators.items()}


def _transport(path: str, op: str, values: dict[str, Any]) -> None:
    """The keys the operator's transport needs, checked; the JetStream names defaulted."""
    transport = values.setdefault("transport", "http")
    if transport not in TRANSPORTS:
        raise ConfigError(f"{path}: operators.{op}.transport must be one of {', '.join(TRANSPORTS)}")
    for key in ("url", "secret_env") if transport == "http" else ("secret_env",):
        if key not in values:
            raise ConfigError(f"{path}: operators.{op} has no {key}")
    if transport == "http" and not values["url"].startswith(("http://", "https://")):
        raise ConfigError(f"{path}: operators.{op}.url must start with http:// or https://")
    if transport == "jetstream":
        if not values.setdefault("nats_url", "nats://127.0.0.1:4222").startswith(("nats://", "tls://")):
            raise ConfigError(f"{path}: operators.{op}.nats_url must start with nats:// or tls://")
        token = re.sub(r"[^A-Za-z0-9_-]", "_", op)
        stream = values.setdefault("stream", f"WALLET_{token.upper()}")
        subject = values.setdefault("subject", f"ledger.wallet.{token}")
        if not _NAME.fullmatch(stream) or not _SUBJECT.fullmatch(subject):
            raise ConfigError(f"{path}: operators.{op}: stream must be letters, digits, _ or -, and subject "
                              "dot-separated tokens of those")


_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
_SUBJECT = re.compile(r"[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*")


def _operator(path: str, op: str, table: Any, env: Any, secrets: bool = True) -> OperatorWallet:
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: operators.{op} is not a table")
    unknown = set(table) - set(_FIELDS)
    if unknown:
        raise ConfigError(f"{path}: operators.{op}: unknown keys {sorted(unknown)}")
    values: dict[str, Any] = {}
    for key, kind in _FIELDS.items():
        if key in table:
            value = table[key]
            if kind is float and isinstance(value, int) and not isinstance(value, bool):
                value = float(value)
            if type(value) is not kind:
                raise ConfigError(f"{path}: operators.{op}.{key} must be {kind.__name__}")
            values[key] = value
    _transport(path, op, values)
    if not 1 <= values.get("concurrency", 8) <= CONCURRENCY_MAX:
        raise ConfigError(f"{path}: operators.{op}.concurrency must be 1..{CONCURRENCY_MAX}")
    if not 1 <= values.get("batch_max", 1) <= BATCH_MAX_LIMIT:
        raise ConfigError(f"{path}: operators.{op}.batch_max must be 1..{BATCH_MAX_LIMIT}")
    if values.get("batch_max", 1) > 1 and values["transport"] != "http":
        raise ConfigError(f"{path}: operators.{op}.batch_max is for transport http (a JetStream message is one "
                          "transaction)")
    if not 0 < values.get("timeout_s", 5.0) <= 300:
        raise ConfigError(f"{path}: operators.{op}.timeout_s must be in (0, 300]")
    if not 1 <= values.get("duplicate_window_s", DUPLICATE_WINDOW_S_DEFAULT) <= DUPLICATE_WINDOW_S_MAX:
        raise ConfigError(f"{path}: operators.{op}.duplicate_window_s must be in [1, {DUPLICATE_WINDOW_S_MAX:.0f}]")
    secret = env.get(values["secret_env"]) if secrets else "-"
    if not secret:
        raise ConfigError(f"{path}: operators.{op}: the environment variable {values['secret_env']} "
                          "(the wallet's secret) is not set")
    return OperatorWallet(operator_id=op, **values, secret=secret.encode() if secrets else b"")
