"""The Python files of a distribution: a wheel (zip), an installed package or a source tree."""

from __future__ import annotations

import ast
import os
import re
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from logsense.errors import UsageError

MAX_FILE_BYTES = 4 << 20  # a generated file this large holds no hand-written messages
_WHEEL = re.compile(r"^(?P<name>[^-]+)-(?P<version>[^-]+)(-[^-]+)?-[^-]+-[^-]+-[^-]+\.whl$")


@dataclass
class Distribution:
    """Where the files come from, which package and version they are."""

    path: Path
    name: str | None
    version: str | None
    skipped: list[str] = field(default_factory=list)  # files not read, with the reason

    def files(self) -> Iterator[tuple[str, bytes]]:
        """(path inside the distribution, content) for every .py file, sorted."""
        if self.path.is_file():
            yield from self._zip_files()
        else:
            yield from self._dir_files()

    def _zip_files(self) -> Iterator[tuple[str, bytes]]:
        with zipfile.ZipFile(self.path) as z:
            for info in sorted(z.infolist(), key=lambda i: i.filename):
                if not info.filename.endswith(".py") or info.is_dir():
                    continue
                if info.file_size > MAX_FILE_BYTES:
                    self.skipped.append(f"{info.filename}: {info.file_size} bytes, over the size limit")
                    continue
                yield info.filename, z.read(info)

    def _dir_files(self) -> Iterator[tuple[str, bytes]]:
        root = self.path
        # a package dir itself (it has __init__.py): paths start with its name, as in the wheel
        prefix = root.name + "/" if (root / "__init__.py").is_file() else ""
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d != "__pycache__")
            for fn in sorted(filenames):
                if not fn.endswith(".py"):
                    continue
                full = Path(dirpath) / fn
                rel = prefix + full.relative_to(root).as_posix()
                try:
                    if full.stat().st_size > MAX_FILE_BYTES:
                        self.skipped.append(f"{rel}: over the size limit")
                        continue
                    yield rel, full.read_bytes()
                except OSError as e:
                    self.skipped.append(f"{rel}: {e.strerror or e}")


def open_distribution(path: str | Path, name: str | None = None) -> Distribution:
    """A wheel or a directory; the package name and version are read from it unless `name` is given."""
    p = Path(path)
    if not p.exists():
        raise UsageError(f"{path}: no such file or directory")
    if p.is_file():
        if not zipfile.is_zipfile(p):
            raise UsageError(f"{path}: not a wheel (zip) or a directory")
        m = _WHEEL.match(p.name)
        return Distribution(p, name or (m["name"].lower() if m else None), m["version"] if m else _zip_version(p))
    name = name or _dir_name(p)
    return Distribution(p, name, _dir_version(p, name))


def _zip_version(p: Path) -> str | None:
    with zipfile.ZipFile(p) as z:
        for n in z.namelist():
            if n.endswith(".dist-info/METADATA"):
                for line in z.read(n).decode("utf-8", "replace").splitlines():
                    if line.startswith("Version:"):
                        return line.split(":", 1)[1].strip()
    return None


def _dir_name(p: Path) -> str:
    if (p / "__init__.py").is_file():
        return p.name
    packages = sorted(d.name for d in p.iterdir() if (d / "__init__.py").is_file())
    return p.name if p.name in packages or len(packages) != 1 else packages[0]


def _dir_version(p: Path, name: str) -> str | None:
    """From NAME-*.dist-info/METADATA beside or inside `p`, or a version file assigning a string literal."""
    dist = re.sub(r"[-_.]+", "_", name).lower()
    metas = [m for m in sorted(p.glob("*.dist-info/METADATA")) + sorted(p.parent.glob("*.dist-info/METADATA"))
             if re.sub(r"[-_.]+", "_", m.parent.name.split("-")[0]).lower() == dist]
    for meta in metas:
        for line in meta.read_text("utf-8", "replace").splitlines():
            if line.startswith("Version:"):
                return line.split(":", 1)[1].strip()
    roots = [p] if (p / "__init__.py").is_file() else [d for d in sorted(p.iterdir()) if (d / "__init__.py").is_file()]
    for root in roots:
        for fn in ("_version.py", "version.py", "__init__.py"):
            f = root / fn
            if f.is_file():
                v = _literal_version(f.read_text("utf-8", "replace"))
                if v:
                    return v
    return None


def _literal_version(text: str) -> str | None:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        value = getattr(node, "value", None)
        if (any(isinstance(t, ast.Name) and t.id in ("__version__", "version") for t in targets)
                and isinstance(value, ast.Constant) and isinstance(value.value, str)):
            return value.value
    return None
