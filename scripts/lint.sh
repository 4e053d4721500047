#!/usr/bin/env bash
# Static checks for the whole tree, with no ignore files:
#   1. ruff (config: ruff.toml) on every Python directory: plugins, extensions, tests, lab, scripts, bench;
#   2. ansible-lint with the production profile (config: .ansible-lint) on roles, playbooks,
#      molecule scenarios, extensions (EDA rulebooks, alert rules) and the AWX example playbook.
# Both always run; the script fails if either found something.
# Usage: scripts/lint.sh [--fix]   (--fix lets ruff apply its safe fixes first)
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo" || exit 1
export PATH="$repo/.venv/bin:$PATH"
export ANSIBLE_CONFIG="$repo/ansible.cfg"

# The project's rule: problems are fixed, never silenced by ignore files.
ignore_files=$(ls .ansible-lint-ignore .config/ansible-lint-ignore.txt tests/sanity/ignore-*.txt 2>/dev/null || true)
if [ -n "$ignore_files" ]; then
  echo "lint: ignore files are not allowed in this project: $ignore_files" >&2
  exit 1
fi

# Only directories that exist yet (the tree grows during development).
existing() { for d in "$@"; do [ -e "$d" ] && printf '%s\n' "$d"; done; }
mapfile -t python_dirs < <(existing plugins extensions tests lab scripts bench)
mapfile -t ansible_dirs < <(existing roles playbooks molecule extensions docs/awx)

status=0

echo "== ruff check ${python_dirs[*]}"
if [ "${1:-}" = "--fix" ]; then
  ruff check --fix "${python_dirs[@]}" || true
fi
ruff check "${python_dirs[@]}" || status=1

if [ ${#ansible_dirs[@]} -gt 0 ]; then
  echo "== ansible-lint --profile production ${ansible_dirs[*]}"
  # --offline: never reach Galaxy; the collection's dependencies come from the ansible package.
  ansible-lint --offline --profile production "${ansible_dirs[@]}" || status=1
fi

if [ $status -eq 0 ]; then echo "lint: ok"; else echo "lint: FAILED" >&2; fi
exit $status
