"""Fitting and evaluating the classifier (scikit-learn; imported only by `logsense train` / `eval`).

The model: TF-IDF over word uni/bigrams and character 3-5-grams of the masked error-ish
events, a multinomial logistic regression on top, and one temperature fitted on held-out
scores so that its probabilities mean what they say. Evaluation splits by incident group
(GroupKFold), so no incident, nor a constructed variant of it, is on both sides.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from scipy import sparse
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GroupKFold

from logsense.learn.decide import decide
from logsense.learn.features import FEATURE_VERSION, Doc, chars, words
from logsense.learn.linear import FORMAT, FORMAT_VERSION, UNCAPPED, HeldOut, softmax
from logsense.model import UNKNOWN


@dataclass(frozen=True)
class Config:
    C: float = 1.0
    class_weight: str | None = "balanced"
    word: bool = True
    char: bool = False  # character n-grams: no better held out on this corpus, four times the model
    char_min_df: int = 2
    char_max_features: int = 12000
    word_max_features: int = 8000
    char_weight: float = 1.0
    threshold: float = 0.5
    nearest_terms: int = 48


# --- fitting ---


@dataclass
class Fitted:
    """A fitted model in scikit-learn form, used inside cross-validation and to export."""

    vectorizers: list[tuple[str, TfidfVectorizer, float]]
    lr: LogisticRegression
    classes: list[str]

    def matrix(self, texts: list[str]):
        blocks = [v.transform(texts) * w for _, v, w in self.vectorizers]
        return sparse.hstack(blocks).tocsr()

    def scores(self, texts: list[str]) -> np.ndarray:
        return class_scores(self.lr, self.matrix(texts))


def class_scores(lr: LogisticRegression, X) -> np.ndarray:
    z = lr.decision_function(X)
    if z.ndim == 1:  # two classes: scikit-learn keeps one column; softmax([0, z]) is its sigmoid
        z = np.column_stack([np.zeros_like(z), z])
    return z


def fit(texts: list[str], y: list[str], cfg: Config) -> Fitted:
    vecs: list[tuple[str, TfidfVectorizer, float]] = []
    if cfg.word:
        vecs.append(("word", TfidfVectorizer(analyzer=words, sublinear_tf=True, lowercase=False,
                                             max_features=cfg.word_max_features), 1.0))
    if cfg.char:
        min_df = cfg.char_min_df if len(texts) >= 4 * cfg.char_min_df else 1
        vecs.append(("char", TfidfVectorizer(analyzer=chars, sublinear_tf=True, lowercase=False, min_df=min_df,
                                             max_features=cfg.char_max_features), cfg.char_weight))
    blocks = []
    for _, v, w in vecs:
        blocks.append(v.fit_transform(texts) * w)
    X = sparse.hstack(blocks).tocsr()
    lr = LogisticRegression(C=cfg.C, class_weight=cfg.class_weight, solver="newton-cg", max_iter=500)
    lr.fit(X, y)
    return Fitted(vecs, lr, [str(c) for c in lr.classes_])


def fit_temperature(z: np.ndarray, y_idx: np.ndarray) -> float:
    """The temperature that minimises the log loss of held-out scores (rows with y_idx < 0 ignored)."""
    keep = y_idx >= 0
    if keep.sum() < 3:
        return 1.0
    z, y_idx = z[keep], y_idx[keep]
    best_t, best_nll = 1.0, math.inf
    for t in np.exp(np.linspace(math.log(0.02), math.log(10.0), 91)):
        s = z / t
        s = s - s.max(axis=1, keepdims=True)
        logp = s - np.log(np.exp(s).sum(axis=1, keepdims=True))
        nll = -logp[np.arange(len(y_idx)), y_idx].mean()
        if nll < best_nll - 1e-12:
            best_t, best_nll = float(t), float(nll)
    return round(best_t, 4)


def export(f: Fitted, texts: list[str], names: list[str], y: list[str], cfg: Config, temperature: float,
           meta: dict[str, Any], held_out: dict[str, HeldOut] | None = None) -> dict[str, Any]:
    """The JSON model: everything predict needs, nothing that can run.

    `held_out`: each cause's cross-validation record, which caps its confidence; none (no
    cross-validation) means no cause has earned any, and the model names none.
    """
    blocks = []
    for name, v, w in f.vectorizers:
        terms = [""] * len(v.vocabulary_)
        for t, i in v.vocabulary_.items():
            terms[i] = t
        blocks.append({"analyzer": name, "terms": terms, "idf": [_r(x) for x in v.idf_], "sublinear_tf": True,
                       "weight": w})
    coef = f.lr.coef_
    intercept = f.lr.intercept_
    if coef.shape[0] == 1:
        coef = np.vstack([np.zeros_like(coef[0]), coef[0]])
        intercept = np.array([0.0, intercept[0]])
    # nearest incident: each training log's word vector, its strongest terms only
    incidents = []
    word = next((v for n, v, _ in f.vectorizers if n == "word"), None)
    if word is not None:
        W = word.transform(texts).tocsr()
        for i in range(W.shape[0]):
            row = W.getrow(i)
            pairs = sorted(zip(row.indices.tolist(), row.data.tolist(), strict=False), key=lambda p: -p[1])[: cfg.nearest_terms]
            norm = math.sqrt(sum(w * w for _, w in pairs)) or 1.0
            incidents.append({"name": names[i], "cause": y[i], "norm": _r(norm),
                              "terms": [[int(j), _r(w)] for j, w in sorted(pairs)]})
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "meta": {**meta, "feature_version": FEATURE_VERSION, "config": asdict(cfg)},
        "classes": f.classes,
        "blocks": blocks,
        "coef": [[_r(x) for x in coef[:, j]] for j in range(coef.shape[1])],
        "intercept": [_r(x) for x in intercept],
        "temperature": temperature,
        "threshold": cfg.threshold,
        "held_out": {c: {"precision": None if r.precision is None else round(r.precision, 4), "right": r.right,
                         "said": r.said, "support": r.support}
                     for c, r in sorted((held_out or {}).items()) if c in f.classes},
        "incidents": incidents,
    }


def _r(x: float) -> float:
    return float(f"{float(x):.5g}")


# --- evaluation ---


@dataclass
class Evaluation:
    y: list[str]
    origin: list[str]
    groups: list[str]
    names: list[str]
    preds: dict[str, list[str]]  # method -> verdict per incident ("model": capped, as analyze; "uncapped")
    top1: dict[str, list[str]]  # method -> argmax (no threshold) per incident
    probs: list[float]  # the model's calibrated (and capped) p of its verdict
    n_splits: int
    temperature: float
    calibration: dict[str, float]
    held_out: dict[str, HeldOut] = field(default_factory=dict)  # every fold's statements: what the model stores
    threshold: float = 0.5
    failed: list[bool] = field(default_factory=list, repr=False)  # each log's verdict is failed
    model_probs: list[dict[str, float]] = field(default_factory=list, repr=False)  # calibrated, held out
    fold_of: list[int] = field(default_factory=list, repr=False)

    def threshold_curve(self, thresholds=(0.2, 0.3, 0.4, 0.5, 0.6, 0.7)) -> list[dict[str, float]]:
        """What each threshold would give (capped as analyze does): the share answered, right when answered, top-1."""
        out = []
        for t in thresholds:
            pred = capped_verdicts(self.model_probs, self.failed, self.y, self.fold_of, t)[1]
            s = summarize(self.y, pred)
            out.append({"threshold": t, "answered": s["coverage"], "right_when_answered": s["precision_when_answered"],
                        "top1": s["top1"], "macro_f1": s["macro_f1"]})
        return out

    def metrics(self, method: str, subset: str | None = None, thresholded: bool = True) -> dict[str, Any]:
        idx = [i for i, o in enumerate(self.origin) if subset is None or o == subset]
        pred = self.preds[method] if thresholded else self.top1[method]
        return summarize([self.y[i] for i in idx], [pred[i] for i in idx])


def summarize(y: list[str], pred: list[str]) -> dict[str, Any]:
    from sklearn.metrics import f1_score, precision_recall_fscore_support

    if not y:
        return {"n": 0}
    labels = sorted(set(y))
    p, r, f, s = precision_recall_fscore_support(y, pred, labels=labels, zero_division=0)
    per = {c: {"precision": float(p[i]), "recall": float(r[i]), "f1": float(f[i]), "support": int(s[i])}
           for i, c in enumerate(labels)}
    answered = [(a, b) for a, b in zip(y, pred, strict=False) if b != UNKNOWN]
    return {
        "n": len(y),
        "top1": sum(a == b for a, b in zip(y, pred, strict=False)) / len(y),
        "macro_f1": float(f1_score(y, pred, labels=labels, average="macro", zero_division=0)),
        "coverage": len(answered) / len(y),
        "precision_when_answered": (sum(a == b for a, b in answered) / len(answered)) if answered else 0.0,
        "per_cause": per,
    }


def n_splits_for(groups: list[str], wanted: int = 5) -> int:
    return max(2, min(wanted, len(set(groups))))


def cross_validate(texts: list[str], failed: list[bool], y: list[str], groups: list[str], origin: list[str],
                   names: list[str], cfg: Config, n_splits: int = 5) -> Evaluation:
    """Every log judged by a model that never saw its group, as analyze judges it: `failed` is each
    log's verdict (analyze names a cause only for a failed log; the corpus tests hold the verdict
    to the label, see Incident.failed)."""
    n = len(y)
    k = n_splits_for(groups, n_splits)
    if len(set(groups)) < 2:
        raise ValueError("cross-validation needs incidents from at least two sources")
    folds = list(GroupKFold(n_splits=k).split(np.zeros(n), y, groups))
    classes_all = sorted(set(y))
    z_all = np.full((n, len(classes_all)), -1e3)  # held-out scores, in classes_all order
    top_model = [""] * n
    pred_major = [""] * n
    pred_nn = [""] * n
    fold_of = np.zeros(n, dtype=int)
    seen = np.zeros(n, dtype=bool)  # the incident's cause was in its training folds
    for fi, (tr, te) in enumerate(folds):
        fold_of[te] = fi
        tr_texts, tr_y = [texts[i] for i in tr], [y[i] for i in tr]
        f = fit(tr_texts, tr_y, cfg)
        z = f.scores([texts[i] for i in te])
        for row, i in enumerate(te):
            for ci, c in enumerate(f.classes):
                z_all[i, classes_all.index(c)] = z[row, ci]
            top_model[i] = f.classes[int(np.argmax(z[row]))]
            seen[i] = y[i] in f.classes
        major = Counter(tr_y).most_common(1)[0][0]
        nn = _nearest_neighbour(tr_texts, tr_y, [texts[i] for i in te])
        for row, i in enumerate(te):
            pred_major[i] = decide({major: 1.0}, 0.0, failed[i])[0]
            pred_nn[i] = decide({nn[row]: 1.0}, 0.0, failed[i])[0]
    y_idx = np.array([classes_all.index(c) for c in y])
    y_fit = np.where(seen, y_idx, -1)  # a cause no training fold had says nothing about calibration
    # the temperature used for fold i is fitted on the other folds' held-out scores
    temps = []
    probs_model: list[list[float]] = []
    for fi in range(k):
        mask = fold_of != fi
        temps.append(fit_temperature(z_all[mask], y_fit[mask]))
    raw_p = []
    for i in range(n):
        probs_model.append(softmax(list(z_all[i]), temps[fold_of[i]]))
        raw_p.append(softmax(list(z_all[i]), 1.0))
    model_probs = [dict(zip(classes_all, pr, strict=True)) for pr in probs_model]
    pred_uncapped, pred_model, p_model = capped_verdicts(model_probs, failed, y, list(fold_of), cfg.threshold)
    temperature = fit_temperature(z_all, y_fit)
    known = [i for i in range(n) if seen[i]]
    calibration = {
        "ece_raw": _ece([raw_p[i] for i in known], y_idx[known]),
        "ece_calibrated": _ece([probs_model[i] for i in known], y_idx[known]),
        "nll_raw": _nll([raw_p[i] for i in known], y_idx[known]),
        "nll_calibrated": _nll([probs_model[i] for i in known], y_idx[known]),
        "held_out_with_unseen_cause": int(n - len(known)),
    }
    gated_top = [decide({top_model[i]: 1.0}, 0.0, failed[i])[0] for i in range(n)]
    return Evaluation(
        y=list(y), origin=list(origin), groups=list(groups), names=list(names),
        preds={"model": pred_model, "uncapped": pred_uncapped, "nearest-neighbour": pred_nn,
               "majority": pred_major},
        top1={"model": gated_top, "nearest-neighbour": pred_nn, "majority": pred_major},
        probs=p_model, n_splits=k, temperature=temperature, calibration=calibration,
        held_out=held_out_records(y, pred_uncapped, classes_all), threshold=cfg.threshold,
        failed=list(failed), model_probs=model_probs, fold_of=[int(f) for f in fold_of],
    )


def held_out_records(y: list[str], pred: list[str], classes: list[str]) -> dict[str, HeldOut]:
    """Per cause: how many held-out logs the model called it, how many of those were right, how many were it."""
    said = Counter(pred)
    right = Counter(a for a, b in zip(y, pred, strict=True) if a == b)
    support = Counter(y)
    return {c: HeldOut(right[c], said[c], support[c]) for c in classes}


def capped_verdicts(probs: list[dict[str, float]], failed: list[bool], y: list[str], fold_of: list[int],
                    threshold: float) -> tuple[list[str], list[str], list[float]]:
    """(uncapped verdicts, capped verdicts, capped p of each): each held-out log's causes capped by the
    records of the other folds, as the shipped model's are by all of them."""
    uncapped = [decide(p, threshold, f)[0] for p, f in zip(probs, failed, strict=True)]
    classes = sorted(probs[0]) if probs else []
    records = {}
    for fi in sorted(set(fold_of)):
        others = [i for i, f in enumerate(fold_of) if f != fi]
        records[fi] = held_out_records([y[i] for i in others], [uncapped[i] for i in others], classes)
    capped, p_capped = [], []
    for i, p in enumerate(probs):
        rec = records[fold_of[i]]
        cp = {c: q if c in UNCAPPED else min(q, rec[c].cap) for c, q in p.items()}
        verdict, q, _ = decide(cp, threshold, failed[i])
        capped.append(verdict)
        p_capped.append(q)
    return uncapped, capped, p_capped


