"""The types every stage shares: records in, a report out (the JSON contract)."""

from __future__ import annotations

from enum import Enum
from operator import attrgetter
from typing import Any, ClassVar, TypeVar

from logsense.logtime import seconds_between

# The cause of a failure that no rule (nor the classifier) can name.
UNKNOWN = "unknown"
# The label (and the classifier's class) of a startup that did not fail.
HEALTHY = "healthy"
# A diagnosis's confidence from which it is said "medium" and "high" sure (below: "low").
MEDIUM_SURE, HIGH_SURE = 0.6, 0.85


def sureness(confidence: float) -> str:
    """How sure a confidence is said to be: "high", "medium" or "low"."""
    if confidence >= HIGH_SURE:
        return "high"
    if confidence >= MEDIUM_SURE:
        return "medium"
    return "low"


class StrEnum(str, Enum):
    """Members are their strings: equal to them, and shown as them in JSON and f-strings (enum.StrEnum is 3.11+)."""

    def __str__(self) -> str:
        return str(self.value)


class Role(StrEnum):
    ROOT = "root"
    SYMPTOM = "symptom"
    FATAL = "fatal"  # a sign that the process failed, whatever the cause (rules/common/fatal.yaml)
    PRECURSOR = "precursor"  # a warning that predicts a failure: shown with its fix, never decides the verdict


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


class FrozenError(AttributeError):
    """An attempt to change a field of a value type: they are immutable, as frozen dataclasses are."""


_set = object.__setattr__  # how a value type's __init__ fills its slots (its own __setattr__ refuses)
V = TypeVar("V", bound="Value")


class Value:
    """Base of the value types below: slotted and immutable, compared, hashed, shown and pickled by their
    fields in order, as a frozen slotted dataclass is. Written out rather than made by the dataclass
    decorator, which `exec`s ~6 methods a class at every start: most of the cost of importing this module."""

    __slots__ = ()
    _fields: ClassVar[tuple[str, ...]] = ()
    _values: ClassVar[Any] = None  # the fields' values as a tuple (an attrgetter)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # a slot whose name starts with "_" is the class's own state, not a field (RuleSpec's undecoded ones)
        slots: tuple[str, ...] = cls.__slots__
        cls._fields = tuple(n for n in slots if not n.startswith("_"))
        cls._values = staticmethod(attrgetter(*cls._fields))

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            return bool(self._values(self) == self._values(other))
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._values(self))

    def __repr__(self) -> str:
        return f"{type(self).__qualname__}({', '.join(f'{n}={getattr(self, n)!r}' for n in self._fields)})"

    def __setattr__(self, name: str, value: Any) -> None:
        raise FrozenError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenError(f"cannot delete field {name!r}")

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), self._values(self))

    def replace(self: V, **changes: Any) -> V:
        """A copy with the given fields changed (what dataclasses.replace does for a dataclass)."""
        values = dict(zip(self._fields, self._values(self), strict=True))
        values.update(changes)
        return type(self)(**values)


class Record(Value):
    """One log line as read: its raw text, its message without prefixes, and what the source knew."""

    __slots__ = ("line", "raw", "message", "time", "host", "ident", "pid", "rank", "unit", "prefixed", "cursor",
                 "server")
    line: int
    raw: str
    message: str
    time: str | None
    host: str | None
    ident: str | None
    pid: str | None
    rank: str | None
    unit: str | None
    prefixed: bool  # the line began a new record of the server's own logger ("[time ranks]" ...)
    cursor: str | None
    server: str | None  # the server whose own log prefix the line carried: "sglang" | "vllm"

    def __init__(self, line: int, raw: str, message: str, time: str | None = None, host: str | None = None,
                 ident: str | None = None, pid: str | None = None, rank: str | None = None, unit: str | None = None,
                 prefixed: bool = False, cursor: str | None = None, server: str | None = None) -> None:
        _set(self, "line", line)
        _set(self, "raw", raw)
        _set(self, "message", message)
        _set(self, "time", time)
        _set(self, "host", host)
        _set(self, "ident", ident)
        _set(self, "pid", pid)
        _set(self, "rank", rank)
        _set(self, "unit", unit)
        _set(self, "prefixed", prefixed)
        _set(self, "cursor", cursor)
        _set(self, "server", server)


