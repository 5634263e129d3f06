"""`logsense tail UNIT|FILE`: follow a startup live; with --until-ready, gate a script on it.

The command only wires things: it opens a `Source` (logsense.sources.stream), feeds what it
reads to a `Session` (logsense.session: the decision, with no I/O), hands the session's notes
to a view (text or jsonl), runs the --probe when the session asks for it, and keeps the
--resume state (logsense.resume). Exit codes are the session's: with --until-ready 0 ready,
1 failed or stopped, 3 at --timeout or when the input ends first, 4 when the log says ready but
the --probe gets no answer; without it 1 when the last startup failed, else 0 (at the end of
the input), 130 on Ctrl-C. A closed stdout (`| head -1`) ends it with 0; 2 for bad input.
"""

from __future__ import annotations

import os
import select
import signal
import stat
import sys
import time
from collections import deque

from logsense import resume as resume_state
from logsense.commands.common import WallClock, analysis_factory, rules_from_options, source_kind
from logsense.errors import ExitCode, SourceError, UsageError, set_verdict
from logsense.model import Item
from logsense.report.console import console
from logsense.report.view import TailView, show
from logsense.scan import keep_for
from logsense.session import QUIET, Note, Session
from logsense.sources import journald
from logsense.sources.stream import FileSource, Gap, JournalItems, Source

TICK = 0.25  # seconds between redraws of the status line


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
    until: str | None = None,
    boot: str | None = None,
    resume: str | None = None,
    from_start: bool = False,
    follow: bool = True,
    rules: list[str] | None = None,
    only_rules: list[str] | None = None,
    verbose: bool = False,
    unit: str | None = None,
    probe: str | None = None,
    probe_api: str = "chat",
    probe_timeout: str = "10s",
    probe_tries: int = 8,
    probe_every: str = "15s",
    probe_any_host: bool = False,
    classifier: bool = True,
    baseline: str | None = None,
) -> int:
    files = list(files or [])
    if unit and target and unit != target:
        raise UsageError(f"give the unit once: -u {unit} or {target}")
    target = unit or target
    kind = source_kind(target, unit, files, directory, since or until or boot, "tail")
    if kind == "file" and target and os.path.isdir(target):
        raise UsageError(f"{target}: is a directory; give a log file, or a systemd unit (-u UNIT)")
    limit = _span("--timeout", timeout) if timeout is not None else None
    if until:
        journald.parse_since(until)  # a bad --until is a usage error before anything is read
    check = None
    if probe:
        if not until_ready:
            raise UsageError("--probe checks readiness: use it with --until-ready")
        from logsense import probe as probing

        check = probing.config(probe, probe_api, _span("--probe-timeout", probe_timeout), probe_tries,
                               _span("--probe-every", probe_every), probe_any_host)
    rs = rules_from_options(rules, only_rules)
    new_pipeline = analysis_factory(rs, classifier, baseline)
    key = resume_state.key_for(kind, target, files, directory)
    state = resume_state.load(resume, key) if resume else None
    say = _Say(verbose)
    if state is not None and state.note:
        say(state.note)
    if kind == "journal":
        backend, reason = journald.choose_backend()
        how = "systemd-python (journal.Reader)" if backend == "systemd" else "journalctl -o json"
        say(f"reading the journal with {how} ({reason})")
    replay = state is not None and not state.fresh and state.start is not None
    source = _open(kind, target, rs, files, directory, since, until, boot, from_start, follow,
                   state.start if replay and state is not None else None, keep_for(new_pipeline()))
    view = _view(fmt)
    clock = WallClock()
    session = Session(rs, new_pipeline, clock, until_ready=until_ready, probe=check is not None,
                      deadline=limit, utc_times=kind == "journal", source_name=source.description,
                      reported=state.reported if state is not None else None)
    session.silent = replay
    saved_line = (state.position or {}).get("line", 0) if replay and state is not None else 0
    old_term = signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, _on_term)
    loop = _Loop(session, source, view, state, check, say, saved_line)
    try:
        view.begin({"kind": kind, "target": os.path.abspath(target) if kind == "file" and target else target,
                    "description": source.description, "start": source.start})
        loop.run()
    except KeyboardInterrupt:
        loop.show(session.interrupt(int(ExitCode.INTERRUPTED)))
    except _Terminated:
        loop.show(session.interrupt(128 + signal.SIGTERM))
    except BrokenPipeError:
        _silence_stdout()
        session.code = _finish_unread(loop) if not follow or until_ready else int(ExitCode.OK)
    finally:
        signal.signal(signal.SIGTERM, old_term)
        loop.save(force=True)
        source.close()
        try:
            view.close()
        except BrokenPipeError:
            _silence_stdout()
    if not follow and not loop.read_lines and not replay and session.code == ExitCode.OK:
        hint = "is the unit name right?" if kind == "journal" else "the file holds no lines of log"
        raise SourceError(f"{source.description}: no log lines ({hint})")
    code = int(session.code if session.code is not None else ExitCode.INTERRUPTED)
    set_verdict(code)  # the output may still be in a buffer whose reader has gone: the exit code stays this
    return code


