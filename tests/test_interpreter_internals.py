"""The start path leans on interpreter internals only to be faster: each one failing gives the same report.

`logsense.re_cache` rebuilds stdlib patterns from `_sre` code made by `re._parser`/`re._compiler`, and
`logsense.rules.compile` keeps `regex` patterns as the engine's pickled data. A Python or regex upgrade
may break any of them; each is forced to fail here, with a warm cache (the kept forms are read) and a
cold one (the forms are made), and the reports must be those of an undisturbed run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import CORPORA, ROOT

pytestmark = pytest.mark.slow  # a few dozen whole processes

LOGS = [CORPORA / "mission" / "python-h-missing.log", CORPORA / "healthy" / "k26-ddtree-ready.log"]

# Python run before the CLI, in the same process: each breaks one internal the start path uses.
FORCED = {
    "none": "",
    # the kept stdlib forms cannot be built (another _sre): re compiles each pattern itself
    "sre-build": "import logsense.re_cache as m\n"
                 "def _no(*a, **k): raise TypeError('another _sre')\n"
                 "m._build = _no\n",
    # re's parser is not what re_cache expects (another Python): no forms are made or kept
    "re-parser": "import re\n"
                 "class _P:\n"
                 "    def parse(self, *a, **k): raise AttributeError('another re')\n"
                 "re._parser = _P()\n",
    # regex's engine cannot be found alone: rule patterns are compiled from their text
    "regex-engine": "import logsense.rules.compile as m\n"
                    "m._engine.cache_clear()\n"
                    "m._engine = lambda: None\n",
    # regex's engine rebuilds nothing from the kept pickled data (another regex)
    "regex-thaw": "import logsense.rules.compile as m\n"
                  "_real = m._engine\n"
                  "class _E:\n"
                  "    def compile(self, *a, **k): raise ValueError('another regex')\n"
                  "m._engine = lambda: (None if _real() is None else (_E(), _real()[1]))\n",
}


def _reports(forced: str, cache: str) -> list[dict]:
    code = forced + "import sys\nfrom logsense.cli import run\nsys.exit(run(sys.argv[1:]))\n"
    env = {**os.environ, "XDG_CACHE_HOME": cache}
    env.pop("LOGSENSE_NO_CACHE", None)
    out = []
    for log in LOGS:
        p = subprocess.run([sys.executable, "-c", code, "analyze", "-f", "json", str(log)], capture_output=True,
                           text=True, timeout=120, cwd=ROOT, env=env)
        assert p.returncode in (0, 1), p.stderr
        out.append(json.loads(p.stdout))
    return out


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    return _reports("", str(tmp_path_factory.mktemp("reference-cache")))


@pytest.mark.parametrize("name", [n for n in FORCED if n != "none"])
def test_an_internal_that_fails_gives_the_same_report(name, reference, tmp_path):
    cache = str(tmp_path / "cache")
    assert _reports(FORCED[name], cache) == reference  # cold: forms are made (or not) with the internal broken
    _reports("", cache)  # the kept forms of an undisturbed run
    assert _reports(FORCED[name], cache) == reference  # warm: kept forms meet the broken internal
