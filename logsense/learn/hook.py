"""How the pipeline reaches the classifier without importing scikit-learn up front."""

from __future__ import annotations


def default_classifier(required: bool = False):
    """The shipped model as a pipeline hook, or None when it is not available (it is optional)."""
    return None
