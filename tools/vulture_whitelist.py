"""Names that vulture cannot see used: a framework, a protocol or a lookup by name calls them.

Read by vulture only (pyproject.toml [tool.vulture]); nothing imports it.
"""

from types import SimpleNamespace

_ = SimpleNamespace()

# rich's Console calls it when stdout is a closed pipe
_.on_broken_pipe
# io.RawIOBase: BufferedReader calls readinto
_.readinto
# http.server.BaseHTTPRequestHandler (the probe tests' stand-in server)
_.do_GET
# urllib's redirect handler calls it: logsense.probe answers None (no redirect followed)
_.redirect_request
_.do_POST
_.log_message
# a module's __getattr__ (PEP 562): lazy attributes of logsense.sources
_.__getattr__
# pytest reads a module's pytestmark
_.pytestmark
# enum members named in rule files, labels and exit codes, not in code
_.SYMPTOM
_.INTERNAL
# a label field: validated and kept with the label, for the reader of a corpus entry
_.reported_cause
# tokenizers / transformers read these attributes of the objects they are set on
_.pre_tokenizer
_.chat_template
