"""The event loop's own work a request of POST /v1/commands in `ledger serve`'s app (the
fast path, ops/service/app.py), with the writer answering at once: the GroupCommitter and its
hand-offs are real, only its write is replaced by a fixed accepted result. The app runs on
uvicorn with uvloop and ops/service/http.py's protocol, with PROMETHEUS_MULTIPROC_DIR set and
the log line written to /dev/null as under `ledger serve` in live_bench; a client process
sends `--requests` one-command requests (after `--warmup`), one at a time on each of
`--conns` keep-alive connections. Prints JSON: the loop thread's CPU a request (all of
it, and user / system from /proc), and with `--profile` cProfile's function calls a
request (deterministic: the figure to compare two checkouts by) and the top functions on
standard error. `--bare`: ops/bench/bare_asgi.py's app instead, the floor.

    python -m ops.bench.loop_profile --requests 3000 --conns 1 --profile
    python -m ops.bench.loop_profile --requests 8000 --conns 1 --bare

Another checkout is measured by running this file with that checkout's python from its
directory (it imports that checkout's ops/): `(cd ../base && .venv/bin/python
/path/to/ops/bench/loop_profile.py --requests 3000 --conns 1 --profile)`.
"""
from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import json
import os
import pstats
import sys
import tempfile
import time
from typing import Any

CLIENT = r'''
import asyncio, sys, json
sys.path.insert(0, sys.argv[1])
from ops.bench.live_bench import Conn
port, key, n, conns = int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
async def main() -> None:
    cs = [Conn("127.0.0.1", port, f"Authorization: Bearer {key}\r\n") for _ in range(conns)]
    for c in cs: await c.connect()
    left = [n]
    async def run(c, j):
        i = 0
        while left[0] > 0:
            left[0] -= 1
            i += 1
            body = json.dumps({"type": "open_round", "table_id": f"t{j}", "command_id": f"c{j}-{i}", "round_id": f"r{j}-{i}"}).encode()
            status, data = await c.request("POST", "/v1/commands", body)
            assert status == 200, (status, data)
    await asyncio.gather(*(run(c, j) for j, c in enumerate(cs)))
asyncio.run(main())
'''


def _ticks() -> tuple[int, int]:
    with open(f"/proc/self/task/{os.getpid()}/stat") as f:
        fields = f.read().rpartition(")")[2].split()
    return int(fields[11]), int(fields[12])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--requests", type=int, default=3000)
    p.add_argument("--warmup", type=int, default=1000)
    p.add_argument("--conns", type=int, default=1)
    p.add_argument("--profile", action="store_true")
    p.add_argument("--bare", action="store_true")
    p.add_argument("--inline", action="store_true",
                   help="the committer's results answered on the loop itself (no writer thread, no hand-off)")
    p.add_argument("--top", type=int, default=40)
    args = p.parse_args()
    tmp = tempfile.mkdtemp(prefix="loopprof-")
    url = f"sqlite:///{tmp}/l.db"
    os.environ["LEDGER_DB"] = url
    os.environ["LEDGER_SERVE_GATHER_MS"] = "0"
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = os.path.join(tmp, "metrics")  # as `ledger serve` sets it
    os.makedirs(os.environ["PROMETHEUS_MULTIPROC_DIR"])
    import uvicorn
    import uvloop

    from ledger.batching import Result
    from ledger.keys import key_store
    from ledger.store import open_app
    from ops.service.http import GuardedHttpToolsProtocol

    app0 = open_app(url)
    key = key_store(app0).add("studio", name="prof")[0]
    app0.close()
    if args.bare:
        from ops.bench.bare_asgi import app as inner
    else:
        from ops.service.app import app_from_env
        inner = app_from_env()
    sys.stderr = open(os.devnull, "w")  # the request log line, as live_bench's server writes it
    total = args.warmup + args.requests
    seen = [0]
    prof = cProfile.Profile()
    out: dict[str, Any] = {}

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            seen[0] += 1
            if seen[0] == args.warmup + 1:
                out["t0"], out["w0"], out["k0"] = time.thread_time(), time.perf_counter(), _ticks()
                if args.profile:
                    prof.enable()
            elif seen[0] == total + 1:
                if args.profile:
                    prof.disable()
                out["t1"], out["w1"], out["k1"] = time.thread_time(), time.perf_counter(), _ticks()
        await inner(scope, receive, send)

    from ops.bench.live_bench import free_port

    port = free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", access_log=False,
                            http=GuardedHttpToolsProtocol, loop="uvloop")
    server = uvicorn.Server(config)

    async def run() -> None:
        task = asyncio.create_task(server.serve())
        while not server.started:
            await asyncio.sleep(0.05)
        if not args.bare:
            committer = inner.state.committer  # type: ignore[attr-defined]
            committer.write = lambda raws: [Result("accepted", "x", None, "", "r", ("RoundOpened",)) for _ in raws]
            if args.inline:
                async def results(raws: Any, timing: Any = None, urgent: bool = False) -> Any:
                    return committer.write(raws)

                committer.results = results
        client = await asyncio.create_subprocess_exec(sys.executable, "-c", CLIENT, os.getcwd(), str(port), key,
                                                      str(total + 1), str(args.conns))
        await client.wait()
        server.should_exit = True
        await task

    uvloop.run(run())
    n = args.requests
    tick = os.sysconf("SC_CLK_TCK")
    res: dict[str, Any] = {"user_us": round((out["k1"][0] - out["k0"][0]) / tick / n * 1e6, 1),
           "sys_us": round((out["k1"][1] - out["k0"][1]) / tick / n * 1e6, 1),
           "loop_cpu_us_per_request": round((out["t1"] - out["t0"]) / n * 1e6, 1),
           "wall_us_per_request": round((out["w1"] - out["w0"]) / n * 1e6, 1)}
    if args.profile:
        s = io.StringIO()
        st = pstats.Stats(prof, stream=s)
        res["calls_per_request"] = round(st.total_calls / n, 2)  # type: ignore[attr-defined]
        res["profiled_us_per_request"] = round(st.total_tt / n * 1e6, 1)  # type: ignore[attr-defined]
        st.sort_stats("tottime").print_stats(args.top)
        print(s.getvalue(), file=sys.__stderr__)
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
