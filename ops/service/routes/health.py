"""The public routes (no key): liveness, readiness and metrics."""
from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Request
from fastapi.responses import Response
from pydantic import BaseModel

from domain.errorcodes import ErrorCode
from ops.service import metrics
from ops.service.health import RETRY_AFTER_S
from ops.service.problems import documented, problem_response
from projections import queries
from projections.runner import Stop
from projections.wallet_outbox import read_status

router = APIRouter(tags=["public"])


class Alive(BaseModel):
    status: Literal["ok"]


class Ready(BaseModel):
    status: Literal["ready"]
    position: int | None
    # Views stopped at an event they could not fold or store: the service is still ready (the
    # stop is the store's, the same behind every instance; docs/service.md), but degraded.
    views_stopped: list[Stop] = []


@router.get("/healthz", summary="the process is alive", response_model=Alive)
def healthz() -> Alive:
    return Alive(status="ok")


@router.get("/readyz", summary="the store answers (503 store_unavailable otherwise); views_stopped lists views stopped "
            "at an event", response_model=Ready,
            responses=documented(ErrorCode.STORE_UNAVAILABLE))
async def readyz(request: Request) -> Ready | Response:
    # The health task's last probe (ops/service/health.py), or one now before the first: never a wait on the pool.
    health = request.app.state.health
    status = health.status if health.status.position is not None or not health.ready else await health.check()
    if not status.ready:
        return problem_response(503, ErrorCode.STORE_UNAVAILABLE, f"the store is unreachable: {status.error}",
                                request=request, headers={"Retry-After": str(RETRY_AFTER_S)})
    # The stopped views as the health task last read them (every VIEWS_INTERVAL_S): never a wait on the store.
    return Ready(status="ready", position=status.position, views_stopped=health.views_stopped)


@router.get("/metrics", summary="Prometheus metrics (all worker processes)", response_class=Response,
            responses={200: {"content": {"text/plain": {"schema": {"type": "string"}}}}})
def metrics_route(request: Request) -> Response:
    try:
        metrics.PROJECTION_LAG.set(queries.projection_lag(request.app.state.reader))
        metrics.set_views(queries.view_states(request.app.state.reader))
        metrics.set_wallet(read_status(request.app.state.reader))
    except Exception:  # the store is down: /readyz says so; metrics still answer
        pass
    return Response(metrics.render(), media_type=metrics.CONTENT_TYPE)
