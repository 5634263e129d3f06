"""The rule format as data: every field, its type, default and help (drives loader and docs)."""

from __future__ import annotations

import builtins
from typing import Any

from logsense.model import FixKind, Role, RuleStatus, Value, _set
from logsense.servers import NAMES


class Field(Value):
    """One field of the rule format: its type, whether it is required, its default and help."""

    __slots__ = ("type", "required", "default", "help", "choices", "required_when")
    type: builtins.type | tuple[builtins.type, ...]
    required: bool
    default: Any
    help: str
    choices: tuple[str, ...]
    required_when: str  # for the docs: when an optional field is required after all

    def __init__(self, type: builtins.type | tuple[builtins.type, ...], required: bool = False, default: Any = None,
                 help: str = "", choices: tuple[str, ...] = (), required_when: str = "") -> None:
        _set(self, "type", type)
        _set(self, "required", required)
        _set(self, "default", default)
        _set(self, "help", help)
        _set(self, "choices", choices)
        _set(self, "required_when", required_when)


# What a fatal signal says about a failure whose cause no rule knows (`kind:` of a fatal rule).
FATAL_KINDS = ("exception", "process_exit", "killed", "out_of_memory", "abort", "crash", "timeout", "cuda_error",
               "device_error", "nccl_error", "engine_dead")

RULE_FIELDS: dict[str, Field] = {
    "id": Field(str, True, help="unique across all packs: lowercase letters, digits and '-'"),
    "cause": Field(str, True, help="a cause id from logsense/taxonomy.yaml; an unknown id does not load"),
    "role": Field(str, True, help="root (a cause), symptom (a consequence), fatal (the process failed, cause "
                  "unknown: rules/common/fatal.yaml) or precursor (a warning that predicts a failure)",
                  choices=tuple(Role)),
    "kind": Field(str, False, None, "role fatal only: the kind of failure it shows", choices=FATAL_KINDS,
                  required_when="with `role: fatal`"),
    "priority": Field(int, False, 50, "0..100; decides between two root rules; symptoms never outrank a root"),
    "confidence": Field((int, float), False, 0.8, "0..1: how sure a match makes us; shown with the diagnosis"),
    "title": Field(str, False, None, "one line; defaults to the cause's taxonomy title"),
    "explanation": Field(str, False, "", "why it happens, in plain words"),
    "match": Field(dict, True, help="any / all / within / not: the patterns"),
    "when_phase": Field(list, False, None, "phase names (rules/phases.yaml); the rule fires only in them"),
    "when_facts": Field(dict, False, None, "conditions on facts, as a fix's `if`; checked once the log is read"),
    "fixes": Field(list, False, [], "fixes: kind, value, note, if, fallback (below)"),
    "references": Field(list, False, [], "URLs"),
    "examples": Field(dict, True, help="match / no_match: logs the rule must / must not fire on (below)"),
    "status": Field(str, False, "stable", "stable, experimental (never more than low sure) or deprecated (not run)",
                    choices=tuple(RuleStatus)),
    "use_defaults": Field(bool, False, True, "false: the pack's `defaults:` do not apply to this rule"),
    "once_ready": Field(bool, False, True, "role fatal only; false: the sign means nothing once the server is ready "
                        "(a request's traceback, which the server logs and survives)"),
}

PACK_FIELDS: dict[str, Field] = {
    "rules": Field(list, True, help="the rules of the pack"),
    "defaults": Field(dict, False, None, "merged into every rule of the pack that does not say `use_defaults: false`"),
}

DEFAULTS_FIELDS: dict[str, Field] = {
    "not": Field(list, False, [], "patterns added to each rule's `match.not` (near misses common to the pack)"),
}

MATCH_FIELDS: dict[str, Field] = {
    "any": Field(list, False, [], "patterns; one must match a line of the event", required_when="this or `all`"),
    "all": Field(list, False, [], "patterns; each must match a line of the event (or stream window)"),
    "within": Field(int, False, 0, "lines; with `all`, lets the patterns span events of one stream"),
    "not": Field(list, False, [], "patterns that veto the match when a line of the event matches one"),
    "request": Field(list, False, [], "patterns that mark the event as one request's error, which the server "
                     "logs and survives: they veto the match as `not` does, but `diff` still counts the line an error"),
}

FIX_FIELDS: dict[str, Field] = {
    "kind": Field(str, True, help="flag, package, command, env or config", choices=tuple(FixKind)),
    "value": Field(str, True, help="the fix, a template with {capture} and {fact} names"),
    "note": Field(str, False, None, "a caveat shown with the fix"),
    "if": Field(dict, False, None, "conditions on facts: fact: value or [values]; null = unknown"),
    "fallback": Field(str, False, None, "the value to use when a template name has no value"),
}

EXAMPLE_FIELDS: dict[str, Field] = {
    "match": Field(list, True, help="logs the rule must fire on (at least 2): each a string (one line or several) "
                   "or a mapping with `log`"),
    "no_match": Field(list, True, help="near misses the rule must not fire on (at least 2), as `match`"),
    "todo_match": Field(list, False, [], "known gaps: expected to fail until fixed"),
    "todo_no_match": Field(list, False, [], "known false positives: expected to fail until fixed"),
}

EXAMPLE_ITEM_FIELDS: dict[str, Field] = {
    "log": Field(str, True, help="the log: one line, or a block that frames into one event"),
    "captures": Field(dict, False, None, "captures the match must have: name: value"),
    "name": Field(str, False, None, "names the example in test ids and reports, [a-z0-9][a-z0-9_-]*, unique in "
                  "the rule (else it is numbered)"),
}

PHASE_FIELDS: dict[str, Field] = {
    "phase": Field(str, True, help="phase name"),
    "markers": Field(list, False, [], "patterns whose line moves the timeline into this phase"),
    "ready": Field(bool, False, False, "reaching this phase means the server is ready"),
    "stop": Field(bool, False, False, "entered only once the server is ready: an orderly stop, after which "
                  "nothing counts against the startup"),
    "progress": Field(list, False, [], "patterns with (?P<done>) and (?P<total>) groups: progress"),
    "examples": Field(list, False, [], "lines that must hit a marker"),
    "description": Field(str, False, "", "what happens in this phase"),
    "server": Field(str, False, None, "only lines of this server's log hit these markers", choices=NAMES),
}

