"""notebooks/incidents.ipynb runs top to bottom against the corpus as it is, so it never rots."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import ROOT

NOTEBOOK = ROOT / "notebooks" / "incidents.ipynb"


def _ensure_kernel() -> None:
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        KernelSpecManager().get_kernel_spec("python3")
    except NoSuchKernel:
        subprocess.run([sys.executable, "-m", "ipykernel", "install", "--user", "--name", "python3"],
                       check=True, capture_output=True)


def test_notebook_runs(tmp_path):
    nbformat = pytest.importorskip("nbformat", reason="nbformat is not installed (pip install -e '.[dev]')")
    nbclient = pytest.importorskip("nbclient", reason="nbclient is not installed (pip install -e '.[dev]')")
    pytest.importorskip("ipykernel", reason="ipykernel is not installed (pip install -e '.[dev]')")
    pytest.importorskip("matplotlib", reason="matplotlib is not installed (pip install -e '.[dev]')")
    pytest.importorskip("sklearn", reason="scikit-learn is not installed (pip install -e '.[learn]')")
    _ensure_kernel()
    nb = nbformat.read(NOTEBOOK, as_version=4)
    env_backup = os.environ.get("MPLBACKEND")
    os.environ["MPLBACKEND"] = "Agg"
    try:
        client = nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",
                                         resources={"metadata": {"path": str(NOTEBOOK.parent)}})
        client.execute()
    finally:
        if env_backup is None:
            os.environ.pop("MPLBACKEND", None)
        else:
            os.environ["MPLBACKEND"] = env_backup
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.output_type == "error"]
    assert not errors, errors
    figures = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
               if o.output_type == "display_data" and "image/png" in o.get("data", {})]
    assert len(figures) >= 4, "the causes, phases, time-to-failure and confusion-matrix plots"
