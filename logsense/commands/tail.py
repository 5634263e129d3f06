"""`logsense tail UNIT|FILE`: follow a startup live; with --until-ready, gate a script on it.

A unit is read from the journal from its latest start; a file from its latest startup (the
last `server_args` line), or from its start with --from-start. Each record goes through the
same Pipeline as `analyze`; its updates drive a view (text, or jsonl). An open traceback is
closed after QUIET seconds without a new line, so its diagnosis does not wait for the next one.

Exit codes: with --until-ready, 0 when the server is ready, 1 when a root cause is diagnosed
or the unit stops, 3 at --timeout (or, with --no-follow, when the input ends first). Without
it: 130 on Ctrl-C, and with --no-follow 1 when a failure was diagnosed, else 0. A closed
stdout (`| head -1`) ends it with 0. 2 when the journal or file cannot be read.
"""

from __future__ import annotations

import bisect
import json
import os
import select
import signal
import stat
import sys
import time
from datetime import datetime, timezone

from logsense.commands.common import console, rules_from_options
from logsense.errors import ExitCode, UsageError
from logsense.model import Diagnosis, Report, UpdateKind
from logsense.normalize import Normalizer
from logsense.pipeline import Pipeline
from logsense.rules import RuleSet
from logsense.sources import journald
from logsense.sources.follow import FileFollower, last_line_offset

QUIET = 0.5  # seconds without a new line before open events are closed (pipeline.flush)
TICK = 0.25  # seconds between redraws of the status line
LINGER = 2.0  # at most this long after a failure (with --until-ready) for the lines that complete it
SAVE_EVERY = 1.0  # seconds between two writes of the --resume state
SCAN_BYTES = 256 << 20  # how far back from a file's end its latest startup is looked for
SKEW_LIMIT = 12 * 3600  # a log whose times are further than this from the clock is not live
STATE_SCHEMA = 1
_FILE_SUFFIXES = (".log", ".txt", ".out", ".err", ".gz")


class _Terminated(Exception):
    """SIGTERM: stop like Ctrl-C, saving the state."""


def main(
    target: str | None = None,
    until_ready: bool = False,
    timeout: str | None = None,
    fmt: str = "text",
    files: list[str] | None = None,
    directory: str | None = None,
    since: str | None = None,
    boot: str | None = None,
    resume: str | None = None,
    from_start: bool = False,
    follow: bool = True,
    rules: list[str] | None = None,
    only_rules: list[str] | None = None,
    verbose: bool = False,
) -> int:
    files = list(files or [])
    kind = "journal" if files or directory or not _looks_like_path(target) else "file"
    if target is None and kind == "journal" and not (files or directory):
        raise UsageError("give a systemd unit or a log file to follow: logsense tail UNIT | FILE")
    if kind == "file" and (since or boot):
        raise UsageError("--since and --boot read the journal; for a file use --from-start")
    limit = None
    if timeout is not None:
        limit = journald.parse_span(timeout)
        if limit is None or limit <= 0:
            raise UsageError(f"--timeout {timeout!r}: give a time span such as 90s, 20m or 1h")
    rs = rules_from_options(rules, only_rules)
    state = State.load(resume, kind, target, files, directory) if resume else None
    say = _Say(verbose)
    if state is not None and state.note:
        say(state.note)

    view = _view(fmt)
    t = Tail(rs, view, kind=kind, until_ready=until_ready, state=state, say=say)
    old_term = signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, _on_term)
    source = None
    code = int(ExitCode.INTERRUPTED)
    try:
        if kind == "journal":
            source = t.open_journal(target, files, directory, since, boot, from_start, follow)
        else:
            assert target is not None
            source = t.open_file(target, from_start, follow)
        code = t.run(source, limit)
    except KeyboardInterrupt:
        code = int(ExitCode.INTERRUPTED)
        t.end("interrupted", code)
    except _Terminated:
        code = 128 + signal.SIGTERM
        t.end("interrupted", code)
    except BrokenPipeError:
        code = int(ExitCode.OK)
        _silence_stdout()
    finally:
        signal.signal(signal.SIGTERM, old_term)
        if source is not None:
            t.save(force=True)
            source.close()
        try:
            view.close()
        except BrokenPipeError:
            _silence_stdout()
    return code