def _nearest_neighbour(train: list[str], y: list[str], test: list[str]) -> list[str]:
    """The keyword baseline: the label of the most similar training log (cosine over word TF-IDF)."""
    v = TfidfVectorizer(analyzer=lambda t: _WORDS(t), sublinear_tf=True, lowercase=False)
    A = v.fit_transform(train)
    B = v.transform(test)
    sims = (B @ A.T).toarray()
    return [y[int(np.argmax(row))] if row.max() > 0 else Counter(y).most_common(1)[0][0] for row in sims]


def _WORDS(text: str) -> list[str]:
    return [w for w in words(text) if " " not in w]


def _ece(probs: list[list[float]], y_idx: np.ndarray, bins: int = 10) -> float:
    conf = np.array([max(p) for p in probs])
    hit = np.array([int(np.argmax(p)) == y_idx[i] for i, p in enumerate(probs)], dtype=float)
    edges = np.linspace(0, 1, bins + 1)
    ece = 0.0
    for lo, hi in zip(edges[:-1], edges[1:], strict=False):
        m = (conf > lo) & (conf <= hi)
        if m.any():
            ece += m.mean() * abs(hit[m].mean() - conf[m].mean())
    return round(float(ece), 4)


def _nll(probs: list[list[float]], y_idx: np.ndarray) -> float:
    return round(float(-np.mean([math.log(max(p[y_idx[i]], 1e-12)) for i, p in enumerate(probs)])), 4)


