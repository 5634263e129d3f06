"""A labelled corpus: every `X.log` / `X.log.gz` with an `X.label.yaml` beside it.

Reads the labels, groups the incidents by where they came from (so evaluation never has one
incident on both sides of a split), turns each log into the classifier's document through
the real Pipeline, and hashes the whole corpus so a shipped model can tell it is current.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from logsense.errors import UsageError
from logsense.learn.features import FEATURE_VERSION, Doc, doc_of_file
from logsense.model import HEALTHY


@dataclass(frozen=True)
class Incident:
    log: Path
    label_path: Path
    name: str  # shown to users: the corpus dir's name + the path inside it ("corpora/memory/x.log")
    cause: str
    origin: str  # recorded | constructed
    group: str  # incidents of one group never straddle a train/test split
    label: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def phase(self) -> str | None:
        return self.label.get("phase")

    @property
    def failed(self) -> bool:
        """The verdict analyze gives this log is `failed` (the corpus tests hold it to its label)."""
        return self.cause != HEALTHY and self.label.get("outcome") != "incomplete"


def find(dirs: Iterable[str | Path]) -> list[Incident]:
    """Every labelled log under the given dirs (or label files), sorted by name; an invalid label is an error."""
    from logsense.corpus import label_paths, logs_for, read_label

    out: list[Incident] = []
    for d in dirs:
        root = Path(d)
        if not root.exists():
            raise UsageError(f"{d}: no such corpus dir")
        base = root.parent if root.is_file() else root
        for lp in label_paths(root):
            logs = logs_for(lp)
            if not logs:
                continue
            label, problems = read_label(lp)
            if label is None:
                p = problems[0]
                raise UsageError(f"{lp}:{p.line or 1}: {p.message} (`logsense check {lp}` lists every problem)")
            log = logs[0]
            name = (Path(base.name) / log.relative_to(base)).as_posix()
            out.append(Incident(log, lp, name, label.cause, label.origin, group_of(label.fields, name), label.fields))
    out.sort(key=lambda i: i.name)
    return out


_ISSUE = re.compile(r"^(https?://[^#?]+?)(?:/files|/commits?/\w+)?/?(?:[#?].*)?$")


def group_of(label: dict[str, Any], name: str) -> str:
    """Where an incident came from: its `group`, else its source URL without the comment anchor,
    else the log's name up to its first dot (`x.short-iso.log` is a variant of `x.log`)."""
    for key in ("group", "source_url"):
        v = label.get(key)
        if isinstance(v, str) and v.strip():
            v = v.strip()
            m = _ISSUE.match(v)
            return (m.group(1) if m else v).lower()
    v = label.get("source")
    if isinstance(v, str) and "://" in v:
        m = _ISSUE.match(v.strip())
        return (m.group(1) if m else v.strip()).lower()
    return "stem:" + _stem(name)


def _stem(name: str) -> str:
    return name.rsplit("/", 1)[-1].split(".", 1)[0]


def groups(incidents: list[Incident], docs: list[Doc] | None = None, near: float = 0.6) -> list[str]:
    """The evaluation group of each incident: those sharing a source, a file stem, or (given their
    documents) nearly the same error lines are one group, so a variant never tests its original."""
    parent = list(range(len(incidents)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def union(a: int, b: int) -> None:
        ra, rb = root(a), root(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)

    first: dict[str, int] = {}
    for i, inc in enumerate(incidents):
        for key in (inc.group, "stem:" + _stem(inc.name)):
            if key in first:
                union(first[key], i)
            else:
                first[key] = i
    if docs is not None:
        sets = [set(d.text.split("\n")[1:]) - {""} for d in docs]
        for i in range(len(sets)):
            for j in range(i + 1, len(sets)):
                a, b = sets[i], sets[j]
                if len(a) >= 3 and len(b) >= 3 and len(a & b) / len(a | b) >= near:
                    union(i, j)
    return [incidents[root(i)].group for i in range(len(incidents))]


def corpus_hash(incidents: list[Incident]) -> str:
    """sha256 over every log and label (and the feature version): a model built from another corpus differs."""
    h = hashlib.sha256(f"features={FEATURE_VERSION}\n".encode())
    for inc in sorted(incidents, key=lambda i: i.name):
        h.update(inc.name.encode() + b"\0")
        h.update(hashlib.sha256(inc.log.read_bytes()).hexdigest().encode())
        h.update(hashlib.sha256(inc.label_path.read_bytes()).hexdigest().encode() + b"\n")
    return h.hexdigest()


def documents(incidents: list[Incident], jobs: int = 1) -> list[Doc]:
    """The document of every incident, in order (a process pool when jobs > 1)."""
    paths = [str(i.log) for i in incidents]
    if jobs <= 1 or len(paths) < 8:
        return [doc_of_file(p) for p in paths]
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=jobs) as ex:
        return list(ex.map(doc_of_file, paths, chunksize=4))


def default_jobs() -> int:
    return max(1, min(4, os.cpu_count() or 1))
