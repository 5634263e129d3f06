"""Per-package data: which files are on the startup path (by area) and the reviewed triage list."""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from logsense.errors import UsageError

_TRIAGE_KEYS = {"files", "scope", "message", "reason"}
DATA_DIR = Path(__file__).resolve().parent.parent / "data" / "coverage"


@dataclass(frozen=True)
class TriageEntry:
    """Messages reviewed as not startup failures: where (files globs, scope regex), which text, and why."""

    files: tuple[str, ...]
    scope: re.Pattern[str] | None  # searched in Class.function; None: any
    message: re.Pattern[str] | None  # searched in the template text; None: any
    reason: str

    def matches(self, file: str, scope: str, text: str) -> bool:
        return (any(fnmatch.fnmatchcase(file, g) for g in self.files)
                and (self.scope is None or bool(self.scope.search(scope)))
                and (self.message is None or bool(self.message.search(text))))


@dataclass(frozen=True)
class PackageConfig:
    package: str
    log_prefix: str  # what the server puts before a logged line
    areas: dict[str, tuple[str, ...]]  # area -> fnmatch globs on the path inside the distribution
    exclude: tuple[str, ...]  # globs taken out of every area (tests, paths that run only after ready)
    triage: tuple[TriageEntry, ...]
    source: str

    def area(self, file: str) -> str | None:
        """The first area whose globs match `file`; None when it is not on the startup path."""
        if any(fnmatch.fnmatchcase(file, g) for g in self.exclude):
            return None
        for name, globs in self.areas.items():
            if any(fnmatch.fnmatchcase(file, g) for g in globs):
                return name
        return None

    def triaged(self, file: str, scope: str, text: str) -> TriageEntry | None:
        return next((t for t in self.triage if t.matches(file, scope, text)), None)


def available() -> list[str]:
    return sorted(p.stem for p in DATA_DIR.glob("*.yaml"))


def load_config(package: str | None = None, path: str | Path | None = None) -> PackageConfig:
    """The bundled data for `package`, or the file at `path`; a malformed file is a UsageError."""
    if path is None:
        if not package:
            raise UsageError(f"cannot tell which package this is: name it with --package ({', '.join(available())})")
        path = DATA_DIR / f"{package.replace('-', '_').lower()}.yaml"
        if not path.is_file():
            raise UsageError(f"no startup-path data for package '{package}' (known: {', '.join(available())}); "
                             "give one with --config")
    p = Path(path)
    try:
        doc = yaml.safe_load(p.read_text("utf-8"))
    except (OSError, yaml.YAMLError) as e:
        raise UsageError(f"{p}: cannot read coverage data: {e}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("startup_paths"), dict):
        raise UsageError(f"{p}: needs a 'startup_paths:' mapping of area -> list of globs")
    areas = {}
    for name, globs in doc["startup_paths"].items():
        if not isinstance(globs, list) or not all(isinstance(g, str) for g in globs):
            raise UsageError(f"{p}: startup_paths.{name}: must be a list of globs")
        areas[str(name)] = tuple(globs)
    exclude = doc.get("exclude") or []
    if not isinstance(exclude, list) or not all(isinstance(g, str) for g in exclude):
        raise UsageError(f"{p}: exclude: must be a list of globs")
    triage = []
    for i, t in enumerate(doc.get("triage") or []):
        if not isinstance(t, dict) or not {"files", "reason"} <= t.keys() or not t.keys() <= _TRIAGE_KEYS:
            raise UsageError(f"{p}: triage[{i}]: needs files and reason, may have scope and message "
                             f"(got {', '.join(map(str, t)) if isinstance(t, dict) else t!r})")
        files = t["files"] if isinstance(t["files"], list) else [t["files"]]
        regexes = {}
        for key in ("scope", "message"):
            try:
                regexes[key] = re.compile(str(t[key])) if key in t else None
            except re.error as e:
                raise UsageError(f"{p}: triage[{i}].{key}: not a valid regular expression: {e}") from None
        triage.append(TriageEntry(tuple(map(str, files)), regexes["scope"], regexes["message"], str(t["reason"])))
    return PackageConfig(str(doc.get("package") or p.stem), str(doc.get("log_prefix") or ""), areas,
                         tuple(exclude), tuple(triage), str(p))
