#!/usr/bin/env bash
# Builds the lab's Kubernetes binaries from published Go modules (no release downloads):
#   kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, kubelet  <- k8s.io/kubernetes
#   etcd                                                                        <- go.etcd.io/etcd/server/v3
#   kwok                                                                        <- sigs.k8s.io/kwok
#   pause (the lab's pod sandbox program, registry.k8s.io/pause:3.10 in the     <- lab/k8s-build/pause
#   real-kubelet worker's containerd; keyed by the hash of its source)
#   nodeguard-csi-node (the lab CSI driver's node plugin, same keying)          <- lab/k8s-build/csinode
# Versions come from lab/k8s-build/go.mod (one module pins them all, with replace lines for the
# k8s.io staging modules) and KWOK_VERSION. Binaries are cached outside the repo, keyed by
# version, so a second run costs nothing:
#   ~/.cache/nodeguard/k8s/<version>/bin/  ~/.cache/nodeguard/etcd/<version>/bin/  ~/.cache/nodeguard/kwok/<version>/bin/
#   ~/.cache/nodeguard/pause/<source hash>/bin/  ~/.cache/nodeguard/csinode/<source hash>/bin/
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
# The version go.mod requires (read with awk: Go is only needed when something must be built).
module_version() { awk -v m="$1" '($1 == m || ($1 == "require" && $2 == m)) {print $NF; exit}' "$here/k8s-build/go.mod"; }
need_go() {
  command -v go >/dev/null && return 0
  echo "build-k8s: the Go toolchain is missing (it is needed once, to fill the cache)" >&2
  exit 1
}
k8s_version=$(module_version k8s.io/kubernetes)
etcd_version=$(module_version go.etcd.io/etcd/server/v3)
kwok_version=${KWOK_VERSION:-v0.7.0}
cache=${NODEGUARD_CACHE:-$HOME/.cache/nodeguard}

# build <output> <package> [ldflags]: builds once, atomically (a killed build leaves no binary).
build() {
  local out=$1 pkg=$2 ldflags=${3:-}
  if [ -x "$out" ]; then
    echo "cached: $out"
    return
  fi
  need_go
  echo "building $out from $pkg (the first build takes minutes on 2 cores)"
  mkdir -p "$(dirname "$out")"
  (cd "$here/k8s-build" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w $ldflags" -o "$out.tmp" "$pkg")
  mv "$out.tmp" "$out"
}

# The version variables hack/lib/version.sh sets, so /version and `kubectl version` tell the truth.
major=$(echo "${k8s_version#v}" | cut -d. -f1)
minor=$(echo "${k8s_version#v}" | cut -d. -f2)
k8s_ldflags=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  k8s_ldflags+=" -X $pkg.gitVersion=$k8s_version -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
done

k8s_bin="$cache/k8s/$k8s_version/bin"
for cmd in kube-apiserver kube-controller-manager kube-scheduler kubectl kubelet; do
  build "$k8s_bin/$cmd" "k8s.io/kubernetes/cmd/$cmd" "$k8s_ldflags"
done

build "$cache/etcd/$etcd_version/bin/etcd" go.etcd.io/etcd/server/v3

# The pause program is ours: keyed by its source hash, so an edit rebuilds it.
pause_hash=$(sha256sum "$here/k8s-build/pause/main.go" | cut -c1-16)
build "$cache/pause/$pause_hash/bin/pause" ./pause
csinode_hash=$(cat "$here"/k8s-build/csinode/*.go | sha256sum | cut -c1-16)
build "$cache/csinode/$csinode_hash/bin/nodeguard-csi-node" ./csinode

kwok_bin="$cache/kwok/$kwok_version/bin"
if [ -x "$kwok_bin/kwok" ]; then
  echo "cached: $kwok_bin/kwok"
else
  need_go
  echo "building kwok $kwok_version"
  mkdir -p "$kwok_bin"
  CGO_ENABLED=0 GOBIN="$kwok_bin" go install -trimpath "sigs.k8s.io/kwok/cmd/kwok@$kwok_version"
fi
echo "$k8s_bin"
