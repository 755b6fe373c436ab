"""Helpers of the tests that run docs/python.md's examples as written: a section's python
blocks, and one block's stdout from a child interpreter."""
import os
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def python_blocks(heading):
    """The ```python blocks of docs/python.md's section `## heading`, in order."""
    doc = open(os.path.join(ROOT, "docs", "python.md"), encoding="utf-8").read()
    section = doc.split("## " + heading, 1)[1].split("\n## ", 1)[0]
    return [b.split("```", 1)[0] for b in section.split("```python\n")[1:]]


def run_block(code):
    """What code prints, run from the repository root; a failure carries its stderr."""
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          timeout=120, env=dict(os.environ, PYTHONIOENCODING="utf-8"))
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout.decode()


def check_section(heading, outputs):
    """Each python block of docs/python.md's section `## heading`, run as written, prints its
    entry of `outputs` (one per block, in order)."""
    blocks = python_blocks(heading)
    assert len(blocks) == len(outputs)
    for code, want in zip(blocks, outputs):
        assert run_block(code) == want
