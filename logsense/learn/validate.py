"""A classifier model file checked field by field before anything trusts it.

A model is data that `analyze` runs on every unmatched failure: a wrong shape would crash deep
in a dot product, a NaN would print `p=nan`, a threshold of -1 would give every log a cause.
`check_model` names the first field at fault, so a malformed file is an error the operator can
read, never an internal error or a silent wrong answer.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from logsense.errors import ModelError

MAX_TERMS = 2_000_000
MAX_CLASSES = 1000
MAX_INCIDENTS = 100_000
MAX_ABS = 1e6  # no trained weight comes near; bounded weights keep every score and probability finite


class _Bad(Exception):
    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"malformed classifier model, field `{field}`: {reason}")


class _Other(_Bad):
    """Not a model of this logsense: another format, version or feature set."""

    def __init__(self, reason: str) -> None:
        Exception.__init__(self, reason)


def check_model(data: Any, analyzers: dict[str, Callable], formats: tuple[str, int], feature_version: int,
                source: str) -> None:
    """Raise ModelError naming the first field of `data` that a predicting LinearModel cannot trust."""
    try:
        _check(data, analyzers, formats, feature_version)
    except _Bad as e:
        raise ModelError(f"{source}: {e}") from None


def _check(data: Any, analyzers: dict[str, Callable], formats: tuple[str, int], feature_version: int) -> None:
    fmt, version = formats
    if not isinstance(data, dict):
        raise _Bad("(top level)", "not a JSON object")
    if data.get("format") != fmt:
        raise _Other(f"not a logsense classifier model (format {str(data.get('format'))[:60]!r})")
    if data.get("format_version") != version:
        raise _Other(f"classifier model format {str(data.get('format_version'))[:20]} (this logsense reads "
                         f"{version}): rebuild it with `logsense train`")
    meta = _typed(data, "meta", dict)
    if meta.get("feature_version") != feature_version:
        raise _Other(f"classifier model built from features version {str(meta.get('feature_version'))[:20]} "
                         f"(this logsense makes {feature_version}): rebuild it with `logsense train`")
    classes = _typed(data, "classes", list)
    if not 2 <= len(classes) <= MAX_CLASSES:
        raise _Bad("classes", f"{len(classes)} classes (2 to {MAX_CLASSES} expected)")
    for i, c in enumerate(classes):
        if not isinstance(c, str) or not c:
            raise _Bad(f"classes[{i}]", "not a non-empty string")
    if len(set(classes)) != len(classes):
        raise _Bad("classes", "a class is listed twice")
    k = len(classes)
    blocks = _typed(data, "blocks", list)
    if not blocks:
        raise _Bad("blocks", "empty")
    n_terms = 0
    word_terms = None
    for b, spec in enumerate(blocks):
        where = f"blocks[{b}]"
        if not isinstance(spec, dict):
            raise _Bad(where, "not an object")
        if spec.get("analyzer") not in analyzers:
            raise _Bad(f"{where}.analyzer", f"one of {', '.join(sorted(analyzers))} expected")
        terms = _typed(spec, "terms", list, where)
        if any(not isinstance(t, str) for t in terms):
            raise _Bad(f"{where}.terms", "a term that is not a string")
        idf = _typed(spec, "idf", list, where)
        if len(idf) != len(terms):
            raise _Bad(f"{where}.idf", f"{len(idf)} values for {len(terms)} terms")
        _finite_list(idf, f"{where}.idf")
        if "weight" in spec:
            _finite(spec["weight"], f"{where}.weight")
        if "sublinear_tf" in spec and not isinstance(spec["sublinear_tf"], bool):
            raise _Bad(f"{where}.sublinear_tf", "true or false expected")
        if spec["analyzer"] == "word" and word_terms is None:
            word_terms = len(terms)
        n_terms += len(terms)
    if n_terms > MAX_TERMS:
        raise _Bad("blocks", f"{n_terms} terms (at most {MAX_TERMS})")
    coef = _typed(data, "coef", list)
    if len(coef) != n_terms:
        raise _Bad("coef", f"{len(coef)} rows for {n_terms} terms")
    for j, row in enumerate(coef):
        if not isinstance(row, list) or len(row) != k:
            raise _Bad(f"coef[{j}]", f"a list of {k} numbers (one per class) expected")
        _finite_list(row, f"coef[{j}]")
    intercept = _typed(data, "intercept", list)
    if len(intercept) != k:
        raise _Bad("intercept", f"{len(intercept)} values for {k} classes")
    _finite_list(intercept, "intercept")
    t = _finite(data.get("temperature"), "temperature")
    if t <= 0:
        raise _Bad("temperature", f"{t} (must be above 0)")
    th = _finite(data.get("threshold"), "threshold")
    if not 0 < th <= 1:
        raise _Bad("threshold", f"{th} (must be in (0, 1])")
    _check_held_out(data.get("held_out"), classes)
    _check_incidents(data.get("incidents", []), set(classes), word_terms or 0)


def _check_held_out(held: Any, classes: list[str]) -> None:
    if not isinstance(held, dict):
        raise _Bad("held_out", "missing or not an object (a table of held-out precision per cause)")
    for cause, rec in held.items():
        where = f"held_out.{cause}"
        if cause not in classes:
            raise _Bad(where, "not one of the model's classes")
        if not isinstance(rec, dict):
            raise _Bad(where, "not an object")
        for key in ("right", "said", "support"):
            v = rec.get(key)
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise _Bad(f"{where}.{key}", "a count (an integer >= 0) expected")
        if rec["right"] > rec["said"]:
            raise _Bad(f"{where}.right", f"{rec['right']} right of {rec['said']} said")


def _check_incidents(incidents: Any, classes: set[str], word_terms: int) -> None:
    if not isinstance(incidents, list):
        raise _Bad("incidents", "a list expected")
    if len(incidents) > MAX_INCIDENTS:
        raise _Bad("incidents", f"{len(incidents)} incidents (at most {MAX_INCIDENTS})")
    for i, inc in enumerate(incidents):
        where = f"incidents[{i}]"
        if not isinstance(inc, dict):
            raise _Bad(where, "not an object")
        if not isinstance(inc.get("name"), str):
            raise _Bad(f"{where}.name", "a string expected")
        if inc.get("cause") not in classes:
            raise _Bad(f"{where}.cause", "not one of the model's classes")
        if "norm" in inc and _finite(inc["norm"], f"{where}.norm") < 0:
            raise _Bad(f"{where}.norm", "negative")
        terms = _typed(inc, "terms", list, where)
        for t, pair in enumerate(terms):
            if (not isinstance(pair, list) or len(pair) != 2 or not isinstance(pair[0], int)
                    or isinstance(pair[0], bool) or not 0 <= pair[0] < word_terms):
                raise _Bad(f"{where}.terms[{t}]", f"[term index below {word_terms}, weight] expected")
            _finite(pair[1], f"{where}.terms[{t}][1]")


def _typed(obj: dict, key: str, kind: type, where: str = "") -> Any:
    name = f"{where}.{key}" if where else key
    if key not in obj:
        raise _Bad(name, "missing")
    v = obj[key]
    if not isinstance(v, kind):
        raise _Bad(name, f"{kind.__name__ if kind is not dict else 'object'} expected, found {type(v).__name__}")
    return v


def _finite(v: Any, name: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise _Bad(name, f"a number expected, found {type(v).__name__}")
    if not math.isfinite(v):
        raise _Bad(name, f"{v} is not a finite number")
    if abs(v) > MAX_ABS:
        raise _Bad(name, f"{v} is out of range (at most {MAX_ABS:g} in size)")
    return float(v)


def _finite_list(values: list, name: str) -> None:
    try:
        total = math.fsum(map(abs, values))  # fast in the usual case; on doubt, look for the culprit
        ok = total <= MAX_ABS  # False for a NaN or an infinity too
    except (TypeError, OverflowError, ValueError):
        ok = False
    if not ok:
        for i, v in enumerate(values):
            _finite(v, f"{name}[{i}]")
