"""Phase markers -> the startup timeline: which phase the server is in, since when, and readiness."""

from __future__ import annotations

from logsense.logtime import PLACEHOLDER_YEAR
from logsense.memo import text_memo
from logsense.model import Phase, Record, RuleProblem
from logsense.normalize import in_year
from logsense.prefilter import LiteralIndex
from logsense.rules.compile import MATCH_TIMEOUT, Pattern
from logsense.rules.phases import PhaseKey, PhaseSpec, phase_index, phase_names

# The phases the timeline itself reads: a new start is a server_args line once the weights began loading.
RESTART_PHASE = "server_args"
RESTART_AFTER = "weight_loading"


def _no_searches(_text: str) -> dict[tuple[str, int, int], object]:
    """A fresh record of marker searches for one message text (filled as markers are tried)."""
    return {}


class Timeline:
    """Moves forward only: a rank that logs 'Load weight begin' late does not pull the phase back."""

    def __init__(self, specs: list[PhaseSpec], index: LiteralIndex[PhaseKey] | None = None) -> None:
        """`index`: `phase_index(specs)`, when the caller keeps one (a RuleSet does)."""
        self.specs = specs
        self.index = index if index is not None else phase_index(specs)
        self.order = {name: i for i, name in enumerate(phase_names(specs))}  # startup order, from the phase file
        self.current = next(iter(self.order), "import")
        self._ready_phases = {s.name for s in specs if s.ready}  # a ready phase lasts as long as the server
        self._stop_phases = {s.name for s in specs if s.stop}
        self.ready = False
        self.ready_line: int | None = None
        self.restarts = 0
        self._phases: list[list] = []  # [name, start time, start line]
        self.first_time: str | None = None
        self.last_time: str | None = None
        self.last_time_line = 0  # the line last_time was read on
        self.year: str | None = None  # the year the log prints; a time read without one is put in it
        self.progress: tuple[int, int] | None = None
        # the server of the last marker line that carried its server's prefix; marker lines are read
        # whether the whole log or the scanner's picks are fed, so this is the same either way
        self.server: str | None = None
        self.disabled: set[tuple[str, int, int]] = set()
        self.problems: list[RuleProblem] = []  # a marker that timed out, disabled for the run
        self._found = text_memo(_no_searches)  # per message text, the marker searches done: key -> match

    def _search(self, key: tuple[str, int, int], p: Pattern, rec: Record, found: dict):
        """`p` searched in `rec.message`, or what that search found before in the same text."""
        if key in self.disabled:
            return None
        if key in found:
            return found[key]
        try:
            m = found[key] = p.regex.search(rec.message, timeout=MATCH_TIMEOUT)
            return m
        except TimeoutError:
            self.disabled.add(key)
            self.problems.append(RuleProblem(f"phase {self.specs[key[1]].name}", rec.line,
                                             f"{p.spec.field} took over {MATCH_TIMEOUT}s on one line (catastrophic "
                                             "backtracking?); marker disabled for this run"))
            return None

    def feed(self, rec: Record) -> tuple[str | None, tuple[int, int] | None]:
        """Returns (the phase entered on this line or None, progress (done, total) or None)."""
        if rec.time:
            self.dated(rec.line, rec.time)
        keys = self.index.keys_in(rec.message)
        if not keys:
            return None, None
        entered = None
        progress = None
        found = self._found(rec.message)
        for key in keys:
            kind, si, pi = key
            spec = self.specs[si]
            if kind == "m":
                if spec.server and spec.server != (rec.server or self.server):
                    continue
                if self._search(key, spec.markers[pi], rec, found):
                    if rec.server:
                        self.server = rec.server
                    if self._enter(spec, rec):
                        entered = spec.name
            elif self.order.get(spec.name, 0) >= self.order.get(self.current, 0):  # not a phase already left
                m = self._search(key, spec.progress[pi], rec, found)
                if m and m.groupdict().get("done") and m.groupdict().get("total"):
                    progress = (int(m["done"]), int(m["total"]))
                    self.progress = progress
        return entered, progress

    @property
    def start_line(self) -> int | None:
        """The line the current startup's first phase began on (None before any)."""
        return self._phases[0][2] if self._phases else None

    def is_ready_phase(self, phase: str) -> bool:
        """True for a phase the phase file marks `ready: true` (whatever its name)."""
        return phase in self._ready_phases

    def dated(self, line: int, time: str) -> None:
        """A line's time, read whole or passed over (it holds nothing else a stage reads): the log's times so far."""
        if line < self.last_time_line:
            return  # a later line's time is already known
        self.last_time, self.last_time_line = time, line
        if self.year is None and not time.startswith(PLACEHOLDER_YEAR):
            self.year = time[:4]
        if self.first_time is None:
            self.first_time = time

    def is_stop_phase(self, phase: str | None) -> bool:
        """True for a phase the phase file marks `stop: true`: the ready server was stopped."""
        return phase in self._stop_phases

    def past(self, phase: str) -> bool:
        """True once the timeline has reached `phase` (never, for a phase the phase file lacks)."""
        return phase in self.order and self.order.get(self.current, 0) >= self.order[phase]

    def _enter(self, spec: PhaseSpec, rec: Record) -> bool:
        if spec.stop and not self.ready:
            return False  # a server that never became ready was not stopped: it failed, or is still starting
        new, cur = self.order.get(spec.name, 0), self.order.get(self.current, 0)
        if new <= cur:
            if spec.name == RESTART_PHASE and self.past(RESTART_AFTER):
                self.restarts += 1  # a new start in the same log: its timeline begins again
                self._phases.clear()
                self.ready = False
                self.ready_line = None
            else:
                return False
        self.current = spec.name
        self.progress = None
        self._phases.append([spec.name, rec.time, rec.line])
        if spec.ready:
            self.ready = True
            self.ready_line = rec.line
        return True

    def phases(self) -> tuple[Phase, ...]:
        out = []
        for i, (name, start, line) in enumerate(self._phases):
            nxt = self._phases[i + 1] if i + 1 < len(self._phases) else None
            end = nxt[1] if nxt else (None if name in self._ready_phases else self.last_time)
            # one clock: a journal time without its year (a traceback line) and the server's own stamp with it
            # are read in the same year, never a phase that ends before it starts
            if start is not None:
                start = in_year(start, self.year)
            if end is not None:
                end = in_year(end, self.year)
            out.append(Phase(name, start, end, line, ready=name in self._ready_phases, stop=name in self._stop_phases))
        return tuple(out)
