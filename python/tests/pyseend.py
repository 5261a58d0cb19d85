"""
pyseend - what the Python package's tests share.

Importing it makes the package importable from the source tree (python/),
runs the test under the system's /usr/bin/python3 (Debian's python3-scrapy
lives there; configure's $(PYTHON) may be another interpreter), and brings
in seendtest's Server, test, run and friends (tests/integration).
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PKG = os.path.dirname(HERE)                       # python/
TOP = os.path.dirname(PKG)

# configure finds it (SEEND_TEST_PYTHON); by hand, /usr/bin/python3
SYSTEM_PYTHON = os.environ.get("SEEND_TEST_PYTHON") or "/usr/bin/python3"
if os.path.realpath(sys.executable) != os.path.realpath(SYSTEM_PYTHON) and \
        not os.environ.get("SEEND_TEST_REEXEC"):
    os.environ["SEEND_TEST_REEXEC"] = "1"
    os.execv(SYSTEM_PYTHON, [SYSTEM_PYTHON] + sys.argv)

for p in (PKG, os.path.join(TOP, "tests", "integration")):
    if p not in sys.path:
        sys.path.insert(0, p)
os.environ["PYTHONPATH"] = os.pathsep.join(
    [PKG] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])

from seendtest import (Failed, Server, T, free_port, run, test,  # noqa: E402
                       wait_until)

__all__ = ["Failed", "Server", "T", "free_port", "run", "test", "wait_until",
           "address", "HERE", "SYSTEM_PYTHON"]


def address(server, unix=False):
    """The seend.Client address of a seendtest Server."""
    return server.sock if unix else "127.0.0.1:%d" % server.port
