"""A message as the source spells it: literal text with holes where values go at run time."""

from __future__ import annotations

import re
import string
from dataclasses import dataclass

HOLE = None  # a part that is filled at run time
HOLE_TEXT = "{*}"

# printf-style conversions as logging and `%` use them; `%%` is a literal percent sign
_PRINTF = re.compile(r"%(?:\([^)]*\))?[#0\- +]*(?:\*|\d+)?(?:\.(?:\*|\d+))?[hlL]?[diouxXeEfFgGcrsa%]")


@dataclass(frozen=True)
class Template:
    """Literal parts and holes (None), adjacent literals merged and adjacent holes collapsed."""

    parts: tuple[str | None, ...]

    @staticmethod
    def of(parts: list[str | None] | tuple[str | None, ...]) -> Template:
        out: list[str | None] = []
        for p in parts:
            if p is None:
                if not out or out[-1] is not None:
                    out.append(None)
            elif p:
                if out and out[-1] is not None:
                    out[-1] += p
                else:
                    out.append(p)
        return Template(tuple(out))

    @property
    def text(self) -> str:
        """The printable template: holes shown as {*}."""
        return "".join(HOLE_TEXT if p is None else p for p in self.parts)

    @property
    def literal(self) -> str:
        """The fixed text alone (what a rule can key on)."""
        return "".join(p for p in self.parts if p is not None)

    @property
    def holes(self) -> int:
        return sum(1 for p in self.parts if p is None)

    @property
    def regex(self) -> str:
        """A regular expression that finds the message in a line (holes match anything, lazily)."""
        parts = list(self.parts)
        while parts and parts[0] is None:
            parts.pop(0)
        while parts and parts[-1] is None:
            parts.pop()
        return "".join(".*?" if p is None else re.escape(p) for p in parts)

    def fill(self, filler: str) -> str:
        """The message with every hole replaced by `filler`."""
        return "".join(filler if p is None else p for p in self.parts)


def printf_parts(fmt: str) -> list[str | None]:
    """`fmt` % args as parts: every conversion is a hole, `%%` a percent sign."""
    out: list[str | None] = []
    pos = 0
    for m in _PRINTF.finditer(fmt):
        out.append(fmt[pos:m.start()])
        out.append("%" if m.group() == "%%" else HOLE)
        pos = m.end()
    out.append(fmt[pos:])
    return out


def format_parts(fmt: str) -> list[str | None]:
    """`fmt`.format(...) as parts: every replacement field is a hole; a malformed string stays literal."""
    out: list[str | None] = []
    try:
        for literal, field, _spec, _conv in string.Formatter().parse(fmt):
            out.append(literal)
            if field is not None:
                out.append(HOLE)
    except ValueError:
        return [fmt]
    return out
