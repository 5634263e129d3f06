"""The pipeline hook: when no root rule matched, the learned model gives its opinion, and how sure it is.

`Classifier(pipeline, diagnoses, facts) -> diagnoses` is what `Pipeline.classifier` calls in
finish(). It reads the pipeline's event digest, predicts with the JSON model (pure Python),
and returns a classifier diagnosis (origin classifier, the calibrated probability as its
confidence, the closest known incident, the taxonomy's usual fixes as suggestions), or keeps
'unknown' and names its best guess when it is not sure enough.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from logsense.learn.decide import HEALTHY, UNKNOWN, decide
from logsense.learn.features import (
    SCAN_LITERALS,
    TAIL_LINES,
    Digest,
    Doc,
    Note,
    doc_of_pipeline,
)
from logsense.learn.linear import LinearModel, Prediction
from logsense.model import Diagnosis, Evidence, Fix, Origin

MAX_EVIDENCE = 6
UNKNOWN_CONFIDENCE = 0.3  # as the rules' unknown


class Classifier:
    """A lazily loaded model behind the pipeline hook; `required` means no rule ran (--no-rules)."""

    def __init__(self, path: str | Path, required: bool = False, threshold: float | None = None) -> None:
        self.path = Path(path)
        self.required = required
        self._threshold = threshold
        self._model: LinearModel | None = None

    @property
    def model(self) -> LinearModel:
        if self._model is None:
            self._model = LinearModel.load(self.path)
        return self._model

    @property
    def threshold(self) -> float:
        return self._threshold if self._threshold is not None else self.model.threshold

    needs_every_line = False  # the block scanner feeds what the model reads (see scan_literals)
    scan_literals = SCAN_LITERALS
    scan_tail = TAIL_LINES

    def attach(self, pipeline) -> None:
        """Watch the events as they are fed (tail, stdin, the library): the pipeline keeps a digest."""
        pipeline.digest = Digest()

    def __call__(self, pipeline, diagnoses: list[Diagnosis], facts: dict) -> list[Diagnosis]:
        if pipeline.digest is None:
            return diagnoses  # not attached before feeding: the events were not watched
        return self.consult(pipeline, diagnoses, lambda: doc_of_pipeline(pipeline))

    def consult(self, pipeline, diagnoses: list[Diagnosis], read_doc: Callable[[], Doc]) -> list[Diagnosis]:
        root = next((d for d in diagnoses if d.root), None)
        symptoms = [d for d in diagnoses if not d.root]
        tl = pipeline.timeline
        if tl.ready and root is None and not self.required:
            return diagnoses  # rules saw a healthy startup: never invent a failure
        doc = read_doc()
        if doc.ready and not doc.errors_after_ready and root is None:
            return diagnoses
        return self.judge(doc, diagnoses, root, symptoms, tl.current)

    def judge(self, doc: Doc, diagnoses: list[Diagnosis], root: Diagnosis | None, symptoms: list[Diagnosis],
              phase: str) -> list[Diagnosis]:
        model = self.model
        pred = model.predict(doc.text)
        verdict, p, guess = decide(pred.probs, doc, self.threshold, failed=root is not None)
        explains = tuple(d.rule for d in symptoms if d.rule)
        if verdict == HEALTHY:
            if self.required and root is not None:
                return symptoms  # the classifier alone decides, and is sure enough the startup is fine
            return diagnoses
        if verdict != UNKNOWN:
            return [self._diagnosis(verdict, p, doc, pred, phase, explains)] + symptoms
        # not sure enough: keep (or, with no rules, say) unknown, and name the best guess
        guess_p = pred.prob(guess)
        nearest = model.nearest(doc.text, guess) if guess not in (HEALTHY, UNKNOWN) else None
        note = (f" The learned classifier's best guess is {guess} (p={guess_p:.2f}), too unsure to "
                f"name it" + (f"; the closest known incident is {nearest[0]}." if nearest else "."))
        if root is not None:
            from dataclasses import replace

            return [replace(root, explanation=root.explanation + note,
                            nearest=nearest[0] if nearest else None)] + symptoms
        if not self.required:
            return diagnoses  # the rules saw no failure: the model does not invent one
        from logsense.taxonomy import title

        unknown = Diagnosis(
            cause=UNKNOWN, rule=None, root=True, origin=Origin.CLASSIFIER, confidence=UNKNOWN_CONFIDENCE,
            title=title(UNKNOWN),
            explanation="The startup failed, but nothing identifies why; the lines below are the last errors." + note,
            phase=doc.notes[-1].phase if doc.notes else phase,
            evidence=_evidence(doc.notes[-3:]), fixes=(), explains=explains,
            nearest=nearest[0] if nearest else None,
        )
        return [unknown] + symptoms

    def _diagnosis(self, cause: str, p: float, doc: Doc, pred: Prediction, phase: str,
                   explains: tuple[str, ...]) -> Diagnosis:
        from logsense.taxonomy import causes, title

        model = self.model
        notes = _telling(model, doc.notes, cause)
        nearest = model.nearest(doc.text, cause)
        entry = causes().get(cause)
        fixes = tuple(Fix(_fix_kind(f), f, "the usual fix for this cause: check that it fits")
                      for f in (entry.fix if entry else ()))
        others = [f"{c} {q:.2f}" for c, q in pred.probs[1:3] if q >= 0.05]
        text = (f"No rule recognises this log. The learned classifier says it is probably {cause} (p={p:.2f})"
                + (f", like the known incident {nearest[0]}" if nearest else "")
                + (f"; next: {', '.join(others)}" if others else "")
                + ". Treat the fixes as suggestions.")
        return Diagnosis(
            cause=cause, rule=None, root=True, origin=Origin.CLASSIFIER, confidence=round(p, 3),
            title=title(cause), explanation=text,
            phase=notes[0].phase if notes else (doc.notes[-1].phase if doc.notes else phase),
            evidence=_evidence(sorted(notes, key=lambda n: n.line)), fixes=fixes, explains=explains,
            nearest=nearest[0] if nearest else None,
        )


def _telling(model: LinearModel, notes: list[Note], cause: str, k: int = 3) -> list[Note]:
    """The error notes that push hardest toward `cause`, strongest first."""
    if cause not in model.classes:
        return notes[-k:]
    scored = [(model.contribution(n.text, cause), n) for n in notes]
    scored = [(s, n) for s, n in scored if s > 0]
    scored.sort(key=lambda sn: (-sn[0], sn[1].line))
    return [n for _, n in scored[:k]] or notes[-k:]


def _evidence(notes: list[Note]) -> tuple[Evidence, ...]:
    out: dict[int, Evidence] = {}
    for n in notes:
        for line, text in n.lines:
            out.setdefault(line, Evidence(line, text))
    return tuple(sorted(out.values(), key=lambda e: e.line)[-MAX_EVIDENCE:])


def _fix_kind(text: str) -> str:
    """A best guess at a taxonomy fix's kind (they are prose: 'raise --mem-fraction-static')."""
    t = text.strip()
    if "--" in t:
        return "flag"
    if t.startswith(("pip ", "apt ", "apt-get ", "conda ")) or " install " in t:
        return "package"
    if any(w.isupper() and "_" in w for w in t.replace("=", " ").split()):
        return "env"
    if t.startswith(("python", "docker", "huggingface-cli", "nvidia-smi")):
        return "command"
    return "config"
