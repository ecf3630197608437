"""The operators' wallets (docs/wallet.md, "Configuration"): a TOML file, one table per
operator id. The secret is read from the environment variable the file names, and is kept
out of every repr, message and log."""
from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from typing import Any

CONCURRENCY_MAX = 64


class ConfigError(Exception):
    """The configuration cannot be used (one line naming why; never a secret's value)."""


@dataclass(frozen=True)
class OperatorWallet:
    operator_id: str
    url: str
    secret_env: str
    debit_notices: bool = True
    concurrency: int = 8
    timeout_s: float = 5.0
    backoff_s: float = 0.2  # the first retry's wait, doubled each time up to backoff_max_s
    backoff_max_s: float = 30.0
    secret: bytes = field(default=b"", repr=False, compare=False)


_FIELDS = {"url": str, "secret_env": str, "debit_notices": bool, "concurrency": int, "timeout_s": float,
           "backoff_s": float, "backoff_max_s": float}


def load(path: str, env: dict[str, str] | None = None) -> dict[str, OperatorWallet]:
    """Every operator's wallet in the file at `path`, with its secret from the environment."""
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
    return {op: _operator(path, op, table, os.environ if env is None else env) for op, table in operators.items()}


def _operator(path: str, op: str, table: Any, env: Any) -> OperatorWallet:
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
    for key in ("url", "secret_env"):
        if key not in values:
            raise ConfigError(f"{path}: operators.{op} has no {key}")
    if not values["url"].startswith(("http://", "https://")):
        raise ConfigError(f"{path}: operators.{op}.url must start with http:// or https://")
    if not 1 <= values.get("concurrency", 8) <= CONCURRENCY_MAX:
        raise ConfigError(f"{path}: operators.{op}.concurrency must be 1..{CONCURRENCY_MAX}")
    if not 0 < values.get("timeout_s", 5.0) <= 300:
        raise ConfigError(f"{path}: operators.{op}.timeout_s must be in (0, 300]")
    secret = env.get(values["secret_env"])
    if not secret:
        raise ConfigError(f"{path}: operators.{op}: the environment variable {values['secret_env']} "
                          "(the wallet's secret) is not set")
    return OperatorWallet(op, **values, secret=secret.encode())
