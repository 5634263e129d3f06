"""Golden reports of `logsense diff`: the pairs `tests/test_diff_golden.py` compares against.

    python tests/diff_golden.py --write     # regenerate after a change of the report made on purpose

The reports are written from every line (`LOGSENSE_SCAN=off`), the reference the
scanner-fed diff must equal. They were first written by the diff that fed every line
through the pipeline and the miner, before it read through the block scanner.

Two sets. `PAIRS`: the pairs the diff tests run (built from `test_diff.startup`), the vLLM
pair and the bundled corpus pair; their whole JSON report is kept. `corpus_pairs()`: every
corpus log against a healthy SGLang and a healthy vLLM startup, and as the good side
against the SGLang one; a digest of each report is kept. Reports are canonical: the sources
are named relative to the repo (or by their test name), each run's root diagnosis by its
cause alone (the diagnosis is analyze's, tested there), keys sorted.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CORPORA = ROOT / "corpora"
GOLDEN = HERE / "fixtures" / "diff-golden"
SGLANG_HEALTHY = CORPORA / "healthy" / "k26-ddtree-ready.log"
VLLM_HEALTHY = CORPORA / "constructed" / "vllm-healthy-v1.log"


def made_pairs(d: Path) -> dict[str, tuple[Path, Path]]:
    """The pairs of `test_diff.py`, written into `d`."""
    sys.path.insert(0, str(HERE))
    from test_diff import startup

    files = {
        "good": startup(day=3, seed=11),
        "bad": startup(bad=True, day=4, seed=99),
        "facts-good": startup(),
        "facts-bad": startup(sglang="0.5.10", torch="2.10.0", cuda="13.0", driver="590.44.01", gpu="NVIDIA B300",
                             args={"mm_attention_backend": "'fa4'", "mem_fraction_static": "0.88"}, seed=7),
        "markup-bad": startup() + "Mar 03 11:00:00 gpu-node-07 python3[48213]: Failed: [bold red]boom[/] [link=x]\n",
    }
    paths = {}
    for name, text in files.items():
        paths[name] = d / f"{name}.log"
        paths[name].write_text(text, encoding="utf-8")
    return {
        "tp8-warmup": (paths["good"], paths["bad"]),
        "tp8-same": (paths["good"], paths["good"]),
        "tp8-facts": (paths["facts-good"], paths["facts-bad"]),
        "tp8-markup": (paths["facts-good"], paths["markup-bad"]),
        "vllm-kv-cache": (VLLM_HEALTHY, CORPORA / "constructed" / "vllm-kv-cache-too-small-v1.log"),
        "corpus-fa4-warmup": (SGLANG_HEALTHY, CORPORA / "mission" / "flash-attn-cute-warmup.log"),
    }


def corpus_logs() -> list[Path]:
    return sorted(p for p in CORPORA.rglob("*") if p.is_file() and not p.name.endswith((".yaml", ".md"))
                  and "formats" not in p.relative_to(CORPORA).parts[:1])


def corpus_pairs() -> Iterator[tuple[str, Path, Path]]:
    for log in corpus_logs():
        rel = log.relative_to(CORPORA).as_posix()
        yield f"sglang-healthy|{rel}", SGLANG_HEALTHY, log
        yield f"vllm-healthy|{rel}", VLLM_HEALTHY, log
        yield f"{rel}|sglang-healthy", log, SGLANG_HEALTHY


def canonical(report: dict, good: Path, bad: Path) -> dict:
    """The JSON report with its two sources named without the machine's paths."""
    out = json.loads(json.dumps(report))
    for side, path in (("good", good), ("bad", bad)):
        p = Path(path).resolve()
        out[side]["source"] = p.relative_to(ROOT).as_posix() if p.is_relative_to(ROOT) else p.name
        root = out[side]["root"]
        out[side]["root"] = root and root["cause"]  # the diagnosis itself is analyze's (its own tests)
    return out


def digest(report: dict) -> str:
    return hashlib.sha256(json.dumps(report, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:20]


def diff_json(good: Path, bad: Path, rules) -> dict:
    from logsense.diff import diff_logs

    return canonical(diff_logs(str(good), str(bad), rules).to_json(), good, bad)


def write() -> None:
    from logsense import load_rules

    rules = load_rules()
    os.environ["LOGSENSE_SCAN"] = "off"
    GOLDEN.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name, (good, bad) in made_pairs(Path(tmp)).items():
            (GOLDEN / f"{name}.json").write_text(
                json.dumps(diff_json(good, bad, rules), sort_keys=True, indent=1, ensure_ascii=False) + "\n",
                encoding="utf-8")
    digests = {name: digest(diff_json(good, bad, rules)) for name, good, bad in corpus_pairs()}
    (GOLDEN / "corpus-digests.json").write_text(json.dumps(digests, indent=0, sort_keys=True) + "\n", encoding="utf-8")
    print(f"{len(digests)} corpus pairs; {GOLDEN}")


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit(__doc__)
    sys.path.insert(0, str(ROOT))
    write()
