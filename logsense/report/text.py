"""The terminal report: root cause first, its fix, the symptoms it explains, then the phases.

Log text is data: it is always put into `Text` objects, never parsed as markup, and the terminal
cleans control sequences out of every piece before it is written.
"""

from __future__ import annotations

from logsense.model import UNKNOWN, Diagnosis, Origin, Report, Role, RuleProblem, Status, sureness
from logsense.normalize import clean
from logsense.report.term import Terminal, Text


def duration(seconds: float | None) -> str:
    """How every report writes a duration: '45 s' under 90 s, '2.0 min' from there on, '?' when unknown."""
    if seconds is None:
        return "?"
    if seconds < 90:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.1f} min"


def phase_summary(report: Report) -> Text:
    t = Text("phases: ", style="bold")
    if not report.phases:
        t.append("no startup phase markers seen")
        return t
    for i, p in enumerate(report.phases):
        if i:
            t.append(" → ", style="dim")
        t.append(p.name)
        if p.seconds is not None and not p.ready:
            t.append(f" {duration(p.seconds)}", style="dim")
    return t


MAX_EVIDENCE_CHARS = 220


def _ranks(ranks: tuple[str, ...]) -> str:
    if len(ranks) <= 3:
        return ", ".join(ranks)
    return f"{len(ranks)} ranks ({ranks[0]} … {ranks[-1]})"


def _short(text: str, limit: int = MAX_EVIDENCE_CHARS) -> str:
    text = clean(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def render_brief(console: Terminal, d: Diagnosis, label: str) -> None:
    """One line for a secondary cause or a symptom."""
    t = Text(f"  {label} ", style="dim")
    t.append(clean(d.title))
    where = f"line {d.evidence[0].line}" if d.evidence else ""
    t.append(f"  ({', '.join(x for x in (where, d.rule or '', _ranks(d.ranks)) if x)})", style="dim")
    console.print(t)


def render_diagnosis(console: Terminal, d: Diagnosis, principal: bool) -> None:
    head = Text()
    if d.root and d.cause == UNKNOWN:
        head.append("✗ " + clean(d.title if d.title.startswith("failed") else "failed, cause unknown"),
                    style="bold red")
    elif d.root:
        head.append("✗ " if principal else "• ", style="bold red" if principal else "red")
        head.append(clean(d.title), style="bold")
        head.append(f"  [{d.cause}]", style="dim")
    elif d.kind == Role.PRECURSOR:
        head.append("  warning: ", style="yellow")
        head.append(clean(d.title))
        head.append(f"  [{d.cause}]", style="dim")
    else:
        head.append("  symptom: ", style="yellow")
        head.append(clean(d.title))
    console.print(head)
    meta = Text("  ")
    if d.phase:
        meta.append(f"phase {d.phase}", style="cyan")
    if d.root:
        meta.append(f"   sure: {sureness(d.confidence)} ({d.confidence:.2f})", style="dim")
        if d.origin is Origin.CLASSIFIER:
            meta.append("  from the learned classifier", style="dim")
    if d.ranks:
        meta.append(f"   ranks: {_ranks(d.ranks)}", style="dim")
    if d.occurrences > 1:
        meta.append(f"   ×{d.occurrences}", style="dim")
    if d.rule:
        meta.append(f"   rule {d.rule}", style="dim")
    console.print(meta)
    if d.explanation and d.root:
        console.print(Text("  " + clean(d.explanation), style="italic"))
    for e in d.evidence[: 6 if principal else 2]:
        line = Text(f"  {e.line:>6} │ ", style="dim")
        line.append(_short(e.text))
        console.print(line)
    if d.fixes:
        console.print(Text("  fix:", style="bold green"))
        for f in d.fixes:
            ft = Text("    ")
            ft.append(clean(f.value), style="bold")
            ft.append(f"  ({f.kind})", style="dim")
            if f.note:
                ft.append(f"  — {clean(f.note)}", style="dim")
            console.print(ft)
    if d.nearest:
        label = "maybe like the known incident" if d.cause == UNKNOWN else "closest known incident"
        console.print(Text(f"  {label}: {clean(d.nearest)}", style="dim"))


def render(report: Report, console: Terminal) -> None:
    """The whole report: the verdict, the principal root cause in full, the others and the symptoms, the phases."""
    title = Text(clean(report.source), style="bold")
    title.append(f"  {report.lines} lines  ", style="dim")
    status_style = {"failed": "bold red", "ready": "bold green", "incomplete": "bold yellow"}[report.status.value]
    title.append(report.status.value, style=status_style)
    server = report.facts.get("server")
    if server:
        version = report.facts.get("server_version")
        title.append(f"  {server}{' ' + clean(str(version)) if version else ''}", style="dim")
    console.print(title)
    roots = [d for d in report.diagnoses if d.root]
    precursors = [d for d in report.diagnoses if not d.root and d.kind == Role.PRECURSOR]
    symptoms = [d for d in report.diagnoses if not d.root and d.kind != Role.PRECURSOR]
    if not roots:
        if report.status is Status.READY and (stop := report.stopped) is not None:
            console.print(Text(f"✓ the server became ready and was then stopped (line {stop.start_line}); "
                               "nothing fatal came before the stop", style="green"))
        elif report.status is Status.READY:
            console.print(Text("✓ the server became ready and nothing fatal followed", style="green"))
        else:
            console.print(Text("… the log ends before the server is ready, with nothing fatal in it: the startup "
                               "may still be running, hung, or the excerpt is cut", style="yellow"))
    if roots:
        render_diagnosis(console, roots[0], principal=True)
    if precursors and report.status is not Status.READY:
        console.print(Text("⚠ the log warns of what may make the startup fail:", style="bold yellow"))
        for d in precursors:
            render_diagnosis(console, d, principal=False)
    for d in roots[1:]:
        render_brief(console, d, f"also: [{d.cause}] sure {sureness(d.confidence)} —")
    if symptoms:
        console.print(Text(f"  {'explains these' if roots and roots[0].cause != 'unknown' else 'seen'} "
                           f"symptom(s):", style="dim"))
    for d in symptoms:
        render_brief(console, d, "·")
    console.print(phase_summary(report))


def problem_lines(problems: list[RuleProblem]) -> list[str]:
    """A rule disabled for the run, one warning line each: for stderr, never the report's stream."""
    return [clean(f"logsense: warning: rule {p.rule} at line {p.line}: {p.reason}") for p in problems]
