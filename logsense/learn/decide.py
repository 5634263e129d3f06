"""From the model's probabilities to a verdict: the same rule in evaluation and in the pipeline hook."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from logsense.model import HEALTHY, UNKNOWN


def best_failure(probs: Iterable[tuple[str, float]]) -> tuple[str, float]:
    """The first (most likely, given in that order) cause that is neither 'healthy' nor 'unknown'."""
    return next(((c, q) for c, q in probs if c not in (HEALTHY, UNKNOWN)), (UNKNOWN, 0.0))


def decide(probs: dict[str, float] | Sequence[tuple[str, float]], threshold: float,
           failed: bool) -> tuple[str, float, str]:
    """(verdict, p, best guess): a cause, 'healthy' (no root: the log did not fail) or 'unknown' (failed, unnamed).

    `failed` is the log's verdict, decided by its fatal signals, not by the model: the model names
    the cause of a failed log when it is sure enough (p at least the threshold), and never turns
    a log into a failure, nor a failure into a healthy startup.
    """
    items = sorted(probs.items() if isinstance(probs, dict) else probs, key=lambda cp: (-cp[1], cp[0]))
    best, best_p = best_failure(items)
    if not failed:
        return HEALTHY, dict(items).get(HEALTHY, 0.0), best
    top, p = items[0]
    if top not in (HEALTHY, UNKNOWN) and p >= threshold:
        return top, p, top
    return UNKNOWN, best_p, best
