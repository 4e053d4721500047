#!/usr/bin/env bash
# Render the incident roles' module options (scripts/render-role-options.py), then the module, filter and
# role reference (DOCUMENTATION, argument_specs) with antsibull-docs into docs/modules/ as standalone
# reStructuredText (readable without Sphinx).
# Usage: scripts/render-docs.sh          rewrite docs/modules/
#        scripts/render-docs.sh --check  fail if docs/modules/ is not what the code renders to
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
export PATH="$repo/.venv/bin:$PATH"
export ANSIBLE_CONFIG="$repo/ansible.cfg"   # finds the collection through .build/collections (make setup)

# The incident roles' module options (argument_specs, defaults) come from the modules' argument specs first;
# --check only compares them.
if [ "${1:-}" = "--check" ]; then
  python scripts/render-role-options.py --check
else
  python scripts/render-role-options.py
fi

out=$(mktemp -d -t nodeguard-docs.XXXXXX)
trap 'rm -rf "$out"' EXIT
# --fail-on-error: a documentation that does not parse is an error, not an error page. antsibull-docs
# prints its errors on stdout: show them when it fails, keep quiet when it does not.
if ! log=$(antsibull-docs collection --use-current --squash-hierarchy --output-format simplified-rst \
  --no-add-antsibull-docs-version --fail-on-error --dest-dir "$out" nodeguard.failover 2>&1); then
  echo "$log" >&2
  echo "render-docs: antsibull-docs failed (above)" >&2
  exit 1
fi

if [ "${1:-}" = "--check" ]; then
  diff -ru docs/modules "$out" && echo "render-docs: docs/modules is up to date" && exit 0
  echo "render-docs: docs/modules is stale; run scripts/render-docs.sh and commit" >&2
  exit 1
fi
rm -rf docs/modules
mkdir -p docs/modules
cp -a "$out"/. docs/modules/
echo "render-docs: $(find docs/modules -name '*.rst' | wc -l) pages in docs/modules"
