"""The pre-commit hooks for real: `pre-commit try-repo` of this repository on a repo of incidents.

pre-commit builds a virtualenv and pip-installs the project (not editable), so this also
proves the rule packs ship inside the package (logsense._rules). The slow part (~20-60 s)
runs once, in the module fixture; the tests only read its results.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from conftest import HEALTHY, MODULE_MISSING, ROOT

pytest.importorskip("pre_commit", reason="pre-commit is not installed (pip install -e '.[dev]')")

pytestmark = pytest.mark.slow

# Whatever the bundled rules make of MODULE_MISSING (a missing module, or unknown), it is not a CUDA OOM.
FAILED = MODULE_MISSING

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main"]


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(GIT + list(args), cwd=cwd, check=True, capture_output=True, text=True).stdout


def _source_repo(tmp: Path) -> Path:
    """This repository as pre-commit should see it: itself when clean, else a commit of its working tree.

    try-repo's own shadow commit carries staged and modified tracked files but not untracked
    ones, so new files (the hook manifest itself, new modules, new rule packs) would be missing.
    """
    if not _git(ROOT, "status", "--porcelain"):
        return ROOT
    snap = tmp / "snapshot"
    files = _git(ROOT, "ls-files", "-z", "--cached", "--others", "--exclude-standard").split("\0")
    for name in filter(None, files):
        src = ROOT / name
        if src.is_file():
            (snap / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, snap / name)
    _git(snap, "init", "-q")
    _git(snap, "add", "-A")
    _git(snap, "commit", "-q", "-m", "working tree")
    return snap


def _incident_repo(tmp: Path) -> Path:
    repo = tmp / "incidents"
    repo.mkdir()
    (repo / "good.log").write_text(HEALTHY)
    (repo / "good.label.yaml").write_text("cause: healthy\norigin: constructed\n")
    (repo / "bad.log").write_text(FAILED)
    (repo / "bad.label.yaml").write_text("cause: cuda_oom_cuda_graph\norigin: constructed\n")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "incidents")
    return repo


@pytest.fixture(scope="module")
def hooked(tmp_path_factory):
    """One try-repo on both incidents, then one cached run on the good one; their outputs and timings."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    if subprocess.run(["git", "-C", str(ROOT), "rev-parse"], capture_output=True).returncode:
        pytest.skip("not a git checkout")
    tmp = tmp_path_factory.mktemp("precommit")
    source = _source_repo(tmp)
    repo = _incident_repo(tmp)
    home = tmp / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PRE_COMMIT", "GIT_", "VIRTUAL_ENV"))}
    env.update(PRE_COMMIT_HOME=str(home), PRE_COMMIT_COLOR="never", NO_COLOR="1")
    pc = [sys.executable, "-m", "pre_commit"]
    files = ["--files", "good.log", "good.label.yaml", "bad.log", "bad.label.yaml"]

    t0 = time.monotonic()
    tried = subprocess.run(pc + ["try-repo", str(source), "logsense-check", "--verbose"] + files,
                           cwd=repo, env=env, capture_output=True, text=True, timeout=900)
    t1 = time.monotonic()

    # try-repo keeps its environment in a temp store; a config naming the same repo and rev keeps
    # it in PRE_COMMIT_HOME, where `logsense rules list` can be run inside it afterwards.
    rev = _git(source, "rev-parse", "HEAD").strip()
    config = tmp / "config.yaml"
    config.write_text(yaml.safe_dump({"repos": [{"repo": str(source), "rev": rev, "hooks": [{"id": "logsense-check"}]}]}))
    good = subprocess.run(pc + ["run", "--config", str(config), "--verbose", "--files", "good.log", "good.label.yaml"],
                          cwd=repo, env=env, capture_output=True, text=True, timeout=900)
    t2 = time.monotonic()
    envs = sorted(home.glob("repo*/py_env-*/bin/logsense"))
    listed = None
    if envs:
        listed = subprocess.run([str(envs[0]), "rules", "list", "--format", "json"], cwd=repo, env=env,
                                capture_output=True, text=True, timeout=120)
    timings = {"try-repo": round(t1 - t0, 1), "run (fresh env)": round(t2 - t1, 1)}
    print(f"\npre-commit timings (s): {timings}")
    return {"tried": tried, "good": good, "listed": listed, "envs": envs, "timings": timings}


def _out(p: subprocess.CompletedProcess) -> str:
    return p.stdout + p.stderr


def test_try_repo_fails_naming_the_mislabelled_incident_only(hooked):
    p = hooked["tried"]
    out = _out(p)
    assert p.returncode == 1, out
    assert "Failed" in out and "- hook id: logsense-check" in out, out
    problems = [ln for ln in out.splitlines() if ln.startswith(("bad.", "good."))]
    assert problems and all(ln.startswith("bad.log:") for ln in problems), out
    assert "labelled cuda_oom_cuda_graph (bad.label.yaml)" in problems[0], out
    assert "good.log" not in out.split("- hook id: logsense-check", 1)[1], out
    assert "2 incidents, 0 rules checked: 1 problem" in out, out


def test_the_good_incident_alone_passes(hooked):
    p = hooked["good"]
    out = _out(p)
    assert p.returncode == 0, out
    assert "Passed" in out and "1 incident, 0 rules checked: 0 problems" in out, out


def test_the_hook_env_carries_the_rule_packs(hooked):
    assert hooked["envs"], "no hook environment in PRE_COMMIT_HOME"
    p = hooked["listed"]
    assert p.returncode == 0, _out(p)
    rules = json.loads(p.stdout)
    assert rules, "the installed package has no rules"
    env_root = hooked["envs"][0].parent.parent.resolve()
    sources = {r["source"].rsplit(":", 1)[0] for r in rules}
    for src in sources:
        path = Path(src).resolve()
        assert env_root in path.parents and "logsense/_rules/" in path.as_posix(), src
