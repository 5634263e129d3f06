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

from rich.table import Table
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
    con.print(Text(
        f"{len(ev.y)} logs ({', '.join(f'{k} {v}' for k, v in sorted(origins.items()))}), "
        f"{len(set(ev.y))} causes, {len(set(ev.groups))} incident groups; {ev.n_splits}-fold GroupKFold "
        "(no group on both sides)", style="bold"))
    t = Table(title="held-out incidents", title_justify="left")
    for col in ("method", "subset", "n", "top-1", "macro-F1", "answered", "right when answered"):
        t.add_column(col, justify="left" if col in ("method", "subset") else "right")
    for m in METHODS:
        for subset in (None, "recorded", "constructed"):
            s = ev.metrics(m, subset)
            if not s.get("n"):
                continue
            t.add_row(m, subset or "all", str(s["n"]), _f(s["top1"]), _f(s["macro_f1"]), _f(s["coverage"]),
                      _f(s["precision_when_answered"]))
    raw = ev.metrics("model", thresholded=False)
    t.add_row("model, no threshold", "all", str(raw["n"]), _f(raw["top1"]), _f(raw["macro_f1"]), "1.00",
              _f(raw["top1"]))
    con.print(t)
    c = ev.calibration
    con.print(Text(f"calibration (held out): temperature {ev.temperature}; expected calibration error "
                   f"{c['ece_raw']:.3f} -> {c['ece_calibrated']:.3f}, log loss {c['nll_raw']:.3f} -> "
                   f"{c['nll_calibrated']:.3f} ({c['held_out_with_unseen_cause']} held-out logs had a cause "
                   "no training fold had)", style="dim"))
    if brief:
        return
    per = {m: ev.metrics(m)["per_cause"] for m in METHODS}
    t = Table(title="per cause (held out)", title_justify="left")
    for col in ("cause", "logs", "groups", "model P", "model R", "nearest-nb R", "majority R"):
        t.add_column(col, justify="left" if col == "cause" else "right")
    groups_of: dict[str, set[str]] = {}
    for y, g in zip(ev.y, ev.groups, strict=True):
        groups_of.setdefault(y, set()).add(g)
    for cause in sorted(per["model"]):
        pm = per["model"][cause]
        t.add_row(cause, str(pm["support"]), str(len(groups_of[cause])), _f(pm["precision"]), _f(pm["recall"]),
                  _f(per["nearest-neighbour"][cause]["recall"]), _f(per["majority"][cause]["recall"]))
    con.print(t)
    labels, matrix = confusion(ev.y, ev.preds["model"])
    t = Table(title="confusion matrix (model; rows: label, columns: verdict)", title_justify="left")
    t.add_column("label \\ verdict")
    short = [_abbrev(x) for x in labels]
    for s in short:
        t.add_column(s, justify="right")
    for lab, row in zip(labels, matrix, strict=True):
        if sum(row):
            t.add_row(lab, *[str(v) if v else "." for v in row])
    con.print(t)
    con.print(Text("columns: " + ", ".join(f"{s}={lab}" for s, lab in zip(short, labels, strict=True)),
                   style="dim"))


def _abbrev(cause: str) -> str:
    parts = cause.split("_")
    return "".join(p[0] for p in parts) if len(parts) > 1 else cause[:4]
