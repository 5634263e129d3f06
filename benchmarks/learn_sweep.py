"""Which classifier configuration: held-out figures (GroupKFold by incident group) for a few choices.

    python benchmarks/learn_sweep.py corpora/

Prints, for each configuration, the argmax top-1 and macro-F1 (no threshold), and with the
threshold and the held-out precision cap (what `analyze` does): the share of logs it answers
and how often it is right when it does. The shipped
`Config()` defaults are the row chosen from this table; the baselines are printed last.
"""

from __future__ import annotations

import sys
import time
import warnings
from dataclasses import replace


def main(argv: list[str]) -> int:
    warnings.filterwarnings("ignore")
    from logsense.learn import corpus, train

    dirs = argv or ["corpora"]
    incidents = corpus.find(dirs)
    docs = corpus.documents(incidents, jobs=corpus.default_jobs())
    groups = corpus.groups(incidents, docs)
    texts = [d.text for d in docs]
    y = [i.cause for i in incidents]
    origin = [i.origin for i in incidents]
    names = [i.name for i in incidents]
    failed = [i.failed for i in incidents]
    print(f"{len(y)} logs, {len(set(y))} causes, {len(set(groups))} groups")
    base = train.Config()
    configs = {
        "default": base,
        "C=0.3": replace(base, C=0.3),
        "C=5": replace(base, C=5.0),
        "C=20": replace(base, C=20.0),
        "no class weights": replace(base, class_weight=None),
        "words + chars": replace(base, char=True),
        "words + chars/2": replace(base, char=True, char_weight=0.5),
        "chars only": replace(base, word=False, char=True),
        "words <= 2000": replace(base, word_max_features=2000),
    }
    print(f"{'config':<18} {'top-1':>6} {'F1':>6} {'answered':>9} {'right|ans':>10} {'ECE':>6} {'secs':>5}")
    ev = None
    for name, cfg in configs.items():
        t = time.time()
        ev = train.cross_validate(texts, failed, y, groups, origin, names, cfg)
        raw = ev.metrics("model", thresholded=False)
        thr = ev.metrics("model")
        print(f"{name:<18} {raw['top1']:6.3f} {raw['macro_f1']:6.3f} {thr['coverage']:9.3f} "
              f"{thr['precision_when_answered']:10.3f} {ev.calibration['ece_calibrated']:6.3f} {time.time() - t:5.1f}")
    assert ev is not None
    for m in ("nearest-neighbour", "majority"):
        s = ev.metrics(m)
        print(f"{m:<18} {s['top1']:6.3f} {s['macro_f1']:6.3f} {1.0:9.3f} {s['top1']:10.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
