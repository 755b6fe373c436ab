"""Helpers of the multi-process tests: free loopback ports, the example trainer's path and
child Python processes that are always killed (bounded waits, no timing asserts)."""
import os
import socket
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TRAINER = os.path.join(HERE, "..", "..", "examples", "python", "trainer.py")


def free_ports(n):
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


class Children:
    """Python children started with this interpreter and environment; kill_all at the end."""

    def __init__(self):
        self.procs = []

    def start(self, args, **kw):
        p = subprocess.Popen([sys.executable] + list(args), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, **kw)
        self.procs.append(p)
        return p

    def finish(self, p, timeout=180):
        """Waits (bounded) for p; returns (rc, stdout, stderr)."""
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
            raise AssertionError("child %s did not finish within %d s:\n%s\n%s"
                                 % (p.args, timeout, out, err)) from None
        return p.returncode, out, err

    def kill_all(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            try:
                p.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                pass
