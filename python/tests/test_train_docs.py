"""docs/python-training.md's ```python examples run as written (in a child process, from the
source root so that relative corpus paths resolve)."""
import os
import re

import pytest

from _procs import Children

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
DOC = os.path.join(ROOT, "docs", "python-training.md")
BLOCKS = re.findall(r"```python\n(.*?)```", open(DOC).read(), re.S)


@pytest.mark.parametrize("code", BLOCKS, ids=["example%d" % i for i in range(len(BLOCKS))])
def test_doc_example_runs(code):
    if "shared/corpus" in code and not os.path.isdir(os.path.join(ROOT, "..", "shared",
                                                                   "corpus")):
        pytest.skip("the corpus is absent")
    c = Children()
    try:
        rc, out, err = c.finish(c.start(["-c", code], cwd=ROOT), timeout=120)
    finally:
        c.kill_all()
    assert rc == 0, err
    assert out.strip()
