"""Rules that spell out a server's flag list stay in step with logsense/data/flags/<server>.txt."""

from __future__ import annotations

import re

from logsense.flags import DATA_DIR

FIELD_GROUP = re.compile(r"\(\?P<field>([\w|]+)\)")


def _multi_word_fields(server: str) -> set[str]:
    """The server's flags of more than one word, in field spelling (--max-model-len -> max_model_len)."""
    lines = (DATA_DIR / f"{server}.txt").read_text(encoding="utf-8").splitlines()
    fields = {line.split()[0][2:].replace("-", "_") for line in lines if line.startswith("--")}
    return {f for f in fields if "_" in f}


def test_vllm_check_names_field_lists_every_multi_word_vllm_flag(rules):
    # The rule lists the fields by hand (a regex alternation): regenerating vllm.txt must update it.
    rule = rules.get("vllm-config-check-names-field")
    assert rule is not None
    groups = [m.group(1) for p in rule.spec.all if (m := FIELD_GROUP.search(p.text))]
    assert len(groups) == 1, "the rule's (?P<field>...) alternation is no longer a plain list of names"
    listed = set(groups[0].split("|"))
    want = _multi_word_fields("vllm")
    assert not want - listed, f"flags of vllm.txt the rule does not list: {sorted(want - listed)}"
    assert not listed - want, f"names the rule lists that vllm.txt no longer has: {sorted(listed - want)}"
