"""notebooks/incidents.ipynb runs top to bottom against the corpus as it is, so it never rots."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import ROOT

NOTEBOOK = ROOT / "notebooks" / "incidents.ipynb"


def _ensure_kernel(prefix) -> None:
    """A python3 kernel spec, installed under `prefix` when there is none: never in the user's home."""
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        KernelSpecManager().get_kernel_spec("python3")
    except NoSuchKernel:
        subprocess.run([sys.executable, "-m", "ipykernel", "install", "--prefix", str(prefix), "--name", "python3"],
                       check=True, capture_output=True)


@pytest.fixture
def jupyter_home(tmp_path, monkeypatch):
    """Jupyter, IPython and matplotlib keep their files (kernel specs, connection files, caches) in a temp dir."""
    for var, sub in (("JUPYTER_DATA_DIR", "data"), ("JUPYTER_RUNTIME_DIR", "runtime"),
                     ("JUPYTER_CONFIG_DIR", "config"), ("IPYTHONDIR", "ipython"), ("MPLCONFIGDIR", "mpl")):
        monkeypatch.setenv(var, str(tmp_path / sub))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "share" / "jupyter"))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    return tmp_path


@pytest.mark.slow  # a real Jupyter kernel running the whole notebook: a minute of CPU
def test_notebook_runs(jupyter_home):
    nbformat = pytest.importorskip("nbformat", reason="nbformat is not installed (pip install -e '.[dev]')")
    nbclient = pytest.importorskip("nbclient", reason="nbclient is not installed (pip install -e '.[dev]')")
    pytest.importorskip("ipykernel", reason="ipykernel is not installed (pip install -e '.[dev]')")
    pytest.importorskip("matplotlib", reason="matplotlib is not installed (pip install -e '.[dev]')")
    pytest.importorskip("sklearn", reason="scikit-learn is not installed (pip install -e '.[learn]')")
    _ensure_kernel(jupyter_home)
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",
                                     resources={"metadata": {"path": str(NOTEBOOK.parent)}})
    client.execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.output_type == "error"]
    assert not errors, errors
    figures = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
               if o.output_type == "display_data" and "image/png" in o.get("data", {})]
    assert len(figures) >= 4, "the causes, phases, time-to-failure and confusion-matrix plots"


def test_notebook_cells_parse():
    """The fast part of the check above, in every run: the notebook is valid JSON and each code cell is Python."""
    import ast
    import json

    nb = json.loads(NOTEBOOK.read_text(encoding="utf-8"))
    cells = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]
    assert cells
    for src in cells:
        ast.parse("\n".join(ln for ln in src.splitlines() if not ln.lstrip().startswith(("%", "!"))))
