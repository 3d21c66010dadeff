"""Runs the schemathesis CLI with ast.parse serialised across threads.

CPython 3.11 before gh-106905 keeps the AST constructor's recursion depth in interpreter-wide
state. When two threads turn source into AST objects at the same time, one of them can fail with
"SystemError: AST constructor recursion depth mismatch". Hypothesis parses source to describe
filter lambdas, and `schemathesis run --workers 2` runs two generating threads, so the fuzz run
failed on Debian 12's Python 3.11.2 with a runtime error in the fuzzer, not in the suite. Every
AST parse in hypothesis and schemathesis goes through `ast.parse` (ast.literal_eval included), so
one lock around it removes the race without touching what is generated or checked.

    python scripts/schemathesis-run.py run docs/openapi.yaml --url ...   # same arguments as the CLI
"""

import ast
import sys
import threading

_parse = ast.parse
_parse_lock = threading.RLock()


def _serialised_parse(*args, **kwargs):
    with _parse_lock:
        return _parse(*args, **kwargs)


ast.parse = _serialised_parse

from schemathesis.cli import schemathesis  # noqa: E402  (after the patch, so its imports see it)

if __name__ == "__main__":
    sys.argv[0] = "schemathesis"
    sys.exit(schemathesis())
