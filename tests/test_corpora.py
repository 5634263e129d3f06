"""Every labelled incident in corpora/ is a test, checked by the same `check_incident` the hook runs.

Each log is analyzed once (as `analyze` does by default: rules and classifier); the verdict
test reads the same report.
"""

from __future__ import annotations

from functools import cache

import pytest

from conftest import CORPORA
from logsense.check import Checked, check_incident
from logsense.corpus import CorpusEntry, corpus_entries
from logsense.model import Status
from logsense.paths import display

INCIDENTS = corpus_entries(CORPORA)


def _id(inc: CorpusEntry) -> str:
    path = inc.log or inc.label
    assert path is not None
    return str(path.relative_to(CORPORA))


@cache
def _checked(inc: CorpusEntry) -> Checked:

    return check_incident(inc, _rules())


@cache
def _rules():
    from logsense import load_rules

    return load_rules()


def test_the_corpus_is_there():
    assert len(INCIDENTS) >= 100


@pytest.mark.parametrize("inc", INCIDENTS, ids=_id)
def test_incident(inc: CorpusEntry):
    """The label is valid and analyze gives what it says (cause, fix, phase, outcome)."""
    checked = _checked(inc)
    assert not checked.problems, "\n".join(p.render() for p in checked.problems)


@pytest.mark.parametrize("inc", INCIDENTS, ids=_id)
def test_verdict(inc: CorpusEntry):
    """A log labelled with a failure (a cause, or unknown) is `failed`; a healthy one `ready` or `incomplete`."""
    checked = _checked(inc)
    if checked.label is None or checked.report is None:
        pytest.skip("no valid label or readable log: test_incident says why")
    status = checked.report.status
    wanted = checked.label.expected_status()
    assert status in wanted, (f"{display(inc.log or '')}: status {status.value}, labelled "
                              f"{checked.label.cause}{' / ' + checked.label.outcome if checked.label.outcome else ''} "
                              f"(wants {' or '.join(s.value for s in wanted)})")
    if status is Status.FAILED:
        assert checked.report.root is not None, "failed without a root diagnosis"
