#!/usr/bin/env bash
# Release check: what a user installs from the built artifact works.
#   1. `ansible-galaxy collection build` from the work tree; the artifact holds only files git would
#      commit (no lab/.state keys, caches or build output leaking in through build_ignore gaps), none of
#      the development tree (lab, bench, scripts, molecule, tests, benchmark raw data, dot files, dev
#      configuration), and every file users need (plugins, roles, playbooks, meta, extensions, deploy,
#      docs, changelogs, README.md, LICENSE). The two lists below are the policy; galaxy.yml
#      build_ignore is how it is carried out.
#      The unpacked artifact stays within its size budget, and every relative link of a shipped Markdown page
#      resolves inside the artifact (the docs work from the installed collection).
#   2. Install it the way the README says: `ansible-galaxy collection install -r requirements.yml -p <dir>`,
#      the requirements file naming the tarball (type: file), into an empty directory, with a stock
#      configuration (ANSIBLE_CONFIG an empty file); --offline: the dependencies come from the ansible package.
#   3. From that installed copy only: ansible-doc for every module, filter and role by FQCN;
#      antsibull-docs lint-collection-docs (documentation markup and references);
#      `ansible-playbook nodeguard.failover.<playbook> --syntax-check` for every playbook;
#      one `module_defaults: group/nodeguard.failover.k8s:` entry reaches every member of the group.
#   4. antsibull-changelog: lint of the user's fragments (changelogs/fragments) and of the development ones
#      (changelogs/dev-fragments), and a release dry run on a scratch copy renders CHANGELOG.rst.
# Usage: scripts/release-test.sh [--keep]   (--keep leaves the temp dir and prints its path: collections/ holds
# the installed artifact, empty.cfg is the stock configuration; see tests/integration/release/)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
export PATH="$repo/.venv/bin:$PATH"

work=$(mktemp -d -t nodeguard-release.XXXXXX)
if [ "${1:-}" != "--keep" ]; then trap 'rm -rf "$work"' EXIT; fi
fail() { echo "release-test: FAIL: $*" >&2; exit 1; }
step() { echo "== $*"; }

# 1. Build.
step "ansible-galaxy collection build"
ANSIBLE_CONFIG="$repo/ansible.cfg" ansible-galaxy collection build --output-path "$work/dist" . >/dev/null
artifact=$(ls "$work"/dist/nodeguard-failover-*.tar.gz)
echo "artifact: $(basename "$artifact") ($(du -k "$artifact" | cut -f1) KiB)"

git ls-files --cached --others --exclude-standard \
  | while IFS= read -r f; do [ -e "$f" ] && printf '%s\n' "$f"; done | sort > "$work/git-files"
tar -tzf "$artifact" | grep -v '/$' | grep -vxE 'MANIFEST.json|FILES.json' | sort > "$work/artifact-files"
leaked=$(comm -13 "$work/git-files" "$work/artifact-files")
[ -z "$leaked" ] || fail "the artifact holds files git ignores (add them to galaxy.yml build_ignore):
$(head -20 <<< "$leaked")"

# What ships. keep_out: the development tree (plus every top-level dot file or directory);
# ships: what users need. Each list is a set of paths (a file, or a directory and all under it).
keep_out=(lab bench scripts molecule tests docs/benchmarks docs/lab.md docs/lab-bmc.md docs/lab-workers.md
  docs/redfish-conformance.md docs/version-matrix.json docs/tools changelogs/dev-fragments changelogs/.plugin-cache.yaml
  Makefile ruff.toml ansible.cfg requirements.txt)
ships=(plugins roles playbooks meta extensions deploy docs changelogs CHANGELOG.rst README.md LICENSE)
paths_re() { local IFS='|'; local joined="$*"; printf '^(%s)(/|$)' "${joined//./\\.}"; }
keep_out_re="$(paths_re "${keep_out[@]}")|^\."
ships_re=$(paths_re "${ships[@]}")
offenders=$(grep -E "$keep_out_re" "$work/artifact-files" || true)
[ -z "$offenders" ] || fail "the artifact ships development files (keep them out with galaxy.yml build_ignore):
$offenders"
unexpected=$(grep -vE "$ships_re" "$work/artifact-files" || true)
[ -z "$unexpected" ] || fail "the artifact holds files outside what users need (${ships[*]}); ship them (add to
ships in scripts/release-test.sh) or keep them out (galaxy.yml build_ignore and keep_out):
$unexpected"
missing=$({ grep -E "$ships_re" "$work/git-files" || true; } | { grep -vE "$keep_out_re" || true; } | comm -23 - "$work/artifact-files")
[ -z "$missing" ] || fail "user-facing files are missing from the artifact (too broad a galaxy.yml build_ignore?):
$missing"
ee_files=$(python -c 'import sys, yaml; print(" ".join(yaml.safe_load(open(sys.argv[1]))["dependencies"].values()))' \
  meta/execution-environment.yml)
