"""`weft bench`'s Python rows: measured, with the C API's figure beside them, and a verdict on
the target (figures are not judged here: the machine may be loaded)."""
import json
import os
import subprocess

import pytest

TOOL = os.environ.get("WEFT_TOOL")


@pytest.mark.skipif(not TOOL, reason="WEFT_TOOL (the weft program) is not set")
def test_python_bench_rows(tmp_path):
    out = tmp_path / "bench.json"
    r = subprocess.run([TOOL, "bench", "--quick", "--only", "python/*", "--json", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    records = json.loads(out.read_text())
    by_name = {rec["name"]: rec for rec in records}
    assert set(by_name) == {"python/session_run", "python/extension_run"}
    row = by_name["python/session_run"]
    assert not row["skipped"], row.get("note")
    assert row["unit"] == "us" and row["weft"] > 0 and row["baseline"] > 0
    assert row["target"] in ("met", "missed")
    assert "C API weft_session_run" in r.stdout
