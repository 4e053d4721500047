"""Make bench/ importable for its unit tests."""

import os
import sys

BENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "bench")
if BENCH not in sys.path:
    sys.path.insert(0, os.path.abspath(BENCH))
