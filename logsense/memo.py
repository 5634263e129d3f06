"""Bounded memos of pure functions of a line's text: a log repeats its lines, each rank printing each one.

A memo is exact by construction (the function reads nothing but the text), so a stage that
memoises gives the same report as one that does not (tests/test_memo.py checks the corpus).
Memory stays bounded: at most ENTRIES texts a memo, none longer than LONGEST characters.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import TypeVar

V = TypeVar("V")

ENTRIES = 1024
LONGEST = 2048  # a longer text (the server_args dump) is computed afresh: kept, it would weigh more than it saves
ENABLED = True  # False: every call computes afresh (the tests compare both)


def text_memo(fn: Callable[[str], V], entries: int = ENTRIES) -> Callable[[str], V]:
    """`fn`, remembered for the last `entries` texts it saw; a result is shared by every call with its text.

    So a result is changed only to fill in more of what the text alone decides (the timeline's
    record of marker searches per text); anything else must treat it as read-only.
    """
    cached = lru_cache(maxsize=entries)(fn)

    def call(text: str) -> V:
        return cached(text) if len(text) <= LONGEST and ENABLED else fn(text)

    return call
