"""`logsense train` and `logsense eval` as a user reads them: the held-out tables, per cause, the confusion matrix.

Cause names and log names are data: every line is a rich `Text`, never markup.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from rich.text import Text

from logsense.report.term import Terminal


def render_training(console: Terminal, ev: Any, data: dict[str, Any], path: str, logs: int,
                    readme: str | None = None) -> None:
    """What `train` says: the README it updated, the held-out summary, and the model it wrote."""
    if readme is not None:
        _line(console, f"updated the held-out table in {readme}", "bold")
    if ev is not None:
        render_evaluation(console, ev, brief=True)
    else:
        _line(console, "one incident group only: no cross-validation", "yellow")
    n_feat = sum(len(b["terms"]) for b in data["blocks"])
    _line(console, f"wrote {path}: {len(data['classes'])} causes, {n_feat} features, {logs} logs, "
                   f"temperature {data['temperature']}", "bold")


def render_evaluation(console: Terminal, ev: Any, brief: bool = False) -> None:
    """The held-out evaluation; `brief`: the summary table only, without per-cause rows and the confusion matrix."""
    from logsense.learn.linear import UNCAPPED
    from logsense.learn.train import METHODS, TABLE_ROWS, confusion, cv_summary

    origins = Counter(ev.origin)
    _line(console,
          f"{len(ev.y)} logs ({', '.join(f'{k} {v}' for k, v in sorted(origins.items()))}), "
          f"{len(set(ev.y))} causes, {len(set(ev.groups))} incident groups; {ev.n_splits}-fold GroupKFold "
          "(no group on both sides)", "bold")
    _line(console, f"held out{'':<22}subset        n  top-1  macro-F1  answered  right|answered", "bold")
    short = {label: key if thresholded else "model, argmax" for key, label, thresholded, _ in TABLE_ROWS}
    for r in cv_summary(ev)["table"]:
        _line(console, f"{short[r['method']]:<30}{r['logs']:<12}{r['n']:>4}  {r['top1']:5.2f}  {r['macro_f1']:8.2f}  "
                       f"{r['coverage']:8.2f}  {r['precision_when_answered']:14.2f}")
    _line(console, f"model: p >= {ev.threshold}, each cause's p capped by its held-out precision (the other folds' "
                   "for a held-out log); uncapped: the same without the cap", "dim")
    c = ev.calibration
    _line(console, f"calibration (held out): temperature {ev.temperature}; expected calibration error "
                   f"{c['ece_raw']:.3f} -> {c['ece_calibrated']:.3f}, log loss {c['nll_raw']:.3f} -> "
                   f"{c['nll_calibrated']:.3f} ({c['held_out_with_unseen_cause']} held-out logs had a cause "
                   "no training fold had)", "dim")
    _line(console, "threshold (model): " + "; ".join(
        f"{c['threshold']:.1f}: answers {c['answered']:.2f}, right {c['right_when_answered']:.2f}, top-1 {c['top1']:.2f}"
        for c in ev.threshold_curve()), "dim")
    if brief:
        return
    per = {m: ev.metrics(m)["per_cause"] for m in METHODS}
    groups_of: dict[str, set[str]] = {}
    for y, g in zip(ev.y, ev.groups, strict=True):
        groups_of.setdefault(y, set()).add(g)
    width = max(len(c) for c in per["model"]) + 2
    _line(console, "")
    _line(console, f"{'per cause (held out)':<{width}}logs groups  model P  model R  right/called (cap)  "
                   "keyword-NN R  majority R", "bold")
    for cause in sorted(per["model"]):
        pm = per["model"][cause]
        rec = ev.held_out.get(cause)
        called = "" if rec is None or cause in UNCAPPED else f"{rec.right}/{rec.said} ({rec.cap:.2f})"
        _line(console, f"{cause:<{width}}{pm['support']:>4} {len(groups_of[cause]):>6}  {pm['precision']:7.2f}  "
                       f"{pm['recall']:7.2f}  {called:>18}  {per['nearest-neighbour'][cause]['recall']:12.2f}  "
                       f"{per['majority'][cause]['recall']:10.2f}")
    _line(console, "")
    labels, matrix = confusion(ev.y, ev.preds["model"])
    _line(console, "confusion matrix (model, held out; rows: label, columns: verdict, numbered as the rows)", "bold")
    width = max(len(x) for x in labels) + 4
    _line(console, " " * width + "".join(f"{i + 1:>3}" for i in range(len(labels))), "dim")
    for i, (lab, row) in enumerate(zip(labels, matrix, strict=True)):
        cells = "".join(f"{v:>3}" if v else "  ." for v in row)
        _line(console, f"{i + 1:>2} {lab:<{width - 3}}" + cells, None if sum(row) else "dim")


def _line(console: Terminal, text: str, style: str | None = None) -> None:
    console.print(Text(text, style=style or ""), soft_wrap=True)
