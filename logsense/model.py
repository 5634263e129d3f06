"""The types every stage shares: records in, a report out (the JSON contract)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from logsense.logtime import seconds_between

# The cause of a failure that no rule (nor the classifier) can name.
UNKNOWN = "unknown"
# The label (and the classifier's class) of a startup that did not fail.
HEALTHY = "healthy"


class StrEnum(str, Enum):
    """Members are their strings: equal to them, and shown as them in JSON and f-strings (enum.StrEnum is 3.11+)."""

    def __str__(self) -> str:
        return str(self.value)


class Role(StrEnum):
    ROOT = "root"
    SYMPTOM = "symptom"
    FATAL = "fatal"  # a sign that the process failed, whatever the cause (rules/common/fatal.yaml)


class Origin(StrEnum):
    RULE = "rule"
    CLASSIFIER = "classifier"


class Status(StrEnum):
    FAILED = "failed"
    READY = "ready"
    INCOMPLETE = "incomplete"


class RuleStatus(StrEnum):
    """How far a rule is trusted, as in Sigma: rule-format.md says what each does."""

    STABLE = "stable"
    EXPERIMENTAL = "experimental"  # reported, but never more than "low" sure
    DEPRECATED = "deprecated"  # checked when its pack loads, never run


class EventKind(StrEnum):
    LINE = "line"
    TRACEBACK = "traceback"
    COMPILE = "compile"  # a compiler's error block (gcc/nvcc/Triton)


class FixKind(StrEnum):
    FLAG = "flag"
    PACKAGE = "package"
    COMMAND = "command"
    ENV = "env"
    CONFIG = "config"


class UpdateKind(StrEnum):
    PHASE = "phase"
    DIAGNOSIS = "diagnosis"
    READY = "ready"
    PROGRESS = "progress"


@dataclass(frozen=True, slots=True)
class Record:
    """One log line as read: its raw text, its message without prefixes, and what the source knew."""

    line: int
    raw: str
    message: str
    time: str | None = None
    host: str | None = None
    ident: str | None = None
    pid: str | None = None
    rank: str | None = None
    unit: str | None = None
    prefixed: bool = False  # the line began a new record of the server's own logger ("[time ranks]" ...)
    cursor: str | None = None
    server: str | None = None  # the server whose own log prefix the line carried: "sglang" | "vllm"


@dataclass(frozen=True, slots=True)
class Event:
    """A unit of meaning: one line, or a whole traceback / compiler error, from one stream."""

    kind: EventKind
    records: tuple[Record, ...]
    phase: str = "import"

    @property
    def first_line(self) -> int:
        return self.records[0].line

    @property
    def last_line(self) -> int:
        return self.records[-1].line

    @property
    def rank(self) -> str | None:
        return self.records[0].rank

    @property
    def pid(self) -> str | None:
        return self.records[0].pid


@dataclass
class RuleProblem:
    """A rule (or phase marker) that misbehaved in a run, e.g. a pattern that timed out and was disabled."""

    rule: str
    line: int
    reason: str


@dataclass(frozen=True, slots=True)
class Evidence:
    line: int
    text: str


@dataclass(frozen=True, slots=True)
class Fix:
    kind: FixKind
    value: str
    note: str | None = None


@dataclass(frozen=True, slots=True)
class Match:
    """A rule that fired on an event, with what it captured."""

    rule_id: str
    cause: str
    role: Role
    priority: int
    confidence: float
    event: Event
    evidence: tuple[Evidence, ...]
    captures: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Diagnosis:
    cause: str
    rule: str | None
    root: bool
    origin: Origin
    confidence: float
    title: str
    explanation: str
    phase: str | None
    evidence: tuple[Evidence, ...]
    fixes: tuple[Fix, ...]
    ranks: tuple[str, ...] = ()
    occurrences: int = 1
    explains: tuple[str, ...] = ()  # symptom rule ids this root cause accounts for
    nearest: str | None = None  # classifier: the closest corpus incident
    kind: str | None = None  # cause unknown: the kind of failure its fatal signal shows (exception, killed, ...)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "cause": self.cause,
            "rule": self.rule,
            "root": self.root,
            "origin": self.origin.value,
            "confidence": round(self.confidence, 3),
            "title": self.title,
            "explanation": self.explanation,
            "phase": self.phase,
            "evidence": [{"line": e.line, "text": e.text} for e in self.evidence],
            "fixes": [
                {"kind": f.kind, "value": f.value, **({"note": f.note} if f.note else {})} for f in self.fixes
            ],
            "ranks": list(self.ranks),
            "occurrences": self.occurrences,
        }
        if self.explains:
            out["explains"] = list(self.explains)
        if self.nearest:
            out["nearest"] = self.nearest
        if self.kind:
            out["kind"] = self.kind
        return out


@dataclass(frozen=True, slots=True)
class Phase:
    name: str
    start: str | None
    end: str | None
    start_line: int
    ready: bool = False  # the phase file marks it `ready: true`: the server serves from here on

    @property
    def seconds(self) -> float | None:
        return seconds_between(self.start, self.end)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "start": self.start,
            "end": self.end,
            "start_line": self.start_line,
            "seconds": self.seconds,
        }


@dataclass(frozen=True, slots=True)
class Update:
    """What feeding one record changed, for live consumers (tail)."""

    kind: UpdateKind
    phase: str | None = None
    diagnosis: Diagnosis | None = None
    progress: tuple[int, int] | None = None
    line: int | None = None
    time: str | None = None


@dataclass(frozen=True, slots=True)
class Report:
    source: str
    status: Status
    phase: str | None
    phases: tuple[Phase, ...]
    diagnoses: tuple[Diagnosis, ...]
    facts: dict[str, Any]
    lines: int

    @property
    def root(self) -> Diagnosis | None:
        return next((d for d in self.diagnoses if d.root), None)

    @property
    def failed(self) -> bool:
        return self.root is not None

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "status": self.status.value,
            "phase": self.phase,
            "phases": [p.to_json() for p in self.phases],
            "diagnoses": [d.to_json() for d in self.diagnoses],
            "facts": {k: v for k, v in self.facts.items() if not k.startswith("arg_")},
            "lines": self.lines,
        }
