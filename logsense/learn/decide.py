"""From the model's probabilities to a verdict: the same rule in evaluation and in the pipeline hook."""

from __future__ import annotations

from logsense.learn.features import Doc

HEALTHY = "healthy"
UNKNOWN = "unknown"


def decide(probs: dict[str, float] | list[tuple[str, float]], doc: Doc, threshold: float,
           failed: bool | None = None) -> tuple[str, float, str]:
    """(verdict, p, best guess): verdict is a cause, 'healthy' (no root diagnosis) or 'unknown' (unsure).

    `failed`: the pipeline already holds a failure it cannot name (an unmatched traceback); None
    guesses it from the document. A log that reached ready with no error after it is healthy
    whatever the model says; when the model is unsure it says unknown only for a log that
    failed, or that it leans to a failure for (half the threshold); otherwise it invents nothing.
    """
    items = sorted(probs.items() if isinstance(probs, dict) else probs, key=lambda cp: (-cp[1], cp[0]))
    if failed is None:
        failed = doc.tracebacks > 0 and (not doc.ready or doc.errors_after_ready > 0)
    if doc.ready and not doc.errors_after_ready and not failed:
        return HEALTHY, 1.0, HEALTHY
    top, p = items[0]
    best, best_p = next(((c, q) for c, q in items if c not in (HEALTHY, UNKNOWN)), (UNKNOWN, 0.0))
    if top == HEALTHY:
        if failed and p < threshold:
            return UNKNOWN, best_p, best
        return HEALTHY, p, best  # the model believes in no failure more than in any one
    if top != UNKNOWN and p >= threshold:
        return top, p, top
    if failed or (doc.failure_signs and (best_p >= threshold / 2 or (top == UNKNOWN and p >= threshold))):
        return UNKNOWN, best_p, best
    return HEALTHY, dict(items).get(HEALTHY, 0.0), best
