"""The one description of a Python exception's line ("torch.OutOfMemoryError: CUDA out of memory"), as regex
parts every stage composes its own pattern from."""

from __future__ import annotations

MODULES = r"(?:[A-Za-z_]\w*\.)*"  # the dotted module path before an exception class, if any
CLASS = r"[A-Z]\w*"  # a class name: capitalised
# how the name of an exception class ends (Python's and the libraries' own: OSError, KeyboardInterrupt,
# SystemExit, AssertionFailure, SegmentationFault, ReadTimeout, ...)
KIND = "(?:Error|Exception|Exit|Interrupt|Failure|Fault|Timeout|Abort)"
NAME = MODULES + CLASS  # any class name, in a traceback's last line
TYPED_NAME = MODULES + CLASS + KIND  # a name that says it is an exception, wherever it stands
