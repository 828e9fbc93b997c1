from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, TypeAlias

import httpx
from typing_extensions import final

__all__ = ["NotGiven", "NOT_GIVEN", "TimeoutTypes", "Headers", "Query"]


@final
class NotGiven:
    """Marks an argument that was not passed, where None has a meaning (``timeout=None``: no timeout)."""

    def __bool__(self) -> Literal[False]:
        return False

    def __repr__(self) -> str:
        return "NOT_GIVEN"


NOT_GIVEN = NotGiven()

TimeoutTypes: TypeAlias = float | httpx.Timeout | None
"""Seconds for every phase, an ``httpx.Timeout`` for each phase, or None for no timeout."""

Headers: TypeAlias = Mapping[str, str]
Query: TypeAlias = Mapping[str, object]