class Event(Value):
    """A unit of meaning: one line, or a whole traceback / compiler error, from one stream."""

    __slots__ = ("kind", "records", "phase")
    kind: EventKind
    records: tuple[Record, ...]
    phase: str

    def __init__(self, kind: EventKind, records: tuple[Record, ...], phase: str = "import") -> None:
        _set(self, "kind", kind)
        _set(self, "records", records)
        _set(self, "phase", phase)

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


class RuleProblem:
    """A rule (or phase marker) that misbehaved in a run, e.g. a pattern that timed out and was disabled."""

    __hash__ = None  # type: ignore[assignment]  # mutable and compared by value, so unhashable

    def __init__(self, rule: str, line: int, reason: str) -> None:
        self.rule = rule
        self.line = line
        self.reason = reason

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            return (self.rule, self.line, self.reason) == (other.rule, other.line, other.reason)
        return NotImplemented

    def __repr__(self) -> str:
        return f"RuleProblem(rule={self.rule!r}, line={self.line!r}, reason={self.reason!r})"


class Evidence(Value):
    """A line that shows a diagnosis: its number and text."""

    __slots__ = ("line", "text")
    line: int
    text: str

    def __init__(self, line: int, text: str) -> None:
        _set(self, "line", line)
        _set(self, "text", text)


class Fix(Value):
    """One suggested fix: a flag, a package, a command, an environment variable or a config change."""

    __slots__ = ("kind", "value", "note")
    kind: FixKind
    value: str
    note: str | None

    def __init__(self, kind: FixKind, value: str, note: str | None = None) -> None:
        _set(self, "kind", kind)
        _set(self, "value", value)
        _set(self, "note", note)


class Match(Value):
    """A rule that fired on an event, with what it captured."""

    __slots__ = ("rule_id", "cause", "role", "priority", "confidence", "event", "evidence", "captures")
    rule_id: str
    cause: str
    role: Role
    priority: int
    confidence: float
    event: Event
    evidence: tuple[Evidence, ...]
    captures: dict[str, str]

    def __init__(self, rule_id: str, cause: str, role: Role, priority: int, confidence: float, event: Event,
                 evidence: tuple[Evidence, ...], captures: dict[str, str] | None = None) -> None:
        _set(self, "rule_id", rule_id)
        _set(self, "cause", cause)
        _set(self, "role", role)
        _set(self, "priority", priority)
        _set(self, "confidence", confidence)
        _set(self, "event", event)
        _set(self, "evidence", evidence)
        _set(self, "captures", {} if captures is None else captures)


class Diagnosis(Value):
    """A failure's cause (or "unknown"), how sure, the lines that show it and the fixes."""

    __slots__ = ("cause", "rule", "root", "origin", "confidence", "title", "explanation", "phase", "evidence",
                 "fixes", "ranks", "occurrences", "explains", "nearest", "kind", "likely")
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
    ranks: tuple[str, ...]
    occurrences: int
    explains: tuple[str, ...]  # symptom rule ids this root cause accounts for
    nearest: str | None  # classifier: the closest corpus incident
    kind: str | None  # cause unknown: the kind of failure its fatal signal shows (exception, killed, ...)
    likely: Any  # cause unknown: an anatomy.Likely, the part of the stack that raised it (or None)

    def __init__(self, cause: str, rule: str | None, root: bool, origin: Origin, confidence: float, title: str,
                 explanation: str, phase: str | None, evidence: tuple[Evidence, ...], fixes: tuple[Fix, ...],
                 ranks: tuple[str, ...] = (), occurrences: int = 1, explains: tuple[str, ...] = (),
                 nearest: str | None = None, kind: str | None = None, likely: Any = None) -> None:
        _set(self, "cause", cause)
        _set(self, "rule", rule)
        _set(self, "root", root)
        _set(self, "origin", origin)
        _set(self, "confidence", confidence)
        _set(self, "title", title)
        _set(self, "explanation", explanation)
        _set(self, "phase", phase)
        _set(self, "evidence", evidence)
        _set(self, "fixes", fixes)
        _set(self, "ranks", ranks)
        _set(self, "occurrences", occurrences)
        _set(self, "explains", explains)
        _set(self, "nearest", nearest)
        _set(self, "kind", kind)
        _set(self, "likely", likely)

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
        if self.likely:
            out["likely"] = self.likely.to_json()
        return out


