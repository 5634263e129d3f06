"""The shipped model: TF-IDF blocks and a multinomial linear model, as plain JSON, predicted in pure Python.

The file holds only numbers and strings (vocabularies, idf weights, coefficients, the
temperature that calibrates them, and a few vectors of known incidents for "closest
incident"): loading it cannot run code, and predicting is a sparse dot product, so
`logsense analyze` never imports numpy or scikit-learn for it.
"""

from __future__ import annotations

import gzip
import json
import math
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from logsense.errors import ModelError
from logsense.learn.features import ANALYZERS

FORMAT = "logsense-linear-text-classifier"
FORMAT_VERSION = 1


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

    def best_failure(self) -> tuple[str, float]:
        """The most likely cause that is neither 'healthy' nor 'unknown'."""
        return next(((c, p) for c, p in self.probs if c not in ("healthy", "unknown")), ("unknown", 0.0))


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
    def __init__(self, data: dict[str, Any]) -> None:
        if data.get("format") != FORMAT:
            raise ModelError(f"not a logsense classifier model (format {data.get('format')!r})")
        if data.get("format_version") != FORMAT_VERSION:
            raise ModelError(f"classifier model format {data.get('format_version')} (this logsense reads "
                             f"{FORMAT_VERSION}): rebuild it with `logsense train`")
        self.meta: dict[str, Any] = data.get("meta", {})
        self.classes: list[str] = list(data["classes"])
        self.blocks: list[Block] = []
        offset = 0
        for spec in data["blocks"]:
            b = Block(spec, offset)
            self.blocks.append(b)
            offset += len(b)
        self.coef: list[list[float]] = data["coef"]  # one row per feature: a weight per class
        self.intercept: list[float] = data["intercept"]
        self.temperature = float(data.get("temperature", 1.0))
        self.threshold = float(data.get("threshold", 0.5))
        self.incidents: list[dict[str, Any]] = data.get("incidents", [])
        if len(self.coef) != offset or any(len(r) != len(self.classes) for r in self.coef[:1]):
            raise ModelError("classifier model: coefficient shape does not match its vocabulary")

    @classmethod
    def load(cls, path: str | Path) -> LinearModel:
        p = Path(path)
        try:
            raw = p.read_bytes()
        except OSError as e:
            raise ModelError(f"{p}: cannot read the classifier model: {e.strerror or e}") from None
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        try:
            data = json.loads(raw)
        except ValueError as e:
            raise ModelError(f"{p}: not a classifier model (bad JSON: {e})") from None
        return cls(data)

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


def softmax(scores: list[float], temperature: float = 1.0) -> list[float]:
    t = temperature if temperature > 0 else 1.0
    m = max(scores)
    e = [math.exp((s - m) / t) for s in scores]
    z = sum(e)
    return [v / z for v in e]
