"""Make the repository importable as ansible_collections.nodeguard.failover for pytest."""

import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLLECTIONS = os.path.join(REPO, ".build", "collections")
LINK = os.path.join(COLLECTIONS, "ansible_collections", "nodeguard", "failover")

if not os.path.exists(LINK):
    os.makedirs(os.path.dirname(LINK), exist_ok=True)
    os.symlink(REPO, LINK)
if COLLECTIONS not in sys.path:
    sys.path.insert(0, COLLECTIONS)
