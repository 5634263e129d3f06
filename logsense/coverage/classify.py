"""Which rule knows each extracted message: feed it, filled in, through the real pipeline."""

from __future__ import annotations

from dataclasses import dataclass

from logsense.coverage.config import PackageConfig
from logsense.coverage.extract import Site
from logsense.model import UNKNOWN, StrEnum
from logsense.model import Status as StartupStatus
from logsense.rules import RuleSet

# values a hole takes in the instances fed to the rules: a number, a size, a word, a dotted name, nothing
FILLERS = ("0", "1024", "x", "foo.bar", "")
SITE_PACKAGES = "/usr/local/lib/python3.11/site-packages/"


class Status(StrEnum):
    COVERED = "covered"  # a root rule names the cause
    TRIAGED = "triaged"  # reviewed: not a startup failure
    GENERIC = "generic"  # caught as a failure, cause unknown
    UNCOVERED = "uncovered"  # a failing startup that ends here would get no diagnosis
    NO_TEXT = "no_text"  # the site prints no fixed text (bare raise, message built elsewhere): not counted


@dataclass(frozen=True)
class Verdict:
    site: Site
    area: str
    status: Status
    rule: str | None = None  # the root rule that fired (covered), or the generic one
    cause: str | None = None
    reason: str | None = None  # the triage reason


def log_lines(site: Site, message: str, log_prefix: str) -> list[str]:
    """How the message shows in a log: a traceback's last line, a logged line, or sys.exit's bare text."""
    lines = message.splitlines() or [""]
    if site.kind in ("raise", "assert") and site.exc != "SystemExit":  # SystemExit prints its text alone
        func = site.scope.rsplit(".", 1)[-1]
        head = [
            "Traceback (most recent call last):",
            f'  File "{SITE_PACKAGES}{site.file}", line {site.line}, in {func}',
        ]
        if site.exc == "KeyError":  # str(KeyError) is the repr of its argument
            lines = [repr(message)]
        return head + [f"{site.exc}: {lines[0]}" if lines[0] else site.exc] + lines[1:]
    if site.kind == "log":
        return [log_prefix + lines[0]] + lines[1:]
    return lines


class Classifier:
    """Runs instances of each message through a fresh pipeline per instance (memoised by text)."""

    def __init__(self, rules: RuleSet, config: PackageConfig) -> None:
        self.rules = rules
        self.config = config
        self._seen: dict[tuple[str, ...], tuple[str | None, str | None, bool]] = {}

    def _run(self, lines: list[str]) -> tuple[str | None, str | None, bool]:
        """(rule, cause, generic) of the root diagnosis, or (None, None, False) when nothing is fatal."""
        key = tuple(lines)
        if key not in self._seen:
            from logsense.pipeline import run

            report = run(lines, self.rules)
            root = report.root
            if root is None:
                # a verdict of failed without a root diagnosis is still a failure the log shows
                self._seen[key] = (None, UNKNOWN if report.status is StartupStatus.FAILED else None, True)
            else:
                generic = root.cause == UNKNOWN  # a fatal signal: it says "failed", not why
                self._seen[key] = (root.rule, root.cause, generic)
        return self._seen[key]

    def classify(self, site: Site, area: str) -> Verdict:
        t = site.template
        if t is None or not t.literal.strip():
            return Verdict(site, area, Status.NO_TEXT)
        generic: tuple[str | None, str | None] | None = None
        for filler in FILLERS if t.holes else ("",):
            rule, cause, is_generic = self._run(log_lines(site, t.fill(filler), self.config.log_prefix))
            if cause is None:
                continue
            if not is_generic:
                return Verdict(site, area, Status.COVERED, rule, cause)
            generic = generic or (rule, cause)
        triage = self.config.triaged(site.file, site.scope, t.text)
        if triage is not None:
            return Verdict(site, area, Status.TRIAGED, reason=triage.reason)
        if generic is not None:
            return Verdict(site, area, Status.GENERIC, generic[0], generic[1])
        return Verdict(site, area, Status.UNCOVERED)
