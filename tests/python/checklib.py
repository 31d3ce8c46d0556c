"""What tests/python/*.py share: python/ on sys.path (for vcc_torch), and the ok/FAIL check lines.

    from checklib import check, finish
    check(err <= 1e-5, f"logits: max|a - b| = {err:.1e}")   # prints 'ok    ...' or 'FAIL  ...'
    finish()                                                  # exit 1 listing the failures, or print PASS
"""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))

FAILED = []


def check(ok, what):
    """Print one result line; remember a failure for finish()."""
    print(("ok    " if ok else "FAIL  ") + what, flush=True)
    if not ok:
        FAILED.append(what)
    return ok


def finish():
    """Exit 1 naming every failed check, else print PASS."""
    if FAILED:
        sys.exit("FAIL: %d check(s): %s" % (len(FAILED), "; ".join(FAILED)))
    print("PASS")
