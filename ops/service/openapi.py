"""The OpenAPI document (3.1) of the live service, as a client generator reads it: FastAPI's,
with the feed's command union (ledger/commands.py, what `ledger schema` prints) as the
components POST /v1/commands refers to, the audit export's line (`AuditLine`, the schema of
each NDJSON line), every upload's form by a name of its own, and every error answered as a
Problem in application/problem+json only (ops/service/problems.py)."""
from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter

from ledger.commands import COMMAND_ADAPTER
from ops.service.problems import PROBLEM_JSON, codes_markdown
from ops.service.routes.commands import COMMAND_SCHEMA_NAME
from projections.queries import AuditLine

REF_TEMPLATE = "#/components/schemas/{model}"
_FASTAPI_VALIDATION = ("HTTPValidationError", "ValidationError")  # replaced by Problem on every route
# FastAPI names a multipart form `Body_<operation id>`; a client generator makes a class of that name.
UPLOADS = {"/v1/reconcile": "ReconcileUpload", "/v1/audit/verify": "AuditVerifyUpload"}
MULTIPART = "multipart/form-data"

DESCRIPTION = f"""\
Live intake and reads of the casino ledger. Feed format: docs/feed.md; refusal codes: docs/refusals.md.

**Keys.** Every `/v1` route needs `Authorization: Bearer KEY`, a key made with `ledger keys add`, whose
role the route's tags name (studio, backoffice, auditor; an admin key may call every route).
`/healthz`, `/readyz`, `/metrics` and this documentation (`/openapi.json`, `/docs`, `/redoc`) need no key.

**Errors.** Every error is an RFC 9457 problem (`application/problem+json`): `type`, `title`, `status`,
`detail`, a stable `code`, and where it helps `errors`, naming each offending parameter, file or command.
A command the ledger refuses is not an error of the request: POST /v1/commands answers it in its result.

{codes_markdown()}
"""


def complete(schema: dict[str, Any]) -> dict[str, Any]:
    """FastAPI's document, completed in place (see the module doc)."""
    schemas = schema.setdefault("components", {}).setdefault("schemas", {})
    commands = COMMAND_ADAPTER.json_schema(ref_template=REF_TEMPLATE)
    for name, definition in commands.pop("$defs").items():
        if name in schemas and schemas[name] != definition:
            raise ValueError(f"two schemas named {name}: a response model and a feed command")
        schemas[name] = definition
    schemas[COMMAND_SCHEMA_NAME] = commands
    _add(schemas, TypeAdapter(AuditLine).json_schema(ref_template=REF_TEMPLATE), "AuditLine")
    _name_uploads(schema.get("paths", {}), schemas)
    for path in schema.get("paths", {}).values():
        for operation in path.values():
            for status, response in operation.get("responses", {}).items():
                if status[0] in "45" and PROBLEM_JSON in response.get("content", {}):
                    response["content"] = {PROBLEM_JSON: response["content"][PROBLEM_JSON]}
    for name in _FASTAPI_VALIDATION:
        schemas.pop(name, None)
    return schema


def _add(schemas: dict[str, Any], definition: dict[str, Any], name: str) -> None:
    """A component and those it refers to (a response model's of the same name must be the same)."""
    for sub, found in {**definition.pop("$defs", {}), name: definition}.items():
        if sub in schemas and schemas[sub] != found:
            raise ValueError(f"two schemas named {sub}")
        schemas[sub] = found


def _name_uploads(paths: dict[str, Any], schemas: dict[str, Any]) -> None:
    """Each upload's form schema renamed from FastAPI's `Body_...` to UPLOADS' name; an upload
    route without a name there is an error here (a generated client's class would be Body_...)."""
    for path, methods in paths.items():
        for operation in methods.values():
            form = operation.get("requestBody", {}).get("content", {}).get(MULTIPART, {}).get("schema", {})
            ref = form.get("$ref", "")
            if not ref.startswith(REF_TEMPLATE.format(model="Body_")):
                continue
            if path not in UPLOADS:
                raise ValueError(f"{path}: an upload without a schema name (ops/service/openapi.py UPLOADS)")
            schemas[UPLOADS[path]] = schemas.pop(ref.rsplit("/", 1)[1])
            form["$ref"] = REF_TEMPLATE.format(model=UPLOADS[path])
