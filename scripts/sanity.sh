#!/usr/bin/env bash
# ansible-test sanity for the collection, locally (no docker), with no ignore entries.
#
# ansible-test needs the collection at .../ansible_collections/<namespace>/<name>/ and lists files
# with git. The repository is not laid out that way, so we test a fresh copy:
#   .build/sanity/run.XXXXXX/ansible_collections/nodeguard/failover   (one per run, removed at exit)
# made from `git ls-files` plus untracked files that are not ignored (what a commit would hold),
# with its own `git init` so ansible-test does not walk up to this repository's .git (where .build/
# is ignored and the copy would look empty).
#
# Test selection (deliberate, printed at the end):
#   * every sanity test ansible-core ships, on the controller Python 3.11;
#   * except pslint: it needs PowerShell, and the collection ships no PowerShell (checked below:
#     the script fails if a .ps1/.psm1/.cs file appears);
#   * shellcheck needs the `shellcheck` program (scripts/system-packages.txt); missing = failure;
#   * compile and import also on the target Pythons modules must support (3.8-3.10, 3.12, 3.13)
#     when an interpreter is found (PATH, or pyenv). A missing one is listed as NOT RUN at the end,
#     and fails the run when NODEGUARD_SANITY_ALL_PYTHONS=1. ruff (scripts/lint.sh) checks
#     plugins/ against Python 3.8 syntax in any case.
# Tool versions are ansible-test's own pins: it builds one virtualenv per test under
# ~/.ansible/test/venv (cached; the first run on a fresh machine downloads them from PyPI).
#
# Usage: scripts/sanity.sh [extra ansible-test options, e.g. --test validate-modules]
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
export PATH="$repo/.venv/bin:$PATH"
started=$(date +%s)

if ls tests/sanity/ignore-*.txt >/dev/null 2>&1; then
  echo "sanity: ignore files are not allowed in this project: $(ls tests/sanity/ignore-*.txt)" >&2
  exit 1
fi
powershell=$(git ls-files --cached --others --exclude-standard -- '*.ps1' '*.psm1' '*.cs' | head -5)
if [ -n "$powershell" ]; then
  echo "sanity: PowerShell/C# files found ($powershell); enable the pslint test in scripts/sanity.sh" >&2
  exit 1
fi
command -v shellcheck >/dev/null || { echo "sanity: shellcheck is missing; run make setup" >&2; exit 1; }

# 1. The copy: one per run (several people run this at once on a shared work tree), removed at exit.
mkdir -p "$repo/.build/sanity"
run_dir=$(mktemp -d "$repo/.build/sanity/run.XXXXXX")
trap 'rm -rf "$run_dir"' EXIT
copy="$run_dir/ansible_collections/nodeguard/failover"
mkdir -p "$copy"
git ls-files -z --cached --others --exclude-standard \
  | while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done \
  | tar --null --no-recursion -T - -cf - | tar -xf - -C "$copy"
git -C "$copy" init -q

# 2. ansible-test bootstraps pip in each virtualenv with a get-pip script downloaded from
#    ci-files.testing.ansible.com. Where that host is unreachable (package registries only),
#    a stand-in does the same from Python's bundled ensurepip, then installs the pinned pip from PyPI.
at_pkg=$(python -c 'import ansible_test, os; print(os.path.dirname(ansible_test.__file__))')
pip_version=$(sed -n "s/^ *pip='\([0-9.]*\)',/\1/p" "$at_pkg/_internal/python_requirements.py")
get_pip="$HOME/.ansible/test/cache/get_pip_${pip_version//./_}.py"
if [ ! -s "$get_pip" ]; then
  mkdir -p "$(dirname "$get_pip")"
  cat > "$get_pip" <<'PY'
"""nodeguard.failover scripts/sanity.sh: offline stand-in for ansible-test's get-pip bootstrap script."""
import ensurepip
import os
import subprocess
import sys

GET_PIP_ONLY = {"--no-setuptools", "--no-wheel"}
args = [a for a in sys.argv[1:] if a not in GET_PIP_ONLY]
pip = [sys.executable, "-m", "pip", "--disable-pip-version-check"]
ensurepip.bootstrap(upgrade=True)
# ensurepip leaves PIP_CONFIG_FILE=/dev/null behind, which would hide the machine's pip.conf (index, CA bundle).
for leaked in ("PIP_CONFIG_FILE", "ENSUREPIP_OPTIONS"):
    os.environ.pop(leaked, None)
status = subprocess.call(pip + ["install", *args])
if status == 0 and "--no-setuptools" in sys.argv:
    status = subprocess.call(pip + ["uninstall", "--yes", "--quiet", "setuptools"])
sys.exit(status)
PY
fi

# 3. Target interpreters for compile/import beyond the controller's 3.11.
find_python() {  # prints a directory holding a working pythonX.Y, or nothing
  local v=$1 candidate
  for candidate in $(type -ap "python$v") "$(pyenv root 2>/dev/null)"/versions/"$v".*/bin/"python$v"; do
    if [ -x "$candidate" ] && "$candidate" -c '' 2>/dev/null; then dirname "$candidate"; return; fi
  done
}
extra_versions=(3.8 3.9 3.10 3.12 3.13)
found=() missing=() target_path=$PATH
for v in "${extra_versions[@]}"; do
  dir=$(find_python "$v")
  # prepended: a pyenv shim earlier on PATH would shadow the real interpreter
  if [ -n "$dir" ]; then found+=("$v"); target_path="$dir:$target_path"; else missing+=("$v"); fi
done

cd "$copy"
status=0
echo "== ansible-test sanity --python 3.11 (all tests but pslint)"
ansible-test sanity --local --requirements --python 3.11 --skip-test pslint --color "$@" || status=1
if [ ${#found[@]} -gt 0 ]; then
  # Without --python, ansible-test runs these two on every supported Python it finds on PATH,
  # keeping the controller on 3.11 (--python 3.12 would re-run the controller itself there).
  echo "== ansible-test sanity (compile, import) on Python 3.11 ${found[*]}"
  PATH=$target_path ansible-test sanity --local --test compile --test import --color "$@" || status=1
fi

echo "sanity: took $(( $(date +%s) - started ))s; compile/import ran on Python 3.11 ${found[*]}"
echo "sanity: not run: pslint (no PowerShell in the collection)"
if [ ${#missing[@]} -gt 0 ]; then
  echo "sanity: NOT RUN: compile/import on Python ${missing[*]} (no interpreter found)" >&2
  [ "${NODEGUARD_SANITY_ALL_PYTHONS:-0}" = 1 ] && status=1
fi
if [ $status -eq 0 ]; then echo "sanity: ok"; else echo "sanity: FAILED" >&2; fi
exit $status
