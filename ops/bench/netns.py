"""Hosts on one machine: each a network namespace of its own, linked to the root namespace
(where PostgreSQL and nats-server run) by a veth pair on a bridge. A trial can kill a host's
processes, cut its link (`ip link set ... down`), freeze it, and add one (issue 33 item 5).
Needs root and iproute2; anything missing raises, never skips.

The services listen on 127.0.0.1, which a namespace cannot reach; rather than reconfigure and
restart them (other users of the machine keep 127.0.0.1), a forwarder process listens on the
bridge's address and relays each port to its service (`python -m ops.bench.netns forward`).
What a cut link does to a host is then what a real cut does: its packets go nowhere; the
server side (the forwarder's connections) stays open until the host's side gives up.

    with Lab({5432: ("127.0.0.1", 5432), 4222: ("127.0.0.1", 4222)}) as lab:
        host = lab.add_host()
        proc = host.spawn(["ledger", "consume", "--lease", "--db", f"postgresql://postgres@{lab.address}:5432/x"])
        host.cut(); host.mend()
"""
from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, Any

ROOT = Path(__file__).resolve().parents[2]
READY_S = 15.0


class LabError(RuntimeError):
    """The namespaces could not be set up (not root, no iproute2, no veth support)."""


def ip(*args: str) -> None:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise LabError(f"ip {' '.join(args)}: {done.stderr.strip() or done.returncode}")


class Host:
    """One namespace with its link; processes spawned in it."""

    def __init__(self, lab: Lab, index: int) -> None:
        self.lab, self.index = lab, index
        self.name = f"{lab.tag}h{index}"
        self.outer, self.inner = f"{lab.tag}r{index}", f"{lab.tag}n{index}"
        self.address = f"{lab.subnet}.{index + 2}"
        self.procs: list[subprocess.Popen[bytes]] = []

    def make(self) -> None:
        ip("netns", "add", self.name)
        ip("link", "add", self.outer, "type", "veth", "peer", "name", self.inner)
        ip("link", "set", self.outer, "master", self.lab.bridge, "up")
        ip("link", "set", self.inner, "netns", self.name)
        ip("-n", self.name, "addr", "add", f"{self.address}/24", "dev", self.inner)
        ip("-n", self.name, "link", "set", self.inner, "up")
        ip("-n", self.name, "link", "set", "lo", "up")

    def spawn(self, argv: Sequence[str], env: Mapping[str, str] | None = None, stdout: IO[Any] | int | None = None,
              stderr: IO[Any] | int | None = None) -> subprocess.Popen[bytes]:
        """`argv` in this host's namespace (`ip netns exec` execs it: the pid is the program's)."""
        proc = subprocess.Popen(["ip", "netns", "exec", self.name, *argv], cwd=ROOT,
                                env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
                                stdout=stdout, stderr=stderr)
        self.procs.append(proc)
        return proc

    def cut(self) -> None:
        ip("link", "set", self.outer, "down")

    def mend(self) -> None:
        ip("link", "set", self.outer, "up")

    def signal_all(self, sig: int) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                os.kill(proc.pid, sig)

    def remove(self) -> None:
        self.signal_all(signal.SIGCONT)
        self.signal_all(signal.SIGKILL)
        for proc in self.procs:
            proc.wait()
        subprocess.run(["ip", "link", "del", self.outer], capture_output=True, check=False)
        subprocess.run(["ip", "netns", "del", self.name], capture_output=True, check=False)


class Lab:
    """A bridge in the root namespace at `<subnet>.1`, a forwarder there, and hosts."""

    def __init__(self, ports: Mapping[int, tuple[str, int]]) -> None:
        self.ports = dict(ports)
        tag = uuid.uuid4().hex[:5]
        self.tag = f"cl{tag}"  # names stay within 15 characters: cl + 5 + r/n/h + index
        n = int(tag, 16)
        self.subnet = f"10.{200 + n % 50}.{n // 50 % 250}"
        self.address = f"{self.subnet}.1"
        self.bridge = f"{self.tag}b"
        self.hosts: list[Host] = []
        self.forwarder: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Lab:
        try:
            ip("link", "add", self.bridge, "type", "bridge")
            ip("addr", "add", f"{self.address}/24", "dev", self.bridge)
            ip("link", "set", self.bridge, "up")
            specs = [f"{port}={host}:{to}" for port, (host, to) in self.ports.items()]
            self.forwarder = subprocess.Popen([sys.executable, "-m", "ops.bench.netns", "forward", self.address, *specs],
                                              cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
            self._wait_listening()
        except BaseException:
            self.close()
            raise
        return self

    def _wait_listening(self) -> None:
        deadline = time.monotonic() + READY_S
        for port in self.ports:
            while True:
                try:
                    socket.create_connection((self.address, port), timeout=1).close()
                    break
                except OSError as exc:
                    if time.monotonic() > deadline or (self.forwarder and self.forwarder.poll() is not None):
                        raise LabError(f"the forwarder does not listen on {self.address}:{port}: {exc}") from None
                    time.sleep(0.05)

    def add_host(self) -> Host:
        host = Host(self, len(self.hosts))
        self.hosts.append(host)
        host.make()
        return host

    def close(self) -> None:
        for host in self.hosts:
            host.remove()
        if self.forwarder is not None and self.forwarder.poll() is None:
            self.forwarder.kill()
            self.forwarder.wait()
        subprocess.run(["ip", "link", "del", self.bridge], capture_output=True, check=False)

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


# ------------------------------------------------------------------ the forwarder
async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(1 << 16):
            writer.write(data)
            await writer.drain()
    except OSError:
        pass
    finally:
        writer.close()


async def _forward(listen: str, specs: Sequence[str]) -> None:
    servers = []
    for spec in specs:
        port, target = spec.split("=")
        host, to = target.rsplit(":", 1)

        async def relay(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, host: str = host,
                        to: int = int(to)) -> None:
            try:
                up_reader, up_writer = await asyncio.open_connection(host, to)
            except OSError:
                writer.close()
                return
            await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))

        servers.append(await asyncio.start_server(relay, listen, int(port), reuse_address=True))
    await asyncio.gather(*(s.serve_forever() for s in servers))


def main(argv: Sequence[str]) -> int:
    if len(argv) < 3 or argv[0] != "forward":
        print("usage: python -m ops.bench.netns forward LISTEN_ADDRESS PORT=HOST:PORT ...", file=sys.stderr)
        return 2
    asyncio.run(_forward(argv[1], argv[2:]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
