"""The classifier alone on a labelled set of logs, each judged by a model that never saw its incident.

    python benchmarks/learn_heldout.py corpora/ LABELS.yaml

LABELS.yaml lists {file, cause} (the format of a scoring set); every listed log must also be in
the corpus (found by content). A case with `root_line_visible: false` (an excerpt cut before
its cause) is right when the verdict is `unknown`: the log cannot support its reported cause. The corpus is cross-validated by incident group, and each listed
log gets the verdict of the fold that held its group out: the honest counterpart of scoring
`logsense analyze --no-rules` with a model trained on the whole corpus, which has seen them.
"""

from __future__ import annotations

import hashlib
import sys
import warnings
from pathlib import Path


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    warnings.filterwarnings("ignore")
    import yaml

    from logsense.learn import corpus, train

    incidents = corpus.find([argv[0]])
    docs = corpus.documents(incidents, jobs=corpus.default_jobs())
    groups = corpus.groups(incidents, docs)
    ev = train.cross_validate([d.text for d in docs], [i.failed for i in incidents], [i.cause for i in incidents], groups,
                              [i.origin for i in incidents], [i.name for i in incidents], train.Config())
    by_hash = {hashlib.sha256(i.log.read_bytes()).hexdigest(): k for k, i in enumerate(incidents)}
    labels_path = Path(argv[1])
    cases = yaml.safe_load(labels_path.read_text())
    tally = {"visible": [0, 0], "cut": [0, 0]}  # [cases, right]
    missing = 0
    for c in cases:
        data = (labels_path.parent / c["file"]).read_bytes()
        k = by_hash.get(hashlib.sha256(data).hexdigest())
        if k is None:
            missing += 1
            continue
        kind = "cut" if c.get("root_line_visible") is False else "visible"
        want = "unknown" if kind == "cut" else c["cause"]
        verdict = ev.preds["model"][k]
        ok = verdict == want
        tally[kind][0] += 1
        tally[kind][1] += ok
        print(f"{'ok  ' if ok else 'MISS'} {c['file']}: want {want} got {verdict} (p={ev.probs[k]:.2f})")
    figures = " ".join(f"{kind}={n} held-out top1={r / n:.3f}" for kind, (n, r) in tally.items() if n)
    print(f"not_in_corpus={missing} {figures}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
