"""The pipeline hook: when no root rule matched, the learned model gives its opinion, and how sure it is.

`Classifier` is a pipeline fallback (logsense.pipeline.Fallback): its watcher keeps a digest of
the events as they are fed and, for a failed log that no rule names, predicts from it with the
JSON model (pure Python). It returns a classifier diagnosis (origin classifier, the calibrated
probability capped by the cause's held-out precision as its confidence, the closest known
incident, the taxonomy's usual fixes as suggestions), or keeps 'unknown' and offers its best
guess as a "maybe" when it is not sure enough. It never decides whether a startup failed.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from logsense.learn.decide import best_failure, decide
from logsense.learn.features import DigestWatch, Doc, DocReader, Note
from logsense.model import HEALTHY, UNKNOWN, Diagnosis, Evidence, Fix, FixKind, Origin
from logsense.servers import NAMES
from logsense.taxonomy import OUT_OF_MEMORY, OUT_OF_MEMORY_KIND

if TYPE_CHECKING:
    from logsense.learn.linear import LinearModel, Prediction

MAX_EVIDENCE = 6
# On logs from outside the corpus the model's named causes under 0.9 were often wrong (the calibration
# tables of docs/first-sight.md): it names a cause only when its held-out record lets it say 0.9
NAME_AT = 0.9
MAYBE_PRECISION = 0.5  # a "maybe" is offered for a cause the model called right at least this often held out
# At first sight the maybes stated under 0.7 were right far less often than not (the calibration tables of
# docs/first-sight.md, summed over the batches): a maybe is offered from this stated probability only
MAYBE_AT = 0.7


class Classifier(DocReader):
    """A lazily loaded model as the pipeline's fallback; `threshold` overrides the model's bar."""

    def __init__(self, path: str | Path, threshold: float | None = None) -> None:
        self.path = Path(path)
        self._threshold = threshold
        self._model: LinearModel | None = None

    @property
    def model(self) -> LinearModel:
        if self._model is None:
            from logsense.learn.linear import LinearModel  # a log a rule explains never needs the model

            self._model = LinearModel.load(self.path)
        return self._model

    @property
    def threshold(self) -> float:
        """The bar a cause's stated probability must reach to be named: the model's, never under NAME_AT."""
        return self._threshold if self._threshold is not None else max(self.model.threshold, NAME_AT)

    def watch(self, timeline) -> ClassifierWatch:
        return ClassifierWatch(self, timeline)

    def consult(self, doc: Doc, diagnoses: list[Diagnosis], phase: str) -> list[Diagnosis]:
        """The diagnoses revised by the model's opinion of `doc`: only a failed log (an unknown root) is named."""
        root = next((d for d in diagnoses if d.root), None)
        if root is None:
            return diagnoses  # the verdict says the startup did not fail: the model never invents a failure
        symptoms = [d for d in diagnoses if not d.root]
        model = self.model
        raw = model.predict(doc.text)
        pred = model.capped(raw)  # a cause's confidence never exceeds what it earned held out
        if root.kind == OUT_OF_MEMORY_KIND:  # the log says memory ran out: only a memory cause explains it
            raw, pred = _only(raw, OUT_OF_MEMORY), _only(pred, OUT_OF_MEMORY)
        verdict, p, _ = decide(pred.probs, self.threshold, failed=True)
        explains = tuple(d.rule for d in symptoms if d.rule)
        if verdict != UNKNOWN:
            return [self._diagnosis(verdict, p, raw.prob(verdict), doc, pred, phase, explains)] + symptoms
        # not sure enough: the failure keeps cause unknown. A lean is offered as a maybe only when
        # the model's calls of that cause were right at least half the time held out, it is stated
        # at that record at most, and at MAYBE_AT at least: a maybe right less often than not is noise
        guess, guess_p = best_failure(raw.probs)
        rec = model.earned(guess)
        cap = rec.cap if rec is not None else 0.0
        stated = min(guess_p, cap)
        nearest = model.nearest(doc.text, guess) if cap >= MAYBE_PRECISION and stated >= MAYBE_AT else None
        if nearest is not None:
            note = (f" Maybe {guess}: the learned classifier's best guess (p={stated:.2f}"
                    f"{_record(model, guess, guess_p)}), too unsure to name it; the closest known incident is "
                    f"{nearest[0]}.")
        else:
            note = " The learned classifier has no likely guess either."
        return [root.replace(explanation=root.explanation + note, nearest=nearest[0] if nearest else None)] + symptoms

    def _diagnosis(self, cause: str, p: float, p_raw: float, doc: Doc, pred: Prediction, phase: str,
                   explains: tuple[str, ...]) -> Diagnosis:
        from logsense.taxonomy import title

        model = self.model
        notes = _telling(model, doc.notes, cause)
        nearest = model.nearest(doc.text, cause)
        fixes = usual_fixes(cause, doc.server)
        others = [f"{c} {q:.2f}" for c, q in pred.probs[1:3] if q >= 0.05]
        text = (f"No rule recognises this log. The learned classifier says it is probably {cause} "
                f"(p={p:.2f}{_record(model, cause, p_raw)})"
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


def _only(pred: Prediction, keep: frozenset[str]) -> Prediction:
    """The prediction with only the causes in `keep` (their probabilities as they were, not renormalised)."""
    return type(pred)(tuple((c, p) for c, p in pred.probs if c in keep or c in (HEALTHY, UNKNOWN)))


def _record(model: LinearModel, cause: str, p_raw: float) -> str:
    """What the cause's confidence rests on: its held-out record, and the cap when it bites."""
    rec = model.earned(cause)
    if rec is None:
        return ""
    if not rec.said:
        return f"; held out, the model never called a log {cause}, so it states it at 0"
    text = f"; held out, the model was right on {rec.right} of {rec.said} logs it called {cause}"
    return text + (f", so it states it at {rec.cap:.2f} at most" if p_raw > rec.cap else "")


class ClassifierWatch(DigestWatch):
    """One run seen by the classifier: the digest as it is fed, the model's opinion at the end."""

    def __init__(self, classifier: Classifier, timeline) -> None:
        super().__init__(timeline)
        self.classifier = classifier

    def revise(self, diagnoses: list[Diagnosis], facts: dict) -> list[Diagnosis]:
        return self.classifier.consult(self.doc(facts), diagnoses, self.timeline.current)


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


def usual_fixes(cause: str, server: str | None) -> tuple[Fix, ...]:
    """The taxonomy's usual fixes for `cause`, in `server`'s own flags (those it has no counterpart for left out)."""
    from logsense.fixes import in_server_terms
    from logsense.taxonomy import causes

    entry = causes().get(cause)
    out = []
    for text in entry.fix if entry else ():
        kind = _fix_kind(text)
        value = in_server_terms(kind, text, server)
        if value is not None:
            out.append(Fix(kind, value, "the usual fix for this cause: check that it fits"))
    return tuple(out)


def _fix_kind(text: str) -> FixKind:
    """A best guess at a taxonomy fix's kind (they are prose: 'raise --mem-fraction-static')."""
    t = text.strip()
    if t.startswith(("python", "docker ", "huggingface-cli", "nvidia-smi", *(f"{n} " for n in NAMES))):
        return FixKind.COMMAND  # a command line may hold flags of its own (docker run --shm-size)
    if "--" in t:
        return FixKind.FLAG
    if t.startswith(("pip ", "apt ", "apt-get ", "conda ")) or " install " in t:
        return FixKind.PACKAGE
    if any(w.isupper() and "_" in w for w in t.replace("=", " ").split()):
        return FixKind.ENV
    return FixKind.CONFIG
