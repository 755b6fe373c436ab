"""Runs the Python tests with pytest and prints one TAP line per test on stdout, the protocol
meson and scripts/count-tests.py read; pytest's own report goes to stderr.

usage: run_tap.py TEST_DIR [pytest args...]"""
import os
import sys

import pytest


class TapPlugin:
    def __init__(self, out):
        self.out = out
        self.n = 0

    def _line(self, ok, nodeid, extra=""):
        self.n += 1
        self.out.write("%s %d - %s%s\n" % ("ok" if ok else "not ok", self.n, nodeid, extra))
        self.out.flush()

    def pytest_runtest_logreport(self, report):
        # One line per test: its call phase, or the setup phase when that failed or skipped.
        if report.when == "call" or (report.when == "setup" and not report.passed):
            if report.skipped:
                reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else "skipped"
                self._line(True, report.nodeid, " # SKIP %s" % reason.replace("\n", " "))
            elif report.failed and hasattr(report, "wasxfail") is False:
                self._line(False, report.nodeid)
            else:
                self._line(True, report.nodeid)
        elif report.when == "teardown" and report.failed:
            self._line(False, report.nodeid + " (teardown)")

    def pytest_collectreport(self, report):
        if report.failed:
            self._line(False, "collecting " + report.nodeid)

    def pytest_sessionfinish(self, session):
        self.out.write("1..%d\n" % self.n)
        self.out.flush()


def main():
    tap = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # pytest's terminal report goes to stderr
    sys.stdout = sys.stderr
    plugin = TapPlugin(tap)
    args = ["-p", "no:cacheprovider", "-q", "-rfE", "--tb=short"] + sys.argv[1:]
    rc = pytest.main(args, plugins=[plugin])
    if plugin.n == 0:
        tap.write("not ok 1 - pytest ran no test (exit %d)\n1..1\n" % int(rc))
    tap.close()
    return 0 if rc in (0, 5) and plugin.n else 1


if __name__ == "__main__":
    sys.exit(main())
