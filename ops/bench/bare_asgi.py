"""The floor of a request on `ledger serve`'s HTTP server: a bare ASGI app on the same uvicorn,
the same protocol class (ops/service/http.py) and event loop, that reads the body and answers a
fixed accepted result, with no key, no parse, no commit, no log line, no metrics.
`python -m ops.bench.live_bench --modes bare,group` offers it the same load in the same run,
so the server's CPU per command has its floor measured beside it (docs/benchmarks.md).

    python -m ops.bench.bare_asgi --port 8099
"""
from __future__ import annotations

import argparse
import sys
from typing import Any

ANSWER = (b'[{"status":"accepted","command_id":"bare","code":null,"message":"","round_id":null,'
          b'"events":[],"original_status":null}]')
_HEADERS = [(b"content-length", str(len(ANSWER)).encode()), (b"content-type", b"application/json")]


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    if scope["type"] != "http":
        return
    more = True
    while more:
        message = await receive()
        if message["type"] == "http.disconnect":
            return
        more = message.get("more_body", False)
    await send({"type": "http.response.start", "status": 200, "headers": _HEADERS})
    await send({"type": "http.response.body", "body": ANSWER})


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    args = p.parse_args()
    import uvicorn

    from ops.service.http import GuardedHttpToolsProtocol

    uvicorn.run(app, host=args.host, port=args.port, log_level="warning", access_log=False,
                http=GuardedHttpToolsProtocol)
    return 0


if __name__ == "__main__":
    sys.exit(main())
