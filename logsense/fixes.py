"""A rule's fix templates + captures + facts -> concrete fixes; conditions (`if:`) decide which apply."""

from __future__ import annotations

import re
from typing import Any

from logsense.flags import for_server
from logsense.model import Fix, FixKind
from logsense.rules.loader import TEMPLATE_NAME, FixSpec
from logsense.servers import BY_NAME, SERVERS, others


def applies(when: dict[str, tuple[Any, ...]], values: dict[str, Any]) -> bool:
    """True when every condition holds; a fact the log does not give counts as None."""
    for key, allowed in when.items():
        if values.get(key) not in allowed:
            return False
    return True


def _as_flag(name: str) -> str:
    """A config field or class name as its flag: max_model_len -> --max-model-len, KVTransfer -> --kv-transfer."""
    snake = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()
    return "--" + snake.replace("_", "-")


# Import names whose package on PyPI has another name: the one map every `{name|pip}` fix reads.
PIP_NAMES = {
    "cv2": "opencv-python-headless",
    "PIL": "pillow",
    "yaml": "pyyaml",
    "zmq": "pyzmq",
    "sklearn": "scikit-learn",
    "skimage": "scikit-image",
    "bs4": "beautifulsoup4",
    "fitz": "pymupdf",
    "attr": "attrs",
    "dateutil": "python-dateutil",
    "dotenv": "python-dotenv",
    "multipart": "python-multipart",
    "Crypto": "pycryptodome",
    "cuda": "cuda-python",
    "pynvml": "nvidia-ml-py",
    "flashinfer": "flashinfer-python",
    "mooncake": "mooncake-transfer-engine",
} | {k: v for s in SERVERS for k, v in s.pip_names.items()}


def pip_name(module: str) -> str:
    """The package pip installs for an import name (by its top-level module); a name not in PIP_NAMES is kept."""
    top = module.split(".", 1)[0]
    return PIP_NAMES.get(top, top)


def _fill(template: str | None, values: dict[str, Any]) -> str | None:
    """Fill {names}; None when a name has no value."""
    if template is None:
        return None
    missing = False

    def sub(m: re.Match) -> str:
        nonlocal missing
        v = values.get(m.group(1))
        if v is None or v == "":
            missing = True
            return ""
        if m.group(2) == "flag":
            return _as_flag(str(v))
        return pip_name(str(v)) if m.group(2) == "pip" else str(v)

    out = TEMPLATE_NAME.sub(sub, template)
    return None if missing else out


def in_server_terms(kind: FixKind, value: str, server: str | None, version: str | None = None) -> str | None:
    """The fix in the detected server's own words (of its release `version`, when known), or None
    when that server has no such knob."""
    own = BY_NAME.get(server or "")
    if own is None:
        return value
    if kind == FixKind.FLAG:
        return for_server(value, own.name, version)
    if kind == FixKind.ENV:
        # environment variables only another server reads
        theirs = tuple(p for o in others(own.name) for p in o.env_prefixes)
        return None if value.lstrip().startswith(theirs) else value
    if kind in (FixKind.COMMAND, FixKind.PACKAGE):
        # a command naming another server's package is not advice for this one
        named = [o for o in others(own.name) if o.packages.search(value)]
        if not named:
            return value
        if not re.match(r"\s*(?:uv )?pip3? install ", value):
            return None
        out = value
        for o in named:
            if not re.search(r"(?<![\w/.-])" + o.name + r"\b", out):
                return None
            # "upgrade the server" is advice for either server, in its own package name
            # its version pin is the other server's numbering: dropped with it
            out = re.sub(r"(?<![\w/.-])" + o.name + r"(?:\[[^\]]*\])?(?:[=<>!~]=?[\w.*+-]+(?:,\s*[=<>!~]=?[\w.*+-]+)*)?"
                         r"(?=[\s\"']|$)", own.name, out)
        return None if any(o.packages.search(out) for o in named) else out
    return value


def _names_own_dependency(template: str, captures: dict[str, str], server: str | None) -> bool:
    """The fix names, through a capture, a package of a server this server's own code imports."""
    runs_on = BY_NAME[server].runs_on if server in BY_NAME else ()
    return any(v and pip_name(str(v)) in runs_on and "{" + k in template for k, v in captures.items())


def render(specs: tuple[FixSpec, ...], facts: dict[str, Any], captures: dict[str, str], phase: str | None) -> tuple[Fix, ...]:
    values = {**facts, **{k: v for k, v in captures.items() if v is not None}, "phase": phase}
    out: list[Fix] = []
    for spec in specs:
        if not applies(spec.when, values):
            continue
        value = _fill(spec.value, values)
        if value is None:
            value = _fill(spec.fallback, values)
        server = facts.get("server")
        # a package or command whose `if:` names the log's server is in its terms, as is one naming (through
        # a capture: its path, its import) a package of a server this one runs on
        own = spec.kind in (FixKind.PACKAGE, FixKind.COMMAND) and (
            server in spec.when.get("server", ()) or _names_own_dependency(spec.value, captures, server))
        if value is not None and not own:
            value = in_server_terms(spec.kind, value, server, facts.get("server_version"))
        if value is None:
            continue
        note = _fill(spec.note, values) if spec.note else None
        if spec.note and note is None:
            note = TEMPLATE_NAME.sub("?", spec.note)
        fix = Fix(spec.kind, value, note)
        if fix not in out:
            out.append(fix)
    return tuple(out)
