#!/usr/bin/env python3
"""Counts TAP test cases in meson testlog.json files and prints the closing summary line.

Every `ok`/`not ok` TAP line of every test program counts once (`# SKIP` as skipped). A program
that crashed or timed out counts one extra failure, so a crash is never hidden. Each failure is
listed with the lines of its program's output that say why (so the tail of a CI log is enough
to start from). Exits 1 if anything failed."""
import json
import re
import sys

TAP = re.compile(r"^(not ok|ok)\b(.*)$")
WHY = re.compile(r"Bail out!|ERROR|FATAL|SUMMARY: |runtime error:|Segmentation|Aborted")
WHY_LINES = 6


def why(rec):
    """The lines of a failed program's output that say why it failed, the last few of them."""
    text = (rec.get("stdout", "") or "") + "\n" + (rec.get("stderr", "") or "")
    lines = [l.strip()[:300] for l in text.splitlines() if WHY.search(l)]
    return lines[-WHY_LINES:]


def count(path, totals, failures):
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            rec = json.loads(line)
            name = rec.get("name", "?")
            result = rec.get("result", "")
            out = rec.get("stdout", "") or ""
            passed = failed = skipped = 0
            for tap in out.splitlines():
                m = TAP.match(tap.strip())
                if not m:
                    continue
                rest = m.group(2)
                if "# SKIP" in rest or "# skip" in rest:
                    skipped += 1
                elif m.group(1) == "ok":
                    passed += 1
                else:
                    failed += 1
                    failures.append(f"{path}: {name}: {tap.strip()}")
            if result in ("FAIL", "TIMEOUT", "ERROR") and failed == 0:
                failed += 1
                failures.append(f"{path}: {name}: program {result.lower()}ed (exit or crash)")
            if result in ("FAIL", "TIMEOUT", "ERROR"):
                failures.extend(f"    {name}: {l}" for l in why(rec))
            if passed + failed + skipped == 0 and result == "SKIP":
                skipped += 1
            if passed + failed + skipped == 0 and result == "OK":
                passed += 1
            totals[0] += passed
            totals[1] += failed
            totals[2] += skipped


def main():
    totals = [0, 0, 0]
    failures = []
    for path in sys.argv[1:]:
        count(path, totals, failures)
    for f in failures:
        print(f if f.startswith(" ") else "FAILED: " + f)
    print(f"{totals[0]} passed, {totals[1]} failed, {totals[2]} skipped")
    return 1 if totals[1] else 0


if __name__ == "__main__":
    sys.exit(main())
