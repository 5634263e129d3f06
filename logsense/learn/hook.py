"""How the pipeline reaches the classifier without importing scikit-learn (or numpy) at all."""

from __future__ import annotations

import os
from pathlib import Path

from logsense.errors import ModelError

MODEL_ENV = "LOGSENSE_MODEL"  # a model file (or dir holding classifier.json) to use instead of the shipped one
MODEL_FILE = "classifier.json"


def shipped_model_path() -> Path:
    return Path(__file__).resolve().parent.parent / "data" / MODEL_FILE


def model_path() -> Path:
    """The model to use: $LOGSENSE_MODEL when set, else the one shipped in logsense/data/."""
    env = os.environ.get(MODEL_ENV)
    if env:
        p = Path(env)
        return p / MODEL_FILE if p.is_dir() else p
    return shipped_model_path()


def default_classifier(required: bool = False):
    """The model as a pipeline hook (loaded on first use), or None when there is none (it is optional).

    `required` (--no-rules: the classifier is the only judge) turns a missing model into an error.
    """
    path = model_path()
    if not path.is_file():
        if required or os.environ.get(MODEL_ENV):
            build = (f"logsense train corpora/ -o {path}" if path.suffix == ".json"
                     else f"logsense train corpora/ -o DIR/, then {MODEL_ENV}=DIR")
            raise ModelError(f"{path}: no classifier model (build one: {build})")
        return None
    from logsense.learn.classifier import Classifier

    return Classifier(path)
