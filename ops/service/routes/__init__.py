"""The routes of the live service, one router per area: commands (studio), rounds, players,
reports, audit, and the public ones (health, metrics, the API's own documentation).

Each route declares who may call it (a role dependency, ops/service/auth.py), its response
model (the read service's result types, projections/queries.py) and every error it answers
(ops/service/problems.py). Tags name the roles; an admin key may call every route.
"""
from __future__ import annotations

from fastapi import FastAPI
from fastapi.routing import APIRoute

from ops.service.routes import audit, commands, docs, health, operators, players, reports, rounds

TAGS = [
    {"name": "studio", "description": "Studio keys (and admin): the feed's commands."},
    {"name": "backoffice", "description": "Backoffice keys (and auditor, admin): the reads and reconciliation."},
    {"name": "auditor", "description": "Auditor keys (and admin): the reads, the audit trail's export and its "
                                       "verification."},
    {"name": "public", "description": "No key: liveness, readiness, metrics and this documentation."},
]


def install(api: FastAPI) -> APIRoute:
    """Every route on `api`; returns POST /v1/commands' (the app's fast path answers it)."""
    commands_route = commands.install(api)
    for area in (rounds, players, reports, operators, audit, health):
        api.include_router(area.router)
    docs.install(api)
    return commands_route