def _finish_unread(loop: _Loop) -> int:
    """The reader left (`| head -1`) before the verdict: a finite read, or one gated on ready, still ends in
    its verdict's exit code, as analyze's does; the rest goes nowhere."""
    try:
        loop.run()
    except (BrokenPipeError, _Terminated):
        return int(ExitCode.OK)
    except KeyboardInterrupt:
        return int(ExitCode.INTERRUPTED)
    code = loop.session.code
    return int(code) if code is not None else int(ExitCode.OK)


class _Loop:
    """Reads, feeds, shows, saves: the only part of tail that touches the clock and the input."""

    def __init__(self, session: Session, source: Source, view: TailView, state, check, say, saved_line: int) -> None:
        self.session, self.source, self.view, self.state = session, source, view, state
        self.check, self.say = check, say
        self.replay_to = saved_line if session.silent else None
        self.read_lines = False  # a line of log (not only systemd's start / stop words) was read
        self.tries = 0
        self.next_probe: float | None = None
        self.pending: deque[Item | Gap] = deque()  # read, not yet fed

    def run(self) -> None:
        s, src = self.session, self.source
        while s.code is None:
            wait = TICK
            if s.startup.pipeline.framer.busy:
                wait = min(wait, max(s.quiet_since + QUIET - time.monotonic(), 0.0))
            if self.next_probe is not None:
                wait = min(wait, max(self.next_probe - time.monotonic(), 0.0))
            if not self.pending:  # items left over when the output failed mid-batch come first
                self.pending.extend(src.read(wait))
                self._notices()
            while self.pending:
                self._feed(self.pending.popleft())
                if s.code is not None:
                    return
            if self.replay_to is not None and src.caught_up:
                self._resumed()  # the saved position is not there any more: go live from here
            self.show(s.tick(caught_up=src.caught_up, ended=src.ended, idle=src.idle_for()))
            self._probe()
            if s.code is None:
                self.show([s.status()])
                self.save()
                if _stdout_closed():
                    raise BrokenPipeError

    def _feed(self, item: Item | Gap) -> None:
        if isinstance(item, Gap):  # lines of the backlog that no stage needs (no resume replay reads by blocks)
            self.read_lines = self.read_lines or item.nonblank
            self.show(self.session.feed(item))
            return
        self.read_lines = self.read_lines or any(r.message.strip() for r in item.records)
        if self.replay_to is not None and item.where is not None and item.where.get("line", 0) >= self.replay_to:
            self._resumed()
        if self.state is not None and self.state.start is None:
            self.state.began(item.where)
        notes = self.session.feed(item)
        if self.state is not None and any(n.kind == "startup" for n in notes):
            self.state.began(item.where)
        self.show(notes)

    def _resumed(self) -> None:
        self.replay_to = None
        self.show(self.session.resume_done())

    def _probe(self) -> None:
        s = self.session
        if not s.awaiting_probe or self.check is None:
            self.next_probe = None
            return
        now = time.monotonic()
        if self.next_probe is not None and now < self.next_probe:
            return
        from logsense import probe as probing

        self.tries += 1
        result = probing.check(self.check)
        final = result.ok or self.tries >= self.check.tries
        self.show(s.probed(result.ok, f"try {self.tries}/{self.check.tries}: {result.detail}", final))
        self.next_probe = None if final else time.monotonic() + self.check.every

    def show(self, notes: list[Note]) -> None:
        for n in notes:
            if n.kind == "probe":
                continue  # the loop runs it
            if n.kind in ("diagnosis", "verdict", "end") and self.state is not None:
                self.save(force=True)
            show(self.view, n.kind, n.fields)

    def _notices(self) -> None:
        for text in self.source.notices:
            self.say(text)
        self.source.notices.clear()

    def save(self, force: bool = False) -> None:
        if self.state is None or self.replay_to is not None:
            return
        self.state.moved(self.source.position(), self.session.reported, time.monotonic(), force)


def _open(kind, target, rules, files, directory, since, until, boot, from_start, follow, start, keep) -> Source:
    if kind == "file":
        assert target is not None
        return FileSource(target, rules, from_start=from_start, follow=follow, resume_at=start, keep=keep)
    return JournalItems(target, files=files, directory=directory, since=since, until=until, boot=boot,
                        from_start=from_start, follow=follow, cursor=(start or {}).get("cursor"),
                        line=(start or {}).get("line", 0), keep=None if start else keep)


def _span(option: str, text: str) -> float:
    limit = journald.parse_span(text)
    if limit is None or limit <= 0:
        raise UsageError(f"{option} {text!r}: give a time span such as 90s, 20m or 1h")
    return limit


def _on_term(_signum: int, _frame: object) -> None:
    raise _Terminated()


def _view(fmt: str) -> TailView:
    if fmt == "jsonl":
        from logsense.report.jsonl import JsonlView

        return JsonlView()
    from logsense.report.live import LiveView

    return LiveView(console())


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
