"""The shipped model: TF-IDF blocks and a multinomial linear model, as plain JSON, predicted in pure Python.

The file holds only numbers and strings (vocabularies, idf weights, coefficients, the
temperature that calibrates them, and a few vectors of known incidents for "closest
incident"): loading it cannot run code, and predicting is a sparse dot product, so
`logsense analyze` never imports numpy or scikit-learn for it.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from logsense.errors import ModelError
from logsense.learn.features import ANALYZERS, FEATURE_VERSION
from logsense.learn.validate import check_model
from logsense.model import HEALTHY, UNKNOWN

FORMAT = "logsense-linear-text-classifier"
FORMAT_VERSION = 2  # 2: a held-out precision per cause caps its confidence
UNCAPPED = (HEALTHY, UNKNOWN)  # not causes the model states: "no failure" and "cannot tell"
MAX_MODEL_BYTES = 64 << 20  # the file, and a .gz once inflated (the shipped model is ~2 MB)


@dataclass(frozen=True)
class HeldOut:
    """A cause's record in cross-validation: `right` of the `said` held-out logs the model called it were
    that cause; `support` held-out logs were."""

    right: int
    said: int
    support: int

    @property
    def precision(self) -> float | None:
        return self.right / self.said if self.said else None

    @property
    def cap(self) -> float:
        """The most confidence the record earns: its held-out precision, 0 for a cause never called."""
        return self.right / self.said if self.said else 0.0


@dataclass(frozen=True)
class Prediction:
    probs: tuple[tuple[str, float], ...]  # (cause, p), most likely first

    @property
    def cause(self) -> str:
        return self.probs[0][0]

    @property
    def p(self) -> float:
        return self.probs[0][1]

    def prob(self, cause: str) -> float:
        return next((p for c, p in self.probs if c == cause), 0.0)


class Block:
    """One TF-IDF vectorizer: analyzer name, vocabulary, idf; sublinear tf and l2 norm as in training."""

    def __init__(self, spec: dict[str, Any], offset: int) -> None:
        self.name = spec["analyzer"]
        self.analyzer = ANALYZERS[self.name]
        self.vocab: dict[str, int] = {t: i for i, t in enumerate(spec["terms"])}
        self.idf: list[float] = spec["idf"]
        self.sublinear = bool(spec.get("sublinear_tf", True))
        self.weight = float(spec.get("weight", 1.0))
        self.offset = offset

    def __len__(self) -> int:
        return len(self.vocab)

    def transform(self, text: str) -> dict[int, float]:
        counts = Counter(t for t in self.analyzer(text) if t in self.vocab)
        vals: dict[int, float] = {}
        for term, c in counts.items():
            j = self.vocab[term]
            tf = 1.0 + math.log(c) if self.sublinear else float(c)
            vals[j] = tf * self.idf[j]
        norm = math.sqrt(sum(v * v for v in vals.values()))
        if not norm:
            return {}
        scale = self.weight / norm
        return {self.offset + j: v * scale for j, v in vals.items()}


class LinearModel:
    def __init__(self, data: dict[str, Any], source: str = "classifier model") -> None:
        check_model(data, ANALYZERS, (FORMAT, FORMAT_VERSION), FEATURE_VERSION, source)
        self.meta: dict[str, Any] = data["meta"]
        self.classes: list[str] = list(data["classes"])
        self.blocks: list[Block] = []
        offset = 0
        for spec in data["blocks"]:
            b = Block(spec, offset)
            self.blocks.append(b)
            offset += len(b)
        self.coef: list[list[float]] = data["coef"]  # one row per feature: a weight per class
        self.intercept: list[float] = data["intercept"]
        self.temperature = float(data["temperature"])
        self.threshold = float(data["threshold"])
        self.incidents: list[dict[str, Any]] = data.get("incidents", [])
        self.held_out: dict[str, HeldOut] = {
            c: HeldOut(r["right"], r["said"], r["support"]) for c, r in data["held_out"].items()}

    @classmethod
    def load(cls, path: str | Path) -> LinearModel:
        p = Path(path)
        try:
            with open(p, "rb") as fh:
                raw = fh.read(MAX_MODEL_BYTES + 1)
                if len(raw) > MAX_MODEL_BYTES:
                    raise ModelError(f"{p}: larger than {MAX_MODEL_BYTES >> 20} MiB: not a classifier model")
                if raw[:2] == b"\x1f\x8b":
                    fh.seek(0)
                    raw = _gunzip(fh, p)
        except OSError as e:
            raise ModelError(f"{p}: cannot read the classifier model: {e.strerror or e}") from None
        try:
            data = json.loads(raw)
        except (ValueError, RecursionError) as e:
            raise ModelError(f"{p}: not a classifier model (bad JSON: {str(e)[:200]})") from None
        return cls(data, str(p))

    def earned(self, cause: str) -> HeldOut | None:
        """How the model did on held-out logs it called `cause`; None for healthy and unknown (never capped)."""
        if cause in UNCAPPED:
            return None
        return self.held_out.get(cause, HeldOut(0, 0, 0))

    def capped(self, pred: Prediction) -> Prediction:
        """The prediction with each cause's confidence capped by its held-out precision (see HeldOut.cap)."""
        out = []
        for c, p in pred.probs:
            rec = self.earned(c)
            out.append((c, p if rec is None else min(p, rec.cap)))
        return Prediction(tuple(sorted(out, key=lambda cp: (-cp[1], cp[0]))))

    def vector(self, text: str) -> dict[int, float]:
        x: dict[int, float] = {}
        for b in self.blocks:
            x.update(b.transform(text))
        return x

    def scores(self, x: dict[int, float]) -> list[float]:
        s = list(self.intercept)
        k = len(s)
        for j, v in x.items():
            row = self.coef[j]
            for c in range(k):
                s[c] += v * row[c]
        return s

    def predict(self, text: str) -> Prediction:
        return self.predict_vector(self.vector(text))

    def predict_vector(self, x: dict[int, float]) -> Prediction:
        probs = softmax(self.scores(x), self.temperature)
        order = sorted(range(len(probs)), key=lambda i: (-probs[i], self.classes[i]))
        return Prediction(tuple((self.classes[i], probs[i]) for i in order))

    def nearest(self, text: str, cause: str | None = None) -> tuple[str, float] | None:
        """The known incident whose words are closest (cosine), among those of `cause` when given."""
        word = next((b for b in self.blocks if b.name == "word"), None)
        if word is None or not self.incidents:
            return None
        q = word.transform(text)
        qn = math.sqrt(sum(v * v for v in q.values())) or 1.0
        best: tuple[str, float] | None = None
        for inc in self.incidents:
            if cause is not None and inc["cause"] != cause:
                continue
            dot = sum(q.get(word.offset + j, 0.0) * w for j, w in inc["terms"])
            sim = dot / (qn * (inc.get("norm") or 1.0))
            if best is None or sim > best[1]:
                best = (inc["name"], sim)
        return best

    def contribution(self, text: str, cause: str) -> float:
        """How much one piece of text pushes toward `cause` (its score, intercept left out)."""
        c = self.classes.index(cause)
        return sum(v * self.coef[j][c] for j, v in self.vector(text).items())


def _gunzip(fh, path: Path) -> bytes:
    """A gzip'd model inflated up to the size cap: a bomb or a truncated file is a clear error."""
    import gzip
    import zlib

    try:
        with gzip.GzipFile(fileobj=fh) as gz:
            raw = gz.read(MAX_MODEL_BYTES + 1)
    except (EOFError, OSError, zlib.error) as e:
        raise ModelError(f"{path}: compressed classifier model is truncated or corrupt ({e})") from None
    if len(raw) > MAX_MODEL_BYTES:
        raise ModelError(f"{path}: inflates past {MAX_MODEL_BYTES >> 20} MiB: not a classifier model")
    return raw


def softmax(scores: list[float], temperature: float = 1.0) -> list[float]:
    t = temperature if temperature > 0 else 1.0
    m = max(scores)
    e = [math.exp((s - m) / t) for s in scores]
    z = sum(e)
    return [v / z for v in e]