class Phase(Value):
    """A phase of a startup: where it began (time, line) and where it ended."""

    __slots__ = ("name", "start", "end", "start_line", "ready", "stop")
    name: str
    start: str | None
    end: str | None
    start_line: int
    ready: bool  # the phase file marks it `ready: true`: the server serves from here on
    stop: bool  # the phase file marks it `stop: true`: the ready server was stopped in an orderly way

    def __init__(self, name: str, start: str | None, end: str | None, start_line: int, ready: bool = False,
                 stop: bool = False) -> None:
        _set(self, "name", name)
        _set(self, "start", start)
        _set(self, "end", end)
        _set(self, "start_line", start_line)
        _set(self, "ready", ready)
        _set(self, "stop", stop)

    @property
    def seconds(self) -> float | None:
        return seconds_between(self.start, self.end)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "start": self.start,
            "end": self.end,
            "start_line": self.start_line,
            "seconds": self.seconds,
        }
        if self.stop:
            out["stop"] = True
        return out


class Update(Value):
    """What feeding one record changed, for live consumers (tail)."""

    __slots__ = ("kind", "phase", "diagnosis", "progress", "line", "time")
    kind: UpdateKind
    phase: str | None
    diagnosis: Diagnosis | None
    progress: tuple[int, int] | None
    line: int | None
    time: str | None

    def __init__(self, kind: UpdateKind, phase: str | None = None, diagnosis: Diagnosis | None = None,
                 progress: tuple[int, int] | None = None, line: int | None = None, time: str | None = None) -> None:
        _set(self, "kind", kind)
        _set(self, "phase", phase)
        _set(self, "diagnosis", diagnosis)
        _set(self, "progress", progress)
        _set(self, "line", line)
        _set(self, "time", time)


class Report(Value):
    """What an analysis concludes: the verdict, the phases, the diagnoses and the facts."""

    __slots__ = ("source", "status", "phase", "phases", "diagnoses", "facts", "lines")
    source: str
    status: Status
    phase: str | None
    phases: tuple[Phase, ...]
    diagnoses: tuple[Diagnosis, ...]
    facts: dict[str, Any]
    lines: int

    def __init__(self, source: str, status: Status, phase: str | None, phases: tuple[Phase, ...],
                 diagnoses: tuple[Diagnosis, ...], facts: dict[str, Any], lines: int) -> None:
        _set(self, "source", source)
        _set(self, "status", status)
        _set(self, "phase", phase)
        _set(self, "phases", phases)
        _set(self, "diagnoses", diagnoses)
        _set(self, "facts", facts)
        _set(self, "lines", lines)

    @property
    def root(self) -> Diagnosis | None:
        return next((d for d in self.diagnoses if d.root), None)

    @property
    def failed(self) -> bool:
        return self.root is not None

    @property
    def stopped(self) -> Phase | None:
        """The stop phase, when the server became ready and was then stopped in an orderly way."""
        return next((p for p in self.phases if p.stop), None)

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


class Item(Value):
    """What a source read: the records of one line or journal entry, and systemd's word about the unit."""

    __slots__ = ("records", "life", "text", "at", "run", "where")
    records: tuple[Record, ...]
    life: str | None  # "start" | "stop" when systemd says the unit starts or stops
    text: str  # systemd's message, for start and stop
    at: str | None  # when it was said
    run: str | None  # the invocation id, when the source knows it
    where: dict | None  # the source's position where it begins (--resume)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:  # where it begins is the source's bookkeeping, not what was read
            return bool(self._values(self)[:5] == self._values(other)[:5])
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._values(self)[:5])

    def __init__(self, records: tuple[Record, ...] = (), life: str | None = None, text: str = "",
                 at: str | None = None, run: str | None = None, where: dict | None = None) -> None:
        _set(self, "records", records)
        _set(self, "life", life)
        _set(self, "text", text)
        _set(self, "at", at)
        _set(self, "run", run)
        _set(self, "where", where)
