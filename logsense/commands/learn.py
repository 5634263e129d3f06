"""`logsense train` and `logsense eval`: fit the classifier on a labelled corpus, and say how good it is.

Both evaluate the same way: GroupKFold over incident groups (an incident and its constructed
variants are one group), the model against two plain baselines (the majority cause, and the
keyword nearest neighbour), recorded and constructed logs reported apart.
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path
from typing import Any

from rich.text import Text

from logsense.commands.common import console
from logsense.errors import ExitCode, UsageError

METHODS = ("model", "nearest-neighbour", "majority")


def _load(corpus: list[str]):
    from logsense.learn import corpus as corpus_mod

    incidents = corpus_mod.find(corpus)
    if not incidents:
        raise UsageError(f"{', '.join(corpus)}: no labelled logs (X.log with X.label.yaml beside it)")
    docs = corpus_mod.documents(incidents, jobs=corpus_mod.default_jobs())
    return corpus_mod, incidents, docs


def train(corpus: list[str], output: str, quiet: bool = False) -> int:
    warnings.filterwarnings("ignore", module="sklearn")
    from logsense.learn import train as train_mod
    from logsense.learn.hook import MODEL_FILE

    corpus_mod, incidents, docs = _load(corpus)
    try:
        data, ev = train_mod.build(incidents, docs, corpus_hash=corpus_mod.corpus_hash(incidents))
    except ValueError as e:
        raise UsageError(f"cannot train: {e}") from None
    out = Path(output)
    path = out if out.suffix == ".json" else out / MODEL_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dumps_model(data), encoding="utf-8")
    con = console()
    if not quiet:
        if ev is not None:
            render(ev, con, incidents, brief=True)
        else:
            con.print(Text("one incident group only: no cross-validation", style="yellow"))
    n_feat = sum(len(b["terms"]) for b in data["blocks"])
    con.print(Text(f"wrote {path}: {len(data['classes'])} causes, {n_feat} features, "
                   f"{len(incidents)} logs, temperature {data['temperature']}", style="bold"))
    return int(ExitCode.OK)


def dumps_model(data: dict[str, Any]) -> str:
    """Stable text for a model: the same corpus gives the same bytes."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), sort_keys=False) + "\n"


def evaluate(corpus: list[str], fmt: str = "text") -> int:
    if fmt not in ("text", "json"):
        raise UsageError(f"--format {fmt!r}: choose from text, json")
    warnings.filterwarnings("ignore", module="sklearn")
    from logsense.learn import train as train_mod

    corpus_mod, incidents, docs = _load(corpus)
    groups = corpus_mod.groups(incidents, docs)
    if len(set(groups)) < 2:
        raise UsageError("cannot evaluate: the corpus has incidents from one source only")
    ev = train_mod.cross_validate([d.text for d in docs], docs, [i.cause for i in incidents], groups,
                                  [i.origin for i in incidents], [i.name for i in incidents], train_mod.Config())
    if fmt == "json":
        print(json.dumps(evaluation_dict(ev), indent=2))
    else:
        render(ev, console(), incidents)
    sys.stdout.flush()
    return int(ExitCode.OK)


def evaluation_dict(ev) -> dict[str, Any]:
    from logsense.learn.train import confusion

    out: dict[str, Any] = {
        "logs": len(ev.y),
        "groups": len(set(ev.groups)),
        "splits": ev.n_splits,
        "temperature": ev.temperature,
        "calibration": ev.calibration,
        "methods": {},
    }
    for m in METHODS:
        out["methods"][m] = {
            "all": ev.metrics(m),
            "recorded": ev.metrics(m, "recorded"),
            "constructed": ev.metrics(m, "constructed"),
        }
    out["methods"]["model"]["all_no_threshold"] = ev.metrics("model", thresholded=False)
    out["threshold_curve"] = ev.threshold_curve()
    labels, matrix = confusion(ev.y, ev.preds["model"])
    out["confusion"] = {"labels": labels, "matrix": matrix}
    out["held_out"] = [{"log": n, "cause": y, "verdict": v, "p": round(p, 3), "origin": o, "group": g}
                       for n, y, v, p, o, g in zip(ev.names, ev.y, ev.preds["model"], ev.probs, ev.origin,
                                                   ev.groups, strict=True)]
    return out


