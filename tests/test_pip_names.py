"""A fix that installs a module names the package pip knows (`{name|pip}`, one map in logsense.fixes)."""

from __future__ import annotations

import pytest

from logsense.fixes import PIP_NAMES, pip_name, render
from logsense.model import FixKind
from logsense.pipeline import run
from logsense.rules import load_rules
from logsense.rules.loader import TEMPLATE_NAME, FixSpec


@pytest.mark.parametrize("module, package", [("zmq", "pyzmq"), ("cv2", "opencv-python-headless"), ("PIL", "pillow"),
                                             ("yaml", "pyyaml"), ("zmq.asyncio", "pyzmq"), ("tiktoken", "tiktoken")])
def test_pip_name(module, package):
    assert pip_name(module) == package


def test_a_template_writes_the_pip_name():
    spec = FixSpec(FixKind.PACKAGE, "pip install {module|pip}", None, {}, None)
    assert [f.value for f in render((spec,), {}, {"module": "zmq"}, None)] == ["pip install pyzmq"]
    assert TEMPLATE_NAME.findall("pip install {module|pip} {x|flag} {y}") == [("module", "pip"), ("x", "flag"),
                                                                               ("y", "")]


@pytest.mark.parametrize("line, fix", [
    ("ModuleNotFoundError: No module named 'zmq'", "pip install pyzmq"),
    ("ModuleNotFoundError: No module named 'cv2'", "pip install opencv-python-headless"),
    ("ModuleNotFoundError: No module named 'sgl_kernel'", "pip install sgl-kernel"),
    ("ModuleNotFoundError: No module named 'timm'", "pip install timm"),
])
def test_the_missing_module_fix_names_the_pip_package(line, fix):
    log = ["[2026-01-01 00:00:00] server_args=ServerArgs(model_path='m')", "Traceback (most recent call last):",
           '  File "x.py", line 1, in <module>', line]
    report = run(log, load_rules())
    assert report.root is not None and report.root.cause == "python_module_missing"
    assert report.root.fixes[0].value == fix


def test_no_bundled_fix_installs_an_import_name_pip_does_not_know():
    """Every fix that pip-installs a captured name goes through the map."""
    rs = load_rules()
    for rule in rs.rules:
        for fix in rule.spec.fixes:
            for text in (fix.value, fix.fallback):
                if text and "pip install" in text:
                    for name, filt in TEMPLATE_NAME.findall(text):
                        if name in ("module", "pkg"):
                            assert filt == "pip", f"{rule.id}: {text}"
    assert all(k != v for k, v in PIP_NAMES.items())
