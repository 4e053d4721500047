#!/usr/bin/env bash
# Builds kube-apiserver, kube-controller-manager and kube-scheduler from the
# published k8s.io/kubernetes Go module, and kwok from sigs.k8s.io/kwok.
# Binaries are cached outside the repo, keyed by version: a second run is free.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
k8s_version=$(awk '/^require k8s.io\/kubernetes/ {print $3}' "$here/k8s-build/go.mod")
kwok_version=${KWOK_VERSION:-v0.7.0}
cache=${NODEGUARD_CACHE:-$HOME/.cache/nodeguard}
bin="$cache/k8s/$k8s_version/bin"
mkdir -p "$bin"

pkg=k8s.io/component-base/version
ldflags="-s -w -X $pkg.gitVersion=$k8s_version -X $pkg.gitMajor=$(echo "${k8s_version#v}" | cut -d. -f1) -X $pkg.gitMinor=$(echo "${k8s_version#v}" | cut -d. -f2) -X $pkg.gitTreeState=clean"

for cmd in kube-apiserver kube-controller-manager kube-scheduler; do
  if [ -x "$bin/$cmd" ]; then
    echo "cached: $bin/$cmd"
    continue
  fi
  echo "building $cmd $k8s_version (first build takes a while on 2 cores)"
  (cd "$here/k8s-build" && CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$bin/$cmd.tmp" "k8s.io/kubernetes/cmd/$cmd")
  mv "$bin/$cmd.tmp" "$bin/$cmd"
done

kwok_bin="$cache/kwok/$kwok_version/bin"
if [ ! -x "$kwok_bin/kwok" ]; then
  echo "building kwok $kwok_version"
  mkdir -p "$kwok_bin"
  CGO_ENABLED=0 GOBIN="$kwok_bin" go install -trimpath "sigs.k8s.io/kwok/cmd/kwok@$kwok_version"
fi
echo "$bin"