def _on_term(signum, frame) -> None:
    raise _Terminated()


def _view(fmt: str):
    if fmt == "jsonl":
        from logsense.report.jsonl import JsonlView

        return JsonlView()
    from logsense.report.live import LiveView

    return LiveView(console())


def _looks_like_path(target: str | None) -> bool:
    if target is None:
        return False
    return "/" in target or os.path.exists(target) or target.endswith(_FILE_SUFFIXES)


class _Say:
    """--verbose notes, on stderr so that they never mix with jsonl on stdout."""

    def __init__(self, verbose: bool) -> None:
        self.verbose = verbose

    def __call__(self, text: str) -> None:
        if self.verbose:
            try:
                sys.stderr.write(f"logsense: {text}\n")
                sys.stderr.flush()
            except (OSError, ValueError):
                pass


# -- the --resume state ------------------------------------------------------------------------


class State:
    """A small JSON file: where the current run began, how far it was read, what was reported."""

    def __init__(self, path: str, data: dict, note: str | None = None) -> None:
        self.path = path
        self.data = data
        self.note = note
        self.fresh = not data.get("position")

    @classmethod
    def load(cls, path: str, kind: str, target: str | None, files: list[str], directory: str | None) -> State:
        key = _state_key(kind, target, files, directory)
        try:
            with open(path, encoding="utf-8") as fh:
                data = json.load(fh)
        except FileNotFoundError:
            return cls(path, {"schema": STATE_SCHEMA, **key}, f"{path}: no state yet; it will be written")
        except (OSError, ValueError) as e:
            return cls(path, {"schema": STATE_SCHEMA, **key}, f"{path}: unreadable state ({e}); starting afresh")
        if not isinstance(data, dict) or data.get("schema") != STATE_SCHEMA:
            return cls(path, {"schema": STATE_SCHEMA, **key}, f"{path}: not a logsense tail state; starting afresh")
        if any(data.get(k) != v for k, v in key.items()):
            return cls(path, {"schema": STATE_SCHEMA, **key},
                       f"{path}: the state is for {data.get('kind')} {data.get('target')}; starting afresh")
        return cls(path, data, f"{path}: resuming at {data.get('kind')} position {data.get('line', 0)}")

    @property
    def reported(self) -> set[str]:
        return set(self.data.get("reported") or [])

    def save(self) -> None:
        self.data["updated"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
        tmp = f"{self.path}.tmp{os.getpid()}"
        try:
            with open(tmp, "w", encoding="utf-8") as fh:
                json.dump(self.data, fh, indent=1)
                fh.write("\n")
            os.replace(tmp, self.path)
        except OSError:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def _state_key(kind: str, target: str | None, files: list[str], directory: str | None) -> dict:
    if kind == "file":
        return {"kind": "file", "target": os.path.abspath(target or "")}
    return {"kind": "journal", "target": target, "files": sorted(os.path.abspath(f) for f in files),
            "directory": os.path.abspath(directory) if directory else None}


# -- following ---------------------------------------------------------------------------------


class Tail:
    """Feeds one source through a Pipeline per run, tells the view, and decides when to stop."""

    def __init__(self, rules: RuleSet, view, kind: str, until_ready: bool, state: State | None, say) -> None:
        self.rules = rules
        self.view = view
        self.kind = kind
        self.until_ready = until_ready
        self.state = state
        self.say = say
        self.names: tuple[str, ...] = ()
        self.last_data = time.monotonic()
        self.started = time.monotonic()
        self.skew = 0.0  # wall clock minus the log's time, when the latest timed record came in
        self._clock_seen: str | None = None
        self._saved_at = 0.0
        self._dirty = False
        self._ended = False
        self.source = None
        # while resuming, the records up to the saved position rebuild the run silently
        self.replay_until: dict | None = None
        if state is not None and not state.fresh:
            self.replay_until = {"cursor": state.data.get("position"), "usec": state.data.get("position_usec"),
                                 "line": state.data.get("line", 0)}
        from logsense.learn.hook import default_classifier

        self.classifier = default_classifier()  # a second opinion when no rule knows the failure
        self._new_run(start=None, reported=state.reported if state is not None else set())

    # -- runs --------------------------------------------------------------------------------

    def _new_run(self, start, reported: set[str] | None = None) -> None:
        self.pipeline = Pipeline(self.rules)
        if self.classifier is not None:
            self.pipeline.classifier = self.classifier
            self.classifier.attach(self.pipeline)
        self.normalizer = Normalizer()
        self.line = 0
        self.reported: set[str] = set(reported or ())
        self.ready = False
        self.failed = False
        self.stopped: str | None = None
        self.concluded = False
        self.settle_since: float | None = None
        self.invocation: str | None = None
        self.run_epoch: float | None = None
        self.phase = "import"
        self.phase_epoch: float | None = None
        self.progress: tuple[int, int] | None = None
        self._restarts = 0
        self._boundaries: list[int] = []  # first lines of the startups after the first, in this run
        if self.state is not None and start is not None:
            self.state.data["start"] = start
            self.state.data["reported"] = sorted(self.reported)
            self._dirty = True

    @property
    def replaying(self) -> bool:
        return self.replay_until is not None

    # -- sources -----------------------------------------------------------------------------

    def open_journal(self, unit, files, directory, since, boot, from_start, follow):
        cursor = None
        if self.replaying and self.state is not None:
            cursor = self.state.data.get("start") or self.state.data.get("position")
        if from_start and not since:
            since_arg: str | None = "@0"  # every run in the journal, not just the latest
        else:
            since_arg = since
        backend, reason = journald.choose_backend()
        how = "systemd-python (journal.Reader)" if backend == "systemd" else "journalctl -o json"
        self.say(f"reading the journal with {how} ({reason})")
        src = journald.JournalSource(unit, files=files, directory=directory, since=None if cursor else since_arg,
                                     boot=None if cursor else boot, cursor=cursor, follow=follow, backend=backend)
        self.names = src.names
        first = src.run_start
        if cursor:
            start = "resuming where the last run stopped"
        elif from_start:
            start = "from the start of the journal"
        elif since:
            start = f"since {since}"
        elif not src.names:
            start = "every unit, from the first entry"
        elif first is not None:
            start = f"from its latest start ({_utc(journald.entry_epoch(first))}: {journald.message(first)[:80]})"
        else:
            start = "no entries yet; waiting for them"
        self.view.begin({"kind": "journal", "target": unit, "description": src.description,
                         "backend": "systemd-python" if src.backend == "systemd" else "journalctl", "start": start})
        self.source = src
        return src

    def open_file(self, path: str, from_start: bool, follow: bool):
        try:
            with open(path, "rb") as fh:
                if fh.read(2) == b"\x1f\x8b":
                    raise UsageError(f"{path}: gzip-compressed, not a live log (logsense analyze reads it)")
        except OSError:
            pass  # not there yet, or unreadable: the follower says so
        st = self.state.data if self.state is not None and self.replaying else None
        if st is not None and isinstance(st.get("start"), dict):
            s0 = st["start"]
            ident = (s0["dev"], s0["ino"]) if s0.get("ino") is not None else None
            src = FileFollower(path, offset=s0.get("offset", 0), ident=ident, follow=follow)
            start = "resuming where the last run stopped"
        else:
            offset, start = self._file_start(path, from_start)
            src = FileFollower(path, offset=offset, follow=follow)
        for n in src.notices:
            self.say(n)
        src.notices.clear()
        if not self.replaying:
            pos = src.position()
            self._set_start({"dev": pos["dev"], "ino": pos["ino"], "offset": pos["offset"]})
        self.view.begin({"kind": "file", "target": os.path.abspath(path), "description": os.path.abspath(path),
                         "backend": "file", "start": start})
        self.source = src
        return src

    def _file_start(self, path: str, from_start: bool) -> tuple[int, str]:
        if from_start or not os.path.exists(path):
            return 0, "from its start" if os.path.exists(path) else "waiting for it to appear"
        spec = next((p for p in self.rules.phases if p.name == "server_args"), None)
        literals = [lit.encode() for p in (spec.markers if spec else ()) if not p.icase for lit in p.literals]
        if spec is not None and literals:
            def accept(text: str) -> bool:
                return any(m.regex.search(r.message) for r in Normalizer().feed(0, text) for m in spec.markers)

            off = last_line_offset(path, literals, accept, limit=SCAN_BYTES)
            if off is not None:
                return off, f"from the latest startup (byte {off})"
        size = os.path.getsize(path)
        if size > SCAN_BYTES:
            return size - SCAN_BYTES, f"from its last {SCAN_BYTES >> 20} MiB (no startup marker in them)"
        return 0, "from its start (no startup marker in it)"

    def _set_start(self, start) -> None:
        if self.state is not None:
            self.state.data["start"] = start
            self._dirty = True

    # -- the loop ----------------------------------------------------------------------------

    def run(self, source, limit: float | None) -> int:
        deadline = None if limit is None else self.started + limit
        follower = isinstance(source, FileFollower)
        while True:
            now = time.monotonic()
            wait = TICK
            if self.pipeline.framer.busy:
                wait = min(wait, self.last_data + QUIET - now)
            if deadline is not None:
                wait = min(wait, deadline - now)
            if self.settle_since is not None:
                wait = min(wait, self.last_data + QUIET - now, self.settle_since + LINGER - now)
            items = source.read(max(wait, 0.0))
            now = time.monotonic()
            if follower:
                for n in source.notices:
                    self.say(n)
                source.notices.clear()
            if items:
                self.last_data = now
                for item in items:
                    if follower:
                        self._feed_line(*item)
                    else:
                        self._feed_entry(item)
            elif self.pipeline.framer.busy and now - self.last_data >= QUIET:
                self._handle(self.pipeline.flush())
            if self.replaying and not items:
                self._replay_done()  # the saved position is not there any more: go live from here
            done = source.at_end if follower and not source.follow else getattr(source, "done", False)
            code = self._decide(now, done, deadline)
            if code is not None:
                return code
            self._status(now)
            self.save()
            if _stdout_closed():
                raise BrokenPipeError

    def _decide(self, now: float, done: bool, deadline: float | None) -> int | None:
        if self.replaying:
            return None
        # a unit that stopped is not ready, even if it was; a root cause before ready does not outrank ready
        if (self.stopped and not self.concluded) or (self.until_ready and self.failed and not self.ready):
            if self.settle_since is None:
                self.settle_since = now
            quiet = now - self.last_data >= QUIET and not self.pipeline.framer.busy
            if quiet or now - self.settle_since >= LINGER or done:
                report = self._conclude()
                if self.until_ready:
                    reason = "failed" if self.failed or report.failed else "stopped"
                    self.end(reason, 1, report)
                    return 1
                self.view.summary(report, "stopped")
        elif self.until_ready and self.ready and not self.stopped:
            self.end("ready", 0, self.pipeline.finish(self._source_name()))
            return 0
        if done:
            report = self._conclude()
            if self.until_ready:
                code = 1 if self.stopped or (report.failed and not self.ready) else (0 if self.ready else 3)
            else:
                code = 1 if report.failed else 0
            self.end("input-end", code, report)
            return code
        if deadline is not None and now >= deadline:
            in_phase = self._log_now() - self.phase_epoch if self.phase_epoch is not None else None
            self.view.timeout(now - self.started, self.phase, in_phase)
            self.end("timeout", 3, self.pipeline.finish(self._source_name()))
            return 3
        return None

    def _conclude(self) -> Report:
        """The run's report; root diagnoses not yet said (the 'unknown' one) are said now."""
        self._handle(self.pipeline.flush())
        report = self.pipeline.finish(self._source_name())
        for d in report.diagnoses:
            line = d.evidence[0].line if d.evidence else None
            if d.root and self._key(d, line) not in self.reported:
                self.failed = True
                self._diagnosis(d, line)
        self.concluded = True
        self.settle_since = None
        return report

    def end(self, reason: str, code: int, report: Report | None = None) -> None:
        if self._ended:
            return
        self._ended = True
        try:
            self.view.end(reason, code, report)
        except BrokenPipeError:
            _silence_stdout()

    def _source_name(self) -> str:
        return getattr(self.source, "description", None) or getattr(self.source, "path", "<tail>")

    # -- records -----------------------------------------------------------------------------

    def _feed_line(self, line_no: int, text: str) -> None:
        self.line = line_no
        self._handle(self.pipeline.feed_line(line_no, text))
        self._clock()
        if self.replay_until is not None and line_no >= (self.replay_until.get("line") or 0):
            self._replay_done()

    def _feed_entry(self, entry: dict) -> None:
        life = journald.lifecycle(entry, self.names)
        eid = journald.invocation(entry)
        cursor = entry.get("__CURSOR")
        if (life == "start" and self.stopped) or (eid and self.invocation and eid != self.invocation and life != "stop"):
            if not self.concluded and (self.stopped or self.failed):
                self._conclude()
            self._new_run(start=cursor)
            if not self.replaying:
                self.view.unit_event("start", journald.message(entry), _utc(journald.entry_epoch(entry)))
        if self.state is not None and self.state.data.get("start") is None:
            self._set_start(cursor)
        if eid and self.invocation is None:
            self.invocation = eid
        if life == "stop":
            self._handle(self.pipeline.flush())  # the process is gone: what it was writing is complete
        recs = self.normalizer.feed_entry(self.line + 1, entry)
        for rec in recs:
            self._handle(self.pipeline.feed(rec))
        if recs:
            self.line = recs[-1].line
            self._clock()
        if life == "stop" and not self.stopped:
            self.stopped = journald.message(entry)
            if not self.replaying:
                self.view.unit_event("stop", self.stopped, _utc(journald.entry_epoch(entry)))
        if self.state is not None:
            self.state.data["position"] = cursor
            self.state.data["position_usec"] = entry.get("__REALTIME_TIMESTAMP")
            self.state.data["line"] = self.line
            self._dirty = True
        r = self.replay_until
        if r is not None:
            usec = entry.get("__REALTIME_TIMESTAMP")
            past = isinstance(usec, str) and str(r.get("usec") or "").isdigit() and int(usec) > int(r["usec"])
            if cursor == r.get("cursor") or past:
                self._replay_done()

    def _clock(self) -> None:
        t = self.pipeline.timeline.last_time
        if t is not self._clock_seen:
            self._clock_seen = t
            epoch = _epoch(t, utc=self.kind == "journal")
            if epoch is not None:
                self.skew = time.time() - epoch

    def _replay_done(self) -> None:
        if self.replay_until is None:
            return
        self.replay_until = None
        t = self.pipeline.timeline
        what = f"resumed at line {self.line}, phase {t.current}"
        if self.stopped:
            what += f"; the unit had stopped: {self.stopped}"
        self.view.notice(what)

    def _handle(self, updates) -> None:
        if self.pipeline.timeline.restarts != self._restarts:
            self._restarted()
        for u in self._strongest_first(updates):
            if u.kind is UpdateKind.DIAGNOSIS and u.diagnosis is not None and u.diagnosis.root:
                if not (self._boundaries and (u.line or 0) < self._boundaries[-1]):
                    self.failed = True  # said already (before a --resume) or now; not an earlier startup's
                if self._key(u.diagnosis, u.line) not in self.reported:
                    self._diagnosis(u.diagnosis, u.line)
            elif u.kind in (UpdateKind.PHASE, UpdateKind.READY):
                epoch = _epoch(u.time, utc=self.kind == "journal")
                if self.run_epoch is None:
                    self.run_epoch = _epoch(self.pipeline.timeline.first_time, utc=self.kind == "journal") or epoch
                self.phase = u.phase or self.phase
                self.phase_epoch = epoch if epoch is not None else time.time()
                self.progress = None
                since = epoch - self.run_epoch if epoch is not None and self.run_epoch is not None else None
                if not self.replaying:
                    self.view.phase(self.phase, since, u.line, u.time)
                if u.kind is UpdateKind.READY:
                    self.ready = True
                    if not self.replaying:
                        self.view.ready(self.pipeline.timeline.phases(), since)
            elif u.kind is UpdateKind.PROGRESS and u.progress is not None:
                self.progress = u.progress
                if not self.replaying:
                    self.view.progress(u.phase, *u.progress)

    def _strongest_first(self, updates: list) -> list:
        """One event can fire several root rules: the highest priority is said first (in full)."""
        at = [i for i, u in enumerate(updates) if u.kind is UpdateKind.DIAGNOSIS and u.diagnosis is not None]
        if len(at) < 2:
            return updates

        def rank(u) -> tuple:
            rule = self.rules.get(u.diagnosis.rule) if u.diagnosis.rule else None
            return (u.line or 0, -(rule.spec.priority if rule else 0), -u.diagnosis.confidence)

        out = list(updates)
        for i, u in zip(at, sorted((updates[i] for i in at), key=rank), strict=True):
            out[i] = u
        return out

    def _key(self, d: Diagnosis, line: int | None) -> str:
        """What a diagnosis is said once for: its cause, in the startup its first line is in (a log may
        hold several; a traceback the last one left open is closed after the next one began)."""
        n = bisect.bisect_right(self._boundaries, line if line is not None else self.line)
        return f"{d.cause}#{n}" if n else d.cause

    def _restarted(self) -> None:
        """The log began a new startup (a new server_args after the weights): its own outcome counts."""
        self._restarts = self.pipeline.timeline.restarts
        phases = self.pipeline.timeline.phases()
        self._boundaries.append(phases[0].start_line if phases else self.line)
        self.ready = self.failed = self.concluded = False
        self.settle_since = None
        self.progress = None

    def _diagnosis(self, d: Diagnosis, line: int | None) -> None:
        self.reported.add(self._key(d, line))
        self.view.diagnosis(d, line)
        if self.state is not None:
            self.state.data["reported"] = sorted(self.reported)
            self.save(force=True)

    # -- status and state --------------------------------------------------------------------

    def _log_now(self) -> float:
        """Now, on the log's clock: the wall clock, unless the log's times are far from it (an old log)."""
        return time.time() - self.skew if abs(self.skew) > SKEW_LIMIT else time.time()

    def _status(self, now: float) -> None:
        wall = self._log_now()
        if self.run_epoch is None:
            self.run_epoch = _epoch(self.pipeline.timeline.first_time, utc=self.kind == "journal")
        in_phase = wall - self.phase_epoch if self.phase_epoch is not None else now - self.started
        since = wall - self.run_epoch if self.run_epoch is not None else None
        self.view.status(self.phase, max(in_phase, 0.0), None if since is None else max(since, 0.0), self.progress)

    def save(self, force: bool = False) -> None:
        if self.state is None or not (self._dirty or force):
            return
        now = time.monotonic()
        if not force and now - self._saved_at < SAVE_EVERY:
            return
        if isinstance(self.source, FileFollower):
            pos = self.source.position()
            self.state.data["position"] = pos
            self.state.data["line"] = pos["line"]
            start = self.state.data.get("start")
            if isinstance(start, dict) and start.get("ino") is None and pos["ino"] is not None:
                self.state.data["start"] = {"dev": pos["dev"], "ino": pos["ino"], "offset": 0}  # it appeared
        self.state.data["reported"] = sorted(self.reported)
        self.state.save()
        self._saved_at = now
        self._dirty = False


# -- helpers -----------------------------------------------------------------------------------


def _epoch(t: str | None, utc: bool) -> float | None:
    if not t:
        return None
    try:
        dt = datetime.fromisoformat(t.replace(",", "."))
    except ValueError:
        return None
    if dt.year < 2001:
        return None  # journalctl's short format has no year: not a usable clock
    if dt.tzinfo is None and utc:
        dt = dt.replace(tzinfo=timezone.utc)
    return dt.timestamp()


def _utc(epoch: float | None) -> str | None:
    if epoch is None:
        return None
    return datetime.fromtimestamp(epoch, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _stdout_closed() -> bool:
    """True when stdout is a pipe whose reader has gone (`| head -1`), even if nothing is being written."""
    try:
        fd = sys.stdout.fileno()
        mode = os.fstat(fd).st_mode
    except (OSError, ValueError, AttributeError):
        return False
    if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)):
        return False
    p = select.poll()
    p.register(fd, select.POLLERR | select.POLLHUP)
    return any(ev & (select.POLLERR | select.POLLHUP) for _, ev in p.poll(0))


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