for f in README.md LICENSE meta/runtime.yml meta/execution-environment.yml $ee_files changelogs/changelog.yaml; do
  grep -qxF "$f" "$work/artifact-files" || fail "the artifact has no $f"
done
echo "  ok $(wc -l < "$work/artifact-files") files: ${ships[*]}; none of ${keep_out[*]} or top-level dot files"

# Size: the artifact is what users run (2.8 MiB unpacked at the 0.1.0 release, with its changelog, the AWX project and
# the monitoring files); the budget leaves room to grow, while the workshop (the benchmark pages alone are 0.65 MiB)
# does not fit.
budget_kib=3200
mkdir -p "$work/unpacked" && tar -xzf "$artifact" -C "$work/unpacked"
size_kib=$(du -sk --apparent-size "$work/unpacked" | cut -f1)
[ "$size_kib" -le "$budget_kib" ] || fail "the unpacked artifact is $size_kib KiB, above its budget of $budget_kib KiB; largest:
$(cd "$work/unpacked" && du -ak --apparent-size . | sort -rn | sed -n '2,11p')"
echo "  ok unpacked $size_kib KiB (budget $budget_kib KiB)"
# README.md is also the source tree's front page: its "Develop and test" links may point at development pages
# (keep_out) that the source tree holds; every other link, and every link of every other page, resolves in the artifact.
broken=$(cd "$work/unpacked" && python - "$repo" "$keep_out_re" <<'PY'
import pathlib, re, sys
repo, keep_out = pathlib.Path(sys.argv[1]), re.compile(sys.argv[2])
link = re.compile(r"\]\(([^)\s#]+)(?:#[^)]*)?\)")
for page in sorted(pathlib.Path(".").rglob("*.md")):
    for target in link.findall(page.read_text(encoding="utf-8")):
        if re.match(r"[a-z][a-z0-9+.-]*:", target) or (page.parent / target).exists():
            continue
        if str(page) == "README.md" and keep_out.search(target) and (repo / target).exists():
            continue
        print(f"{page}: {target}")
PY
)
[ -z "$broken" ] || fail "shipped pages link to files the artifact does not hold:
$broken"
echo "  ok every relative link of the shipped Markdown pages resolves inside the artifact"

# 2. Install as the README says, into an empty directory with a stock configuration; nothing of the work tree is
#    visible from here on. ANSIBLE_CONFIG names an empty file (an absent one would fall back to ~/.ansible.cfg or
#    /etc/ansible/ansible.cfg), and the installed copy is found through ANSIBLE_COLLECTIONS_PATH alone.
step "ansible-galaxy collection install -r requirements.yml (empty directory, stock configuration)"
mkdir -p "$work/run" "$work/collections"
: > "$work/empty.cfg"
printf 'collections:\n  - name: %s\n    type: file\n' "$artifact" > "$work/run/requirements.yml"
export ANSIBLE_CONFIG="$work/empty.cfg"
unset ANSIBLE_COLLECTIONS_PATHS
export ANSIBLE_COLLECTIONS_PATH="$work/collections"
cd "$work/run"
[ -z "$(ls -A "$work/collections")" ] || fail "$work/collections is not empty"
ansible-galaxy collection install --offline -r requirements.yml -p "$work/collections" >"$work/install.out" 2>&1 \
  || fail "ansible-galaxy collection install -r requirements.yml: $(tail -5 "$work/install.out")"
installed="$work/collections/ansible_collections/nodeguard/failover"
[ -f "$installed/MANIFEST.json" ] || fail "requirements.yml did not install nodeguard.failover into $work/collections"
found_at=$(ansible-galaxy collection list nodeguard.failover --format json \
  | python -c 'import json, sys; print(" ".join(json.load(sys.stdin)))')
[ "$found_at" = "$work/collections/ansible_collections" ] \
  || fail "nodeguard.failover resolves from '$found_at', expected only the installed artifact"

