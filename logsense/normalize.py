"""Raw lines -> Records: strips journalctl, docker and SGLang prefixes into fields, ANSI and `\\r` bars.

The format is detected line by line, so a paste that mixes `journalctl -o short`, `-o cat`
and plain SGLang output still normalizes. The raw line and its number are always kept.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime, timezone

from logsense import exception_line, re_cache
from logsense.linecut import cut_text
from logsense.logtime import PLACEHOLDER_YEAR
from logsense.memo import text_memo
from logsense.model import Record
from logsense.servers import SERVERS

# CSI, OSC (title, hyperlinks), and other two-byte escapes; then every other C0 control but \t and \r.
_ANSI = re_cache.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]|\x9b[0-?]*[ -/]*[@-~]")
# C0 but \t and \r, DEL, C1; bidi overrides and isolates (text that reads other than it is) and zero-width
# characters (text that hides inside other text): none belongs in a log line or on a terminal.
_CONTROL = re_cache.compile(r"[\x00-\x08\x0b-\x0c\x0e-\x1f\x7f-\x9f\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")

_JOURNAL = re_cache.compile(
    r"(?P<ts>"
    r"[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d(?:\.\d{1,6})?"  # short, short-precise
    r"|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d{1,6})?[+-]\d\d:?\d\d"  # short-iso(-precise); "Z" is docker's
    r"|\[\s*\d+\.\d{6}\]"  # short-monotonic
    r"|\d{9,11}\.\d{6}"  # short-unix
    r"|[A-Z][a-z]{2} \d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{1,6})? [A-Za-z0-9+\-]+"  # short-full
    r") (?:(?P<host>[^\s\[\]:]+) )?"
    # an identifier without [pid] that looks like an exception class is log text, not a journal field
    rf"(?P<ident>(?![\w.]*(?:{exception_line.KIND}|Warning): )[^\s\[\]:]+)(?:\[(?P<pid>\d+)\])?: "
)
_JOURNAL_META = re_cache.compile(r"^-- (?:Boot [0-9a-f]{32}|Reboot|No entries|Logs begin at .*|Journal begins at .*|.* --)\s*--?$")

# `docker logs --timestamps`, Docker Desktop's column, docker compose's "service  | ", a log viewer's time
# column ("2026-04-16 14:23:34.047 | ", FastChat's "2024-05-26 14:51:19 | ERROR | stderr | ") and
# `kubectl logs --prefix`'s "[pod/name/container] ".
_DOCKER = re_cache.compile(
    r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)? \| ?(?:[A-Z]+ +\| [\w.-]+ +\| ?)?"
    r"|(?:\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z |\d{4}-\d\d-\d\d \d\d:\d\d:\d\d (?=\[\d{4}-|$|\S))"
    r"|(?P<svc>[A-Za-z0-9][\w.]*[-_][\w.-]*)\s+\| ?"
    r"|\[pod/[\w.-]+/[\w.-]+\] "
    # Python logging's default format, as a launcher relays a server's lines (olmocr, modelscope):
    # "2025-03-03 17:23:05,698 - __main__ - INFO - <the server's line>"
    r"|\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} - [\w.<>-]+ - (?:DEBUG|INFO|WARNING|ERROR|CRITICAL) - "
)
# Xinference (xoscar) re-raises an actor's exception with the actor's address in front of its text:
# "ImportError: [address=0.0.0.0:40067, pid=32176] cannot import name ...": the text is the exception's own
_ACTOR_ADDRESS = re_cache.compile(r"(?<=: )\[address=[^\]\s]+, pid=\d+\] ")
# Launchers that prefix each line of a process: torchrun's "[rank3]: " and mpirun's "[1,0]<stderr>:".
_LAUNCHER = re_cache.compile(r"\[rank(?P<rank>\d+)\]: ?|\[\d+,(?P<mpi>\d+)\]<std(?:out|err)>: ?")
# A pasted log may be indented as a whole (a list item, a code block): a line that starts a record or ends a
# traceback is never indented in the log itself, so its indent is the paste's. A traceback's own frame and
# code lines keep theirs (their indent is how the exception line is told apart).
_PASTE_HEAD = re_cache.compile(
    "|".join(server.paste_heads for server in SERVERS) + r"|\[rank\d+\]:|\[\d+,\d+\]<std|\[pod/"
    r"|\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d|[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d |[A-Za-z0-9][\w.]*[-_][\w.-]*\s+\| "
    r"|Traceback \(most recent call last\):|During handling of the above|The above exception was the direct"
    rf"|{exception_line.TYPED_NAME}(?::|$)"
    r"|Fatal Python error: |Aborted|Killed$|Segmentation fault|usage: |\S+: error: "
)
# rsyslog writes control characters as "#ooo": ESC "#033", CR "#015".
_SYSLOG_ANSI = re_cache.compile(r"#033\[[0-?]*[ -/]*[@-~]")
# `cat -v` and some log viewers write ESC as the two characters "^[" (colours, cursor moves).
_CARET_ANSI = re_cache.compile(r"\^\[\[[0-9;]*[A-Za-z]")
# A tqdm bar with a log record glued after it (no newline between them).
_GLUED = re_cache.compile(
    r"(?<=[\]|%])\s*(?=" + "|".join(f"(?:{s.glued_head})" for s in SERVERS if s.glued_head) + ")"
)
_MONTHS = {m: i for i, m in enumerate("Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split(), 1)}

_YEARLESS = re_cache.compile(r"2000-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?")

MAX_LINE = 64 * 1024  # longer lines keep their two ends for matching; the server_args dump is ~10 KB


def is_journal_meta(text: str) -> bool:
    """A line journalctl writes about the journal itself ("-- No entries --", "-- Boot ... --"), not a log line."""
    return text.startswith("-- ") and _JOURNAL_META.match(text) is not None


def line_times(line_no: int, raw: bytes) -> list[str]:
    """The times of one line's records (a line's bytes, without its newline), read by itself."""
    return [r.time for r in Normalizer().feed(line_no, raw.decode("utf-8", "replace")) if r.time]


def clean(text: str) -> str:
    """Remove terminal escape sequences and control characters (keeps \\t and \\r)."""
    if "\x1b" in text or "\x9b" in text:
        text = _ANSI.sub("", text)
    if "#0" in text:
        text = _SYSLOG_ANSI.sub("", text)
        if text.endswith("#015"):
            text = text[:-4]
    if "^[[" in text:
        text = _CARET_ANSI.sub("", text)
    if text.isprintable():  # every character _CONTROL removes is unprintable: most lines skip the regex
        return text
    return _CONTROL.sub("", text)


def shown_time(t: str | None) -> str | None:
    """A log time as reports print it: one whose year the log never gave is printed without one."""
    if t and t.startswith(PLACEHOLDER_YEAR) and _YEARLESS.fullmatch(t):
        return t[len(PLACEHOLDER_YEAR):]
    return t


def in_year(t: str, year: int | str | None) -> str:
    """A time read without its year put in `year` (one the log gave elsewhere); any other time as it is."""
    return f"{year}-{t[len(PLACEHOLDER_YEAR):]}" if year is not None and t.startswith(PLACEHOLDER_YEAR) else t


def fold_progress(text: str) -> str:
    """Keep what a terminal would show of a `\\r`-redrawn line: its last non-empty segment."""
    if "\r" not in text:
        return text
    parts = [p for p in text.split("\r") if p.strip()]
    return parts[-1] if parts else ""


def _journal_time(ts: str) -> str | None:
    try:
        if ts[0] == "[":
            return None  # monotonic seconds: not a wall clock
        full = ts[4:8].isdigit() and ts[8:9] == "-"  # short-full: "Thu 2026-01-01 00:00:00 UTC"
        if ts[:3] in _MONTHS and ts[3] == " " and not full:
            # short: no year; the year only matters across New Year, so a fixed one keeps order.
            mon, day, clock = ts[:3], ts[4:6].strip(), ts[7:]
            return f"{PLACEHOLDER_YEAR}{_MONTHS[mon]:02d}-{int(day):02d} {clock}"
        if full:
            return ts.split(" ", 1)[1].rsplit(" ", 1)[0]
        if "T" in ts[:11]:
            frac = re.match(r"[.,]\d+", ts[19:])
            return ts[:19].replace("T", " ") + (frac.group(0)[:7].replace(",", ".") if frac else "")
        return datetime.fromtimestamp(float(ts), tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")
    except (ValueError, KeyError, IndexError, OverflowError):
        return None


_journal_times = text_memo(_journal_time, 64)  # the ranks of a server print many lines a second


def journal_message(entry: dict) -> str | None:
    """A journal entry's MESSAGE as text: journalctl gives it as a string, or as a list of bytes when it is not
    valid UTF-8; None when the entry has none (journalctl leaves out a message over 4096 bytes without --all)."""
    m = entry.get("MESSAGE")
    if m is None or isinstance(m, str):
        return m
    if isinstance(m, list):
        try:
            return bytes(int(b) & 0xFF for b in m).decode("utf-8", "replace")
        except (TypeError, ValueError):
            return ""
    return str(m)


class Normalizer:
    """Stateful per input: remembers the journal prefix width to join continuation lines."""

    def __init__(self) -> None:
        self._last: Record | None = None
        self._indent = 0  # width of the last journal prefix; deeper-indented lines continue it
        self._formats = tuple(server.line_format() for server in SERVERS)  # each server's prefix reader

    def feed(self, line_no: int, raw: str) -> list[Record]:
        """Normalize one raw line (without its newline) into zero, one or more records."""
        if len(raw) > MAX_LINE:
            raw = cut_text(raw, MAX_LINE)
        if raw.endswith("\r"):
            raw = raw.rstrip("\r")
        if raw[:1] == "{" and raw.rstrip()[-1:] == "}":
            entry = _json_entry(raw)
            if entry is not None:
                return list(self._from_json(line_no, raw, entry))
        text = clean(raw)
        if text[:1] == ">" and text[1:2] in ("", " "):
            text = text[2:]  # a markdown quote
        fields: dict[str, str | None] = {}
        if text[:1] in (" ", "\t") and not (self._indent and text[: self._indent].isspace()):
            text = _unindented(text)  # not journalctl's continuation of an entry
        m = _JOURNAL.match(text)
        if m:
            fields = {"time": _journal_times(m["ts"]), "host": m["host"], "ident": m["ident"], "pid": m["pid"]}
            self._indent = m.end()
            text = text[m.end() :]
        elif is_journal_meta(text):
            return []
        elif self._indent and self._last is not None and text[: self._indent].isspace() and text.strip():
            # journalctl's continuation of a multi-line entry: indented to the message column.
            last = self._last
            fields = {"time": last.time, "host": last.host, "ident": last.ident, "pid": last.pid}
            text = text[self._indent :]
            return [self._record(line_no, raw, fold_progress(text), fields, continuation_of=last)]
        else:
            self._indent = 0
        text = _undocked(text, fields)
        text = fold_progress(text)
        glued = _GLUED.search(text, 1) if "[" in text[1:] else None
        if glued:
            head, tail = text[: glued.start()], text[glued.end() :]
            return [self._record(line_no, raw, head, fields), self._record(line_no, raw, tail, fields)]
        return [self._record(line_no, raw, text, fields)]

    def _record(
        self,
        line_no: int,
        raw: str,
        text: str,
        fields: dict[str, str | None],
        continuation_of: Record | None = None,
        unit: str | None = None,
        cursor: str | None = None,
    ) -> Record:
        time = fields.get("time")
        pid = fields.get("pid")
        rank = None
        prefixed = False
        server = None
        if text[:1] == "[" and (text[1:5] == "rank" or text[1:2].isdigit() and "]<std" in text[:24]):
            lp = _LAUNCHER.match(text)
            if lp:
                # each rank is its own stream, as each vLLM worker is
                pid = f"{pid or ''}/{'rank' if lp['rank'] else 'mpi'}{lp['rank'] or lp['mpi']}"
                text = text[lp.end() :]
        for fmt in self._formats:
            p = fmt.read(text, time, pid)
            if p is not None:
                text, time, pid, rank, server, prefixed = p
                break
        else:
            if continuation_of is not None:
                rank = continuation_of.rank
        if "[address=" in text:
            text = _ACTOR_ADDRESS.sub("", text)
        rec = Record(
            line=line_no,
            raw=raw,
            message=text,
            time=time,
            host=fields.get("host"),
            ident=fields.get("ident"),
            pid=pid,
            rank=rank,
            unit=unit,
            prefixed=prefixed,
            cursor=cursor,
            server=server,
        )
        self._last = rec
        return rec

    def feed_entry(self, line_no: int, entry: dict) -> list[Record]:
        """A journal entry (fields as `journalctl -o json` gives them) -> one record per MESSAGE line,
        numbered from line_no, each with its own line as raw text (a live journal has no file lines)."""
        return list(self._from_json(line_no, None, entry))

    def _from_json(self, line_no: int, raw: str | None, entry: dict) -> Iterator[Record]:
        message = journal_message(entry)
        if message is None:
            message = "[message not shown: over 4096 bytes; use journalctl --all]"
        ts = entry.get("__REALTIME_TIMESTAMP")
        time = None
        if isinstance(ts, str) and ts.isdigit():
            time = datetime.fromtimestamp(int(ts) / 1e6, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")
        pid = entry.get("_PID")
        fields = {
            "time": time,
            "host": entry.get("_HOSTNAME"),
            "ident": entry.get("SYSLOG_IDENTIFIER"),
            "pid": str(pid) if pid is not None else None,
        }
        unit = entry.get("_SYSTEMD_UNIT") or entry.get("UNIT") or entry.get("OBJECT_SYSTEMD_UNIT")
        cursor = entry.get("__CURSOR")
        self._indent = 0
        first = None
        for i, part in enumerate(message.split("\n")):
            text = fold_progress(_undocked(clean(part), fields))
            at, src = (line_no, raw) if raw is not None else (line_no + i, part)
            rec = self._record(at, src, text, fields, continuation_of=first, unit=unit, cursor=cursor)
            first = first or rec
            yield rec


def _unindented(text: str) -> str:
    """A line of a log pasted with an indent, without it when the line shows it is the paste's."""
    bare = text.lstrip(" \t")
    return bare if _PASTE_HEAD.match(bare) else text


def _undocked(text: str, fields: dict[str, str | None]) -> str:
    """Without docker's and docker compose's prefixes (`compose logs -t` puts both: service, then time)."""
    for _ in range(2):
        d = _DOCKER.match(text)
        if not d:
            break
        text = text[d.end() :]
        if d["svc"]:
            fields.setdefault("ident", d["svc"])
    return text


def _json_entry(raw: str) -> dict | None:
    import json  # only journalctl's JSON output needs it: not imported by every start

    try:
        entry = json.loads(raw)
    except ValueError:
        return None
    if isinstance(entry, dict) and ("MESSAGE" in entry or "__CURSOR" in entry):
        return entry
    return None
