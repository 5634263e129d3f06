"""From the model's probabilities to a verdict: the same rule in evaluation and in the pipeline hook."""

from __future__ import annotations

from logsense.learn.features import Doc

HEALTHY = "healthy"
UNKNOWN = "unknown"



def decide(probs: dict[str, float] | list[tuple[str, float]], doc: Doc, threshold: float) -> tuple[str, float, str]:
    """(verdict, p, best guess): verdict is a cause, 'healthy' (no root diagnosis) or 'unknown' (unsure).

    A log that reached ready with no error after it is healthy whatever the model says.
    """
    items = sorted(probs.items() if isinstance(probs, dict) else probs, key=lambda cp: (-cp[1], cp[0]))
    if doc.ready and not doc.errors_after_ready:
        return HEALTHY, 1.0, HEALTHY
    top, p = items[0]
    best = next(((c, q) for c, q in items if c not in (HEALTHY, UNKNOWN)), (UNKNOWN, 0.0))
    if top == HEALTHY:
        return HEALTHY, p, best[0]  # the model believes in no failure more than in any one
    if top == UNKNOWN:
        return UNKNOWN, p, best[0]  # like the corpus's failures whose cause is not in the log
    if p >= threshold:
        return top, p, top
    return UNKNOWN, p, top
