#!/usr/bin/env bash
# Builds kube-apiserver, kube-controller-manager and kubelet of one Kubernetes version for the
# version matrix (make lab-matrix), from the published k8s.io/kubernetes module, like
# lab/scripts/build-k8s.sh does for the lab's own version.
#
#   lab/matrix/build.sh v1.31.0            (writes the version's go.mod when missing, then builds)
#   lab/matrix/build.sh v1.31.0 module     (only writes the go.mod and go.sum)
#
# Each version has its own Go module, lab/matrix/go/<version>/ (go.mod, go.sum, tools.go), committed
# so builds are pinned. When it is missing, this script writes it once from k8s.io/kubernetes'
# own go.mod: the k8s.io staging modules (./staging/src/... there) are pinned to v0.<minor>.<patch>
# and every other replace line of Kubernetes' go.mod is copied (old releases pin all their
# dependencies that way). lab/matrix/go/<version>/pins, when present, holds replace lines
# ("module => module version") that win over Kubernetes' own pin of that module (a dependency we had
# to move for the Go we build with or that the module proxy no longer serves; docs/version-matrix.md
# says why), and
# lab/matrix/go/<version>/gotoolchain the Go release to build with (GOTOOLCHAIN, fetched from the
# module proxy) when today's Go cannot build that version, and lab/matrix/go/<version>/commands the
# commands to build when not all three can be (its comment lines say why).
#
# Binaries are cached outside the repo, keyed by version, built atomically (a killed build leaves
# no binary): ~/.cache/nodeguard/matrix/<version>/bin/
set -euo pipefail
version=${1:?usage: build.sh v1.X.Y [module]}
only_module=${2:-}
here=$(cd "$(dirname "$0")" && pwd)
module_dir="$here/go/$version"
bin="${NODEGUARD_CACHE:-$HOME/.cache/nodeguard}/matrix/$version/bin"
commands=(kube-apiserver kube-controller-manager kubelet)
if [ -f "$module_dir/commands" ]; then
  read -r -a commands < <(grep -v '^#' "$module_dir/commands")
fi

all_built() {
  local cmd
  for cmd in "${commands[@]}"; do
    [ -x "$bin/$cmd" ] || return 1
  done
}
if all_built && [ -z "$only_module" ]; then
  echo "cached: $bin"
  exit 0
fi
# A version the lab builds too (lab/scripts/build-k8s.sh: same module, same version ldflags) is not
# built twice: run.py takes it from the lab's cache.
lab_bin="${NODEGUARD_CACHE:-$HOME/.cache/nodeguard}/k8s/$version/bin"
if [ -z "$only_module" ] && [ -x "$lab_bin/kube-apiserver" ] && [ -x "$lab_bin/kube-controller-manager" ] && [ -x "$lab_bin/kubelet" ]; then
  echo "cached (the lab's build): $lab_bin"
  exit 0
fi

major=$(echo "${version#v}" | cut -d. -f1)
minor=$(echo "${version#v}" | cut -d. -f2)
patch=$(echo "${version#v}" | cut -d. -f3)
staging_version="v0.$minor.$patch"
if [ -f "$module_dir/gotoolchain" ]; then
  GOTOOLCHAIN=$(cat "$module_dir/gotoolchain")
  export GOTOOLCHAIN
fi

write_module() {
  echo "build: writing $module_dir/go.mod from k8s.io/kubernetes@$version's go.mod"
  local k8s_mod
  k8s_mod=$(go mod download -json "k8s.io/kubernetes@$version" | awk -F'"' '$2 == "GoMod" {print $4}')
  mkdir -p "$module_dir"
  {
    echo "// The version matrix's build of Kubernetes $version (written by lab/matrix/build.sh)."
    echo "module nodeguard.lab/matrix"
    echo
    awk '$1 == "go" {print; exit}' "$k8s_mod"
    echo
    echo "require k8s.io/kubernetes $version"
    echo
    echo "replace ("
    # Both forms of Kubernetes' replace lines: inside a replace ( ... ) block, and `replace a => b`.
    # A pins line wins over Kubernetes' own replace line for that module.
    local pins=/dev/null
    [ -f "$module_dir/pins" ] && pins="$module_dir/pins"
    awk -v staging="$staging_version" -v pins="$pins" '
      FILENAME == pins { if ($1 !~ /^#/ && $2 == "=>") pinned[$1] = $0; next }
      /^replace \($/ {block = 1; next}
      block && /^\)$/ {block = 0; next}
      (block || $1 == "replace") && /=>/ {
        line = $0; sub(/^replace /, "", line); sub(/^[ \t]+/, "", line)
        split(line, side, / => /); split(side[1], left, " ")
        if (left[1] in pinned) { print "\t" pinned[left[1]]; done[left[1]] = 1 }
        else if (side[2] ~ /^\.\/staging\//) print "\t" left[1] " => " left[1] " " staging
        else print "\t" line
      }
      END { for (m in pinned) if (!(m in done)) print "\t" pinned[m] }' "$pins" "$k8s_mod"
    echo ")"
  } >"$module_dir/go.mod"
  cat >"$module_dir/tools.go" <<'GO'
//go:build tools

// Package matrix only pins the commands the version matrix builds.
package matrix

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
GO
  (cd "$module_dir" && go mod tidy)
}
[ -f "$module_dir/go.sum" ] || write_module
[ "$only_module" != module ] || exit 0

# The version variables hack/lib/version.sh sets, so --version tells the truth.
ldflags=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X $pkg.gitVersion=$version -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
done

mkdir -p "$bin"
for cmd in "${commands[@]}"; do
  if [ -x "$bin/$cmd" ]; then
    echo "cached: $bin/$cmd"
    continue
  fi
  echo "building $bin/$cmd ($(go env GOVERSION))"
  started=$(date +%s)
  (cd "$module_dir" && CGO_ENABLED=0 nice -n 19 go build -trimpath -ldflags "-s -w $ldflags" \
    -o "$bin/$cmd.tmp" "k8s.io/kubernetes/cmd/$cmd")
  mv "$bin/$cmd.tmp" "$bin/$cmd"
  echo "built $bin/$cmd in $(( $(date +%s) - started )) s"
done
"$bin/${commands[0]}" --version
