"""Operators (admin): every operator's configuration, one operator's versions."""
from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path

from domain.errorcodes import ErrorCode
from domain.operators import OPERATOR_ID_PATTERN
from ops.service.auth import role
from ops.service.problems import ServiceError, documented
from ops.service.routes.deps import KEYED, READ_TAGS, READS, declared_only
from projections.operators import OperatorInfo, operator_info, operator_list

# Admin only: which casinos the studio deals to is the studio's own business (a back-office
# key of one operator must not learn the others'; docs/operators.md).
router = APIRouter(prefix="/v1", tags=READ_TAGS, dependencies=[Depends(role("admin")), Depends(declared_only)])
ERRORS = documented(*KEYED, ErrorCode.REQUEST_INVALID)


@router.get("/operators", summary="every operator with its current configuration (and the default operator)",
            response_model=list[OperatorInfo], responses=ERRORS)
def get_operators(reads: READS) -> list[OperatorInfo]:
    with reads.views() as db:
        return operator_list(db)


@router.get("/operators/{operator_id}", summary="one operator's configuration, every version",
            response_model=OperatorInfo, responses=documented(*KEYED, ErrorCode.REQUEST_INVALID, ErrorCode.NOT_FOUND))
def get_operator(reads: READS, operator_id: Annotated[str, Path(max_length=64, pattern=OPERATOR_ID_PATTERN)],
                 ) -> OperatorInfo:
    with reads.views() as db:
        found = operator_info(db, operator_id)
    if found is None:
        raise ServiceError(ErrorCode.NOT_FOUND, f"operator {operator_id} is not configured")
    return found
