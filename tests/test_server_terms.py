"""What a diagnosis says on one server's log names none of the other server's flags, packages or variables.

Fixes are rendered per server (flags mapped, the other server's commands and variables dropped,
`if: {server: ...}`); titles, explanations and notes are not, so they must hold for every server
whose logs the rule fires on. A rule fires on a server's logs unless its `when_facts` rule that
server out (not for fatal signals, which ignore them) or every one of its match examples is signed by the other server (its banner, its
package paths, its own error wording: facts.server).
"""

from __future__ import annotations

import re
from functools import cache

import pytest

from logsense.examples import example_lines
from logsense.fixes import in_server_terms
from logsense.flags import FLAG, has_flag
from logsense.learn.classifier import usual_fixes
from logsense.rules.loader import TEMPLATE_NAME, RuleSpec
from logsense.taxonomy import causes
from logsense.taxonomy import title as cause_title

SERVERS = ("sglang", "vllm")
OTHER = {"sglang": "vllm", "vllm": "sglang"}
# The other server's own names: its package, its kernels' package, its environment variables.
FOREIGN_NAMES = {
    "vllm": re.compile(r"(?i)(?<![\w.-])sglang(?![\w-])|\bSGL(?:ANG)?_[A-Z]\w*|\bsgl[-_]kernel\b"),
    "sglang": re.compile(r"(?i)(?<![\w.-])vllm(?![\w-])|\bVLLM_[A-Z]\w*"),
}


def foreign_terms(text: str, server: str) -> list[str]:
    """The other server's names and flags in `text` (a flag both servers have, or neither, is not foreign)."""
    found = [m.group(0) for m in FOREIGN_NAMES[server].finditer(text)]
    for m in FLAG.finditer(text):
        before = text[m.start() - 1] if m.start() else " "
        if before.isalnum() or before in "-_/.":
            continue  # "--" inside a word or a path
        flag = m.group(0)
        if not has_flag(server, flag) and has_flag(OTHER[server], flag):
            found.append(flag)
    return found


def quoted(term: str, spec: RuleSpec) -> bool:
    """True when every match of the rule holds `term` (in each `any` pattern, or in an `all` one): naming
    it quotes the log (SGLang's own "--mem-fraction-static" message, "No module named 'vllm'")."""
    t = term.lower()
    if any(t in p.text.replace("\\", "").lower() for p in spec.all):
        return True
    return bool(spec.any) and all(t in p.text.replace("\\", "").lower() for p in spec.any)


def _placeholders(template: str) -> str:
    """A template with every name filled, so that each fix renders whatever the log gives."""
    return TEMPLATE_NAME.sub(lambda m: "--x" if m.group(2) == "flag" else "x", template)


def said(spec: RuleSpec, server: str) -> list[tuple[str, str]]:
    """(field, text) of what the rule can say on `server`'s log: title, explanation, each fix and note that
    applies there (other conditions of `if:` assumed true), the fix in that server's terms."""
    out = [("title", spec.title or cause_title(spec.cause)), ("explanation", spec.explanation)]
    for i, fix in enumerate(spec.fixes):
        allowed = fix.when.get("server")
        if allowed is not None and server not in allowed:
            continue
        value = in_server_terms(fix.kind, _placeholders(fix.value), server)
        if value is None:
            continue
        out.append((f"fixes[{i}].value", value))
        if fix.note:
            out.append((f"fixes[{i}].note", _placeholders(fix.note)))
    return out


@cache
def _signed_by(log: str) -> str | None:
    """The server a log is signed by (its banner, package paths, own wording), None when it says neither."""
    from logsense.facts import Facts
    from logsense.normalize import Normalizer

    normalizer, facts = Normalizer(), Facts()
    for n, line in example_lines(log):
        for rec in normalizer.feed(n, line):
            facts.feed(rec)
    return facts.server()


def fires_on(spec: RuleSpec) -> list[str]:
    """The servers whose logs the rule can fire on."""
    # a fatal signal decides the verdict whatever the facts say: its when_facts never hide it
    allowed = spec.when_facts.get("server") if spec.role != "fatal" else None
    signed = {_signed_by(ex.log) for ex in spec.examples if ex.kind == "match"}
    return [s for s in SERVERS if (allowed is None or s in allowed) and (s in signed or None in signed)]


def test_foreign_terms_finds_the_other_servers_flags_and_names():
    assert foreign_terms("lower --mem-fraction-static (SGLang)", "vllm") == ["SGLang", "--mem-fraction-static"]
    assert foreign_terms("set VLLM_USE_V1=0 or lower --max-num-seqs", "sglang") == ["VLLM_USE_V1", "--max-num-seqs"]
    assert foreign_terms("pip install -U sgl-kernel", "vllm") == ["sgl-kernel"]
    # both servers' flags, neither's, paths and the server's own words are not foreign
    assert foreign_terms("--trust-remote-code, --kv-cache-dtype fp8, pip install --no-build-isolation", "vllm") == []
    assert foreign_terms("/opt/sglang-env/bin/python, the vllm_flash_attn ops", "sglang") == ["vllm_flash_attn"]
    assert foreign_terms("the server's --max-model-len", "vllm") == []


@pytest.mark.parametrize("server", SERVERS)
def test_rules_speak_the_servers_own_terms(rules, server):
    problems = []
    for rule in rules.rules:
        if rule.spec.status == "deprecated":
            continue
        found = [(field, bad) for field, text in said(rule.spec, server)
                 if (bad := [t for t in foreign_terms(text, server) if not quoted(t, rule.spec)])]
        if found and server in fires_on(rule.spec):  # running the examples is the slow part: only when needed
            problems += [f"{rule.spec.path}:{rule.spec.line}: rule '{rule.id}' {field} on a {server} log: "
                         f"{', '.join(dict.fromkeys(bad))}" for field, bad in found]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("server", SERVERS)
def test_taxonomy_speaks_the_servers_own_terms(server):
    # The classifier names any cause on any server's log: titles must hold for both, fixes in its terms.
    problems = []
    for cause in causes().values():
        if cause.id.startswith(OTHER[server] + "_"):
            continue  # the other server's own cause (sglang_code_bug): its words are that server's
        texts = [("title", cause.title)] + [("fix", f.value) for f in usual_fixes(cause.id, server)]
        for field, text in texts:
            bad = foreign_terms(text, server)
            if bad:
                problems.append(f"{cause.id} {field} on a {server} log: {', '.join(dict.fromkeys(bad))}")
    assert not problems, "\n".join(problems)