# 3a. Documentation of every plugin and role, from the installed copy.
doc_ok() {  # type fqcn: ansible-doc renders it (exit 0, non-empty JSON docs)
  ansible-doc --json -t "$1" "$2" >"$work/doc.json" 2>"$work/doc.err" \
    || fail "ansible-doc -t $1 $2: $(grep -v '^\s*$' "$work/doc.err" | tail -4)"
  python -c 'import json, sys; sys.exit(0 if json.load(open(sys.argv[1])) else 1)' "$work/doc.json" \
    || fail "ansible-doc -t $1 $2: empty documentation"
}
step "ansible-doc: modules"
modules=$(find "$installed/plugins/modules" -name '*.py' ! -name '__init__.py' -printf '%f\n' | sed 's/\.py$//' | sort)
[ -n "$modules" ] || fail "no modules in the artifact"
for m in $modules; do doc_ok module "nodeguard.failover.$m"; echo "  ok nodeguard.failover.$m"; done

step "ansible-doc: filters"
filters=$(ansible-doc -t filter -l nodeguard.failover --json | python -c 'import json, sys; print("\n".join(sorted(json.load(sys.stdin))))')
for f in $filters; do doc_ok filter "$f"; echo "  ok $f"; done

step "ansible-doc: roles (meta/argument_specs.yml)"
for role_dir in "$installed"/roles/*/; do
  role=$(basename "$role_dir")
  [ -f "$role_dir/meta/argument_specs.yml" ] || fail "role $role has no meta/argument_specs.yml"
  doc_ok role "nodeguard.failover.$role"
  echo "  ok nodeguard.failover.$role"
done

# 3b. Documentation markup: O(), RV(), M() references point at real options, return values, plugins.
step "antsibull-docs lint-collection-docs --plugin-docs"
(cd "$installed" && antsibull-docs lint-collection-docs --plugin-docs --skip-rstcheck .) \
  || fail "antsibull-docs lint-collection-docs found documentation errors (above)"

# 3c. Playbooks by FQCN. Collection playbook names must be identifiers: one name per playbook, the
#     FQCN one; every playbook must resolve and pass --syntax-check.
step "ansible-playbook <FQCN> --syntax-check"
echo "all: {children: {control_plane: {hosts: {cp1: {}}}, workers: {hosts: {worker1: {}}}}}" > "$work/inventory.yml"
for pb in "$installed"/playbooks/*.yml; do
  name=$(basename "$pb" .yml)
  [[ "$name" =~ ^[a-z_][a-z0-9_]*$ ]] || fail "playbook $name cannot run by FQCN (name it with letters, digits and _)"
  ansible-playbook -i "$work/inventory.yml" "nodeguard.failover.$name" --syntax-check >"$work/pb.out" 2>&1 \
    || fail "nodeguard.failover.$name --syntax-check: $(tail -5 "$work/pb.out")"
  grep -q "^playbook: $installed/playbooks/$name.yml" "$work/pb.out" \
    || fail "nodeguard.failover.$name did not resolve to the installed artifact: $(cat "$work/pb.out")"
  echo "  ok nodeguard.failover.$name"
done

# 3d. module_defaults: one group entry sets the cluster connection of every member (meta/runtime.yml).
step "module_defaults group/nodeguard.failover.k8s"
ansible-playbook "$repo/tests/unit/release/module_defaults_k8s_group.yml" --check >"$work/md.out" 2>&1 \
  || fail "module_defaults for group/nodeguard.failover.k8s did not reach every member: $(tail -15 "$work/md.out")"
echo "  ok group/nodeguard.failover.k8s reaches node_outage, node_recover, kubernetes.core.k8s_info, k8s_cluster_info"

# 4. Changelog.
step "antsibull-changelog lint (user and development fragments) + release dry run"
cd "$repo"
antsibull-changelog lint
antsibull-changelog lint changelogs/dev-fragments/*.yml
mkdir -p "$work/changelog"
git ls-files -z --cached --others --exclude-standard -- galaxy.yml changelogs \
  | tar --null -T - -cf - | tar -xf - -C "$work/changelog"
version=$(python -c 'import yaml; print(yaml.safe_load(open("galaxy.yml"))["version"])')
(cd "$work/changelog" && antsibull-changelog release --version "$version" --date "$(date -u +%F)" >/dev/null)
grep -q "^v$version" "$work/changelog/CHANGELOG.rst" || fail "CHANGELOG.rst has no v$version section"
echo "  ok CHANGELOG.rst renders v$version with $(find changelogs/fragments -name "*.yml" | wc -l) fragment(s)"

if [ "${1:-}" = "--keep" ]; then echo "release-test: kept $work"; fi
echo "release-test: ok"