def confusion(y: list[str], pred: list[str]) -> tuple[list[str], list[list[int]]]:
    labels = sorted(set(y) | set(pred))
    at = {c: i for i, c in enumerate(labels)}
    m = [[0] * len(labels) for _ in labels]
    for a, b in zip(y, pred, strict=False):
        m[at[a]][at[b]] += 1
    return labels, m


# --- the whole job: evaluate, fit on everything, export ---


def build(incidents, docs: list[Doc], cfg: Config | None = None, n_splits: int = 5,
          corpus_hash: str | None = None) -> tuple[dict[str, Any], Evaluation | None]:
    """Cross-validate (when there are two sources or more), then fit on the whole corpus and export."""
    import sklearn

    cfg = cfg or Config()
    texts = [d.text for d in docs]
    y = [i.cause for i in incidents]
    from logsense.learn.corpus import groups as group_incidents

    groups = group_incidents(incidents, docs)
    origin = [i.origin for i in incidents]
    names = [i.name for i in incidents]
    if len(set(y)) < 2:
        raise ValueError("training needs incidents of at least two causes")
    ev = None
    if len(set(groups)) >= 2:
        ev = cross_validate(texts, [i.failed for i in incidents], y, groups, origin, names, cfg, n_splits)
    f = fit(texts, y, cfg)
    meta: dict[str, Any] = {
        "corpus_hash": corpus_hash,
        "logs": len(y),
        "groups": len(set(groups)),
        "by_origin": dict(sorted(Counter(origin).items())),
        "by_cause": dict(sorted(Counter(y).items())),
        "trained_with": f"scikit-learn {sklearn.__version__}",
        "rebuild": "logsense train corpora/ -o logsense/data/",
    }
    if ev is not None:
        meta["cross_validation"] = cv_summary(ev)
    temperature = ev.temperature if ev is not None else 1.0
    return export(f, texts, names, y, cfg, temperature, meta, ev.held_out if ev is not None else None), ev