def _f(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def render(ev, con, incidents, brief: bool = False) -> None:
    from collections import Counter

    from logsense.learn.train import confusion

    origins = Counter(ev.origin)
    _line(con,
        f"{len(ev.y)} logs ({', '.join(f'{k} {v}' for k, v in sorted(origins.items()))}), "
        f"{len(set(ev.y))} causes, {len(set(ev.groups))} incident groups; {ev.n_splits}-fold GroupKFold "
        "(no group on both sides)", "bold")
    _line(con, "held out          subset        n  top-1  macro-F1  answered  right|answered", "bold")
    rows = [(m, m) for m in METHODS] + [("model, argmax", None)]
    for label, m in rows:
        for subset in (None, "recorded", "constructed"):
            s = ev.metrics(m or "model", subset, thresholded=m is not None)
            if not s.get("n") or (m is None and subset):
                continue
            _line(con, f"{label:<18}{subset or 'all':<12}{s['n']:>4}  {s['top1']:5.2f}  {s['macro_f1']:8.2f}  "
                       f"{s['coverage']:8.2f}  {s['precision_when_answered']:14.2f}")
    c = ev.calibration
    _line(con, f"calibration (held out): temperature {ev.temperature}; expected calibration error "
                   f"{c['ece_raw']:.3f} -> {c['ece_calibrated']:.3f}, log loss {c['nll_raw']:.3f} -> "
                   f"{c['nll_calibrated']:.3f} ({c['held_out_with_unseen_cause']} held-out logs had a cause "
                   "no training fold had)", "dim")
    curve = ev.threshold_curve()
    _line(con, "threshold (model): " + "; ".join(
        f"{c['threshold']:.1f}: answers {c['answered']:.2f}, right {c['right_when_answered']:.2f}, top-1 {c['top1']:.2f}"
        for c in curve), "dim")
    if brief:
        return
    per = {m: ev.metrics(m)["per_cause"] for m in METHODS}
    groups_of: dict[str, set[str]] = {}
    for y, g in zip(ev.y, ev.groups, strict=True):
        groups_of.setdefault(y, set()).add(g)
    width = max(len(c) for c in per["model"]) + 2
    _line(con, "")
    _line(con, f"{'per cause (held out)':<{width}}logs groups  model P  model R  keyword-NN R  majority R", "bold")
    for cause in sorted(per["model"]):
        pm = per["model"][cause]
        _line(con, f"{cause:<{width}}{pm['support']:>4} {len(groups_of[cause]):>6}  {pm['precision']:7.2f}  "
                   f"{pm['recall']:7.2f}  {per['nearest-neighbour'][cause]['recall']:12.2f}  "
                   f"{per['majority'][cause]['recall']:10.2f}")
    _line(con, "")
    labels, matrix = confusion(ev.y, ev.preds["model"])
    _line(con, "confusion matrix (model, held out; rows: label, columns: verdict, numbered as the rows)", "bold")
    width = max(len(x) for x in labels) + 4
    head = " " * width + "".join(f"{i + 1:>3}" for i in range(len(labels)))
    _line(con, head, "dim")
    for i, (lab, row) in enumerate(zip(labels, matrix, strict=True)):
        cells = "".join(f"{v:>3}" if v else "  ." for v in row)
        _line(con, f"{i + 1:>2} {lab:<{width - 3}}" + cells, None if sum(row) else "dim")


def _line(con, text: str, style: str | None = None) -> None:
    con.print(Text(text, style=style or ""), soft_wrap=True)
