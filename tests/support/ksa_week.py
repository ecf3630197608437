"""A simulated week for the KSA export: seven studio days (a different seed each, the
tables renamed per day so their rounds and shoes are their own), with the simulator's
voids and settlement reversals; on the fourth day one table, configured in Asia/Kolkata,
whose studio times are given at +05:30. And the keys: a signer's and recipients' RSA keys
and self-signed certificates, made here (no private key is ever committed)."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from functools import cache
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID

from ledger.store import open_app
from ops.sim.simulator import simulate

DAYS = 7
ZONED_DAY, ZONED_TABLE = 3, "d3-bacc-1"
KOLKATA = timezone(timedelta(hours=5, minutes=30))


def _day(k: int, tables: int, rounds: int) -> list[bytes]:
    lines = [json.loads(b) for b in simulate(tables=tables, rounds=rounds, seed=20 + k, fault_rate=500)]
    ids = sorted({c["table_id"] for c in lines}, key=len, reverse=True)
    pattern = re.compile(r"(?<![\w-])(" + "|".join(map(re.escape, ids)) + r")(?!\d)")
    out: list[bytes] = []
    for c in lines:
        c = json.loads(pattern.sub(lambda m: f"d{k}-{m.group(1)}", json.dumps(c)))
        at = datetime.fromisoformat(c["studio_time"]) + timedelta(days=k)
        zone = KOLKATA if c["table_id"] == ZONED_TABLE else UTC
        c["studio_time"] = at.astimezone(zone).isoformat(timespec="milliseconds")
        out.append(json.dumps(c).encode())
    return out


def configure_zoned(first_time: str) -> bytes:
    return json.dumps({"type": "configure_table", "command_id": "cfg-zoned", "table_id": ZONED_TABLE,
                       "studio_time": first_time, "game": "baccarat", "ruleset_id": "baccarat/live-8d",
                       "ruleset_version": 1, "currency": "EUR", "timezone": "Asia/Kolkata"}).encode()


def week_feed(tables: int = 5, rounds: int = 2) -> list[bytes]:
    """The week's feed: a fresh list of the lines simulated once per process (test_ksa and
    test_ksa_operators share it)."""
    return list(_week(tables, rounds))


@cache
def _week(tables: int, rounds: int) -> tuple[bytes, ...]:
    feed: list[bytes] = []
    for k in range(DAYS):
        day = _day(k, tables, rounds)
        if k == ZONED_DAY:
            first = next(json.loads(b)["studio_time"] for b in day if json.loads(b)["table_id"] == ZONED_TABLE)
            feed.append(configure_zoned(first))
        feed += day
    return tuple(feed)


@dataclass(frozen=True)
class Party:
    key: Path
    cert: Path

    def private(self) -> rsa.RSAPrivateKey:
        k = serialization.load_pem_private_key(self.key.read_bytes(), password=None)
        assert isinstance(k, rsa.RSAPrivateKey)
        return k


def make_party(directory: Path, name: str) -> Party:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.now(UTC)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - timedelta(days=1))
            .not_valid_after(now + timedelta(days=30)).sign(key, hashes.SHA256()))
    party = Party(directory / f"{name}.key.pem", directory / f"{name}.pem")
    party.key.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                            serialization.NoEncryption()))
    party.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return party


PARTIES = ("operator", "ksa", "auditor")  # the signer and the two recipients every export names


def make_parties(directory: Path) -> dict[str, Party]:
    return {name: make_party(directory, name) for name in PARTIES}


def ingested(store_url: str, feed: list[bytes]) -> str:
    """The store at `store_url` with `feed` ingested (its URL, for a fixture to return)."""
    app = open_app(store_url)
    app.ingest(feed)
    app.close()
    return store_url
