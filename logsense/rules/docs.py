"""The field tables of docs/rule-format.md, generated from the schema the loader checks against."""

from __future__ import annotations

from typing import Any

from logsense.rules.schema import (
    DEFAULTS_FIELDS,
    EXAMPLE_FIELDS,
    EXAMPLE_ITEM_FIELDS,
    FIX_FIELDS,
    MATCH_FIELDS,
    PACK_FIELDS,
    PHASE_FIELDS,
    RULE_FIELDS,
    Field,
)

DOC_BEGIN = "<!-- fields: generated from logsense/rules/schema.py by `python3 -m logsense.rules.docs docs/rule-format.md` -->"
DOC_END = "<!-- end of fields -->"

_DOC_TABLES: tuple[tuple[str, tuple[tuple[str, dict[str, Field]], ...]], ...] = (
    ("A pack (`rules/**/*.yaml`)", (("", PACK_FIELDS), ("defaults.", DEFAULTS_FIELDS))),
    ("A rule (an item of `rules:`)", (("", RULE_FIELDS), ("match.", MATCH_FIELDS), ("fixes[].", FIX_FIELDS),
                                      ("examples.", EXAMPLE_FIELDS), ("examples.*[].", EXAMPLE_ITEM_FIELDS))),
    ("A phase (an item of `phases:` in `rules/phases.yaml` or a server's `rules/<server>/phases.yaml`)", (("", PHASE_FIELDS),)),
)
_TYPE_NAMES = {str: "string", int: "integer", float: "number", bool: "true/false", list: "list", dict: "mapping"}


def _doc_type(t: type | tuple[type, ...]) -> str:
    types = t if isinstance(t, tuple) else (t,)
    if float in types:
        return "number"
    return " or ".join(_TYPE_NAMES.get(x, x.__name__) for x in types)


def _doc_default(v: Any) -> str:
    if v is None or v == [] or v == {} or v == "":
        return ""
    if isinstance(v, bool):
        return f" (`{str(v).lower()}`)"
    return f" (`{v}`)"


def _doc_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def fields_markdown() -> str:
    """The field tables of the rule format, as docs/rule-format.md shows them."""
    out = []
    for title, tables in _DOC_TABLES:
        out += [f"### {title}", "", "| field | type | required | meaning |", "|---|---|---|---|"]
        for prefix, table in tables:
            for name, f in table.items():
                required = "yes" if f.required else (f.required_when or "no") + _doc_default(f.default)
                meaning = f.help
                if f.choices and not all(c in meaning for c in f.choices):
                    meaning += "; one of " + ", ".join(f"`{c}`" for c in f.choices)
                out.append(f"| `{prefix}{name}` | {_doc_type(f.type)} | {_doc_cell(required)} | {_doc_cell(meaning)} |")
        out.append("")
    return "\n".join(out).rstrip("\n") + "\n"


def with_fields(doc: str) -> str:
    """`doc` with the text between the field-table markers replaced by `fields_markdown()`."""
    head, sep, rest = doc.partition(DOC_BEGIN)
    _, sep2, tail = rest.partition(DOC_END)
    if not sep or not sep2:
        raise ValueError(f"the document has no {DOC_BEGIN!r} ... {DOC_END!r} section")
    return f"{head}{DOC_BEGIN}\n\n{fields_markdown()}\n{DOC_END}{tail}"


if __name__ == "__main__":
    import sys
    from pathlib import Path

    for arg in sys.argv[1:] or ["docs/rule-format.md"]:
        path = Path(arg)
        path.write_text(with_fields(path.read_text(encoding="utf-8")), encoding="utf-8")
