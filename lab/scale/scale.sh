#!/usr/bin/env bash
# Scale mode of the lab (see lab/scale/scale.py): scale.sh up N [--profile P] | profile P | pods ... | status | down
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
exec "${NODEGUARD_PYTHON:-$repo/.venv/bin/python}" "$repo/lab/scale/scale.py" "$@"