METHODS = ("model", "nearest-neighbour", "majority")  # the model and its two plain baselines

# (method key, label, thresholded, subsets): the rows of the held-out table, in README order
TABLE_ROWS = (
    ("model", "model, capped (what `analyze` does)", True, ("all", "recorded", "constructed")),
    ("uncapped", "model, uncapped", True, ("all",)),
    ("model", "model, argmax", False, ("all",)),
    ("nearest-neighbour", "keyword nearest neighbour", True, ("all", "recorded", "constructed")),
    ("majority", "majority cause", True, ("all",)),
)


def cv_summary(ev: Evaluation) -> dict[str, Any]:
    """The held-out figures a model keeps in its meta, and `eval --format markdown` prints: the same numbers."""
    rows = []
    for key, label, thresholded, subsets in TABLE_ROWS:
        for subset in subsets:
            m = ev.metrics(key, None if subset == "all" else subset, thresholded=thresholded)
            if m.get("n"):
                rows.append({"method": label, "logs": subset, **_brief(m)})
    return {
        "splits": ev.n_splits,
        "split_by": "incident group (source url)",
        "logs": len(ev.y),
        "by_origin": dict(sorted(Counter(ev.origin).items())),
        "causes": len(set(ev.y)),
        "groups": len(set(ev.groups)),
        "threshold": ev.threshold,
        "table": rows,
        "calibration": ev.calibration,
    }


def _brief(m: dict[str, Any]) -> dict[str, Any]:
    return {k: round(v, 4) if isinstance(v, float) else v for k, v in m.items() if k != "per_cause"}
