"""Matching a refusal message against its code's templates (domain/refusals.py)."""
from __future__ import annotations

import re
import string

from domain.refusals import RefusalCode


def template_pattern(template: str) -> re.Pattern[str]:
    """A regex that matches exactly the messages `template` can make (a field: any text)."""
    parts = []
    for literal, field, _spec, _conversion in string.Formatter().parse(template):
        parts.append(re.escape(literal))
        if field is not None:
            parts.append("(.+?)")
    return re.compile("".join(parts), re.S)


def matching_variants(code: RefusalCode, message: str) -> list[str]:
    """The names of `code`'s templates ("" the main one) that `message` is made from."""
    return [v for v, t in code.templates.items() if template_pattern(t).fullmatch(message)]
