"""The servers' vocabulary: every failure message on a package's startup path, and which rule knows it.

    report = measure("sglang-0.5.23-...whl")          # or an installed package / source dir
    report.counts()                                    # {Status.COVERED: n, ...}
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from logsense.coverage.classify import Classifier, Status, Verdict
from logsense.coverage.config import PackageConfig, load_config
from logsense.coverage.extract import ParseProblem, Site, extract
from logsense.coverage.sources import open_distribution
from logsense.rules import RuleSet

__all__ = ["CoverageReport", "Site", "Status", "Verdict", "measure", "mine"]

DEFAULT_BUDGET = 900.0  # seconds; a report past it says what it did not read
_UNREAD = "not read, time budget spent"


@dataclass
class CoverageReport:
    package: str
    version: str | None
    source: str
    config: str
    area_names: list[str] = field(default_factory=list)  # in the order the package data lists them
    verdicts: list[Verdict] = field(default_factory=list)
    files: int = 0  # startup-path files read
    problems: list[str] = field(default_factory=list)  # files skipped, with why
    unfinished: str | None = None  # why the report stopped early

    def counts(self, area: str | None = None) -> Counter[Status]:
        return Counter(v.status for v in self.verdicts if area is None or v.area == area)

    @property
    def areas(self) -> list[str]:
        present = {v.area for v in self.verdicts}
        return [a for a in self.area_names if a in present]

    @property
    def title(self) -> str:
        return f"{self.package} {self.version or '(version unknown)'}"


def mine(path: str | Path, config: PackageConfig, problems: list[str] | None = None,
         deadline: float | None = None) -> list[tuple[Site, str]]:
    """(site, area) for every failure message in the startup-path files of a wheel or directory."""
    dist = open_distribution(path, config.package)
    out: list[tuple[Site, str]] = []
    problems = problems if problems is not None else []
    for rel, data in dist.files():
        area = config.area(rel)
        if area is None:
            continue
        if deadline is not None and time.monotonic() > deadline:
            problems.append(f"{rel}: {_UNREAD}")
            continue
        try:
            out.extend((s, area) for s in extract(rel, data))
        except ParseProblem as e:
            problems.append(str(e))
    problems.extend(dist.skipped)
    return out


def measure(path: str | Path, rules: RuleSet, package: str | None = None, config_path: str | Path | None = None,
            budget: float = DEFAULT_BUDGET) -> CoverageReport:
    """Mine the startup-path messages of `path` and classify each against `rules`."""
    dist = open_distribution(path, package)
    config = load_config(package or dist.name, config_path)
    start = time.monotonic()
    deadline = start + budget
    report = CoverageReport(config.package, dist.version, str(path), config.source, list(config.areas))
    sites = mine(path, config, report.problems, deadline)
    report.files = len({s.file for s, _ in sites})
    classifier = Classifier(rules, config)
    for i, (site, area) in enumerate(sites):
        if time.monotonic() > deadline:
            report.unfinished = f"time budget of {budget:.0f}s spent: {len(sites) - i} sites not classified"
            break
        report.verdicts.append(classifier.classify(site, area))
    unread = sum(1 for p in report.problems if p.endswith(_UNREAD))
    if unread and report.unfinished is None:
        report.unfinished = f"time budget of {budget:.0f}s spent: {unread} files not read"
    return report
