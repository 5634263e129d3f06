"""`logsense label INCIDENT.log --cause X`: write the incident's label file, and say what analyze thinks."""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

from logsense.errors import SourceError, UsageError
from logsense.normalize import clean


def label_text(cause: str, fix_tokens: list[str], phase: str | None, source: str | None, origin: str) -> str:
    """The label file, in the corpus format (cause first; fields left out when not given)."""
    data: dict = {"cause": cause}
    if fix_tokens:
        data["fix_any"] = list(fix_tokens)
    if phase:
        data["phase"] = phase
    data["origin"] = origin
    if source:
        data["source"] = source
    out = []
    for key, value in data.items():
        if isinstance(value, list):  # a short list reads best on one line: fix_any: [a, b]
            out.append(f"{key}: {yaml.safe_dump(value, default_flow_style=True, width=1000).strip()}\n")
        else:
            out.append(yaml.safe_dump({key: value}, default_flow_style=False, allow_unicode=True, width=1000))
    return "".join(out)


def _validate(cause: str, phase: str | None, origin: str) -> None:
    from logsense.corpus import ORIGINS, close_causes
    from logsense.rules import bundled_phase_names
    from logsense.taxonomy import causes

    if cause not in causes():
        raise UsageError(f"--cause: unknown cause '{cause}'{close_causes(cause)}")
    if phase is not None and phase not in (phases := bundled_phase_names()):
        raise UsageError(f"--phase: unknown phase '{phase}' (phases: {', '.join(phases)})")
    if origin not in ORIGINS:
        raise UsageError(f"--origin: '{origin}' is not one of: {', '.join(ORIGINS)}")


def _rules():
    from logsense.errors import RuleErrors
    from logsense.rules import load_rules

    try:
        return load_rules()
    except RuleErrors as e:
        _warn(f"the rule packs have problems ({len(e.errors)}); analyzing with the rules that load")
        return load_rules(strict=False)


def _warn(msg: str) -> None:
    sys.stderr.write(clean(f"warning: {msg}") + "\n")


def main(
    incident: str,
    cause: str,
    fix_tokens: list[str],
    phase: str | None = None,
    source: str | None = None,
    origin: str = "recorded",
    force: bool = False,
) -> int:
    from logsense.analysis import analyze_path
    from logsense.corpus import Label, compare, describe, is_label, label_for
    from logsense.paths import display

    log = Path(incident)
    if is_label(log):
        raise UsageError(f"{incident}: that is a label file; give the incident log beside it")
    if not log.exists():
        raise SourceError(f"{incident}: no such file")
    if log.is_dir():
        raise SourceError(f"{incident}: is a directory (give one incident log)")
    _validate(cause, phase, origin)
    target = label_for(log)
    if target.exists() and not force:
        raise UsageError(f"{display(target)} exists; use --force to overwrite it")
    report, _ = analyze_path(incident, _rules())
    target.write_text(label_text(cause, fix_tokens, phase, source, origin), encoding="utf-8")
    print(clean(f"wrote {display(target)}: cause {cause}"))
    print(clean(f"analyze says: {describe(report)}"))
    if report.root is not None and report.root.fixes:
        print(clean("  fixes: " + "; ".join(f.value for f in report.root.fixes)))
    for line, msg in compare(Label(cause, tuple(fix_tokens), phase, check_phase=True), report):
        where = f" (line {line})" if line else ""
        _warn(f"the label differs from what analyze says{where}: {msg}")
    sys.stdout.flush()
    return 0
