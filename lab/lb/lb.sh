#!/usr/bin/env bash
# The lab's API server load balancer ng-lb (10.89.77.5:6443): Debian haproxy in a container of its own,
# in front of ng-cp1's kube-apiserver. With it (NODEGUARD_LAB_LB=1 at `lab.sh up`), every node's
# kubelet.conf points at the load balancer, as on a kubeadm cluster whose controlPlaneEndpoint is a LB;
# the controllers and the host's admin.kubeconfig still talk to the API server directly.
#
#   lab/lb/lb.sh up              create/start ng-lb; idempotent
#   lab/lb/lb.sh down            remove it
#   lab/lb/lb.sh image           build the image (bench/isolated-lab.sh builds it outside the netns)
#   lab/lb/lb.sh status          container state and its /healthz
#   lab/lb/lb.sh blackhole on    drop every packet in and out of ng-lb (no RST, no FIN: a stuck LB)
#   lab/lb/lb.sh blackhole off   let packets through again
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
network=nodeguard-lab
subnet=10.89.77.0/24
name=ng-lb
ip=10.89.77.5
health_port=18404
image=localhost/nodeguard-lab-lb:latest
base_image=${NODEGUARD_NODE_IMAGE:-localhost/nodeguard-node:bookworm}
table=nodeguard_blackhole

say() { echo "lb: $*"; }
die() { echo "lb: error: $*" >&2; exit 1; }

ensure_image() {
  podman image exists "$base_image" || "$repo/scripts/build-node-image.sh"
  local recipe
  recipe=$( { podman image inspect --format '{{.Id}}' "$base_image"; cat "$here/Containerfile" "$here/haproxy.cfg"; } |
            sha256sum | cut -c1-16)
  if [ "$(podman image inspect --format '{{ index .Labels "nodeguard.recipe" }}' "$image" 2>/dev/null)" = "$recipe" ]; then
    return 0
  fi
  say "building $image (recipe $recipe)"
  local log
  log=$(mktemp)
  podman build --label "nodeguard.recipe=$recipe" --build-arg "BASE_IMAGE=$base_image" \
    -t "$image" -f "$here/Containerfile" "$here" >"$log" 2>&1 || { cat "$log" >&2; rm -f "$log"; die "image build failed"; }
  rm -f "$log"
}

healthz() { curl -fsS --max-time 3 "http://127.0.0.1:$health_port/healthz" >/dev/null 2>&1; }

cmd_up() {
  ensure_image
  podman network exists "$network" || podman network create --subnet "$subnet" "$network" >/dev/null
  local state
  state=$(podman container inspect --format '{{.State.Status}}' "$name" 2>/dev/null || echo absent)
  # It keeps no state: a stopped one is created again (with this script's options).
  if [ "$state" != running ]; then
    [ "$state" = absent ] || podman rm -f -t 0 "$name" >/dev/null
    # NET_ADMIN: only for nft in its own network namespace (the drill's blackhole).
    podman run -d --name "$name" --hostname "$name" --network "$network" --ip "$ip" \
      --publish "127.0.0.1:$health_port:8404" --cap-add NET_ADMIN --label nodeguard.lab=lb \
      "$image" haproxy -W -db -f /etc/haproxy/haproxy.cfg >/dev/null
    say "created $name ($ip:6443 -> 10.89.77.10:6443, health http://127.0.0.1:$health_port/healthz)"
  fi
  local deadline=$((SECONDS + 20))
  until podman exec "$name" haproxy -c -q -f /etc/haproxy/haproxy.cfg >/dev/null 2>&1 &&
        [ "$(podman container inspect --format '{{.State.Status}}' "$name")" = running ]; do
    [ $SECONDS -lt $deadline ] || { podman logs --tail 20 "$name" >&2; die "$name is not running"; }
    sleep 1
  done
}

cmd_down() {
  if podman container exists "$name"; then
    podman rm -f -t 0 "$name" >/dev/null
    say "removed $name"
  fi
}

cmd_status() {
  local state
  state=$(podman container inspect --format '{{.State.Status}}' "$name" 2>/dev/null || echo absent)
  if [ "$state" = running ] && healthz; then
    echo "$name $state healthz=ok"
  else
    echo "$name $state healthz=failing"
  fi
}

# Drop, do not reject: the peers get neither RST nor FIN and keep their connections open, as with the
# seed's LB that silently dropped connections it no longer knew. (Pausing haproxy would not do: the
# kernel would still ACK.) The table is the LB container's own: the host and other containers are untouched.
cmd_blackhole() {
  case "${1:-}" in
    on)
      podman exec -i "$name" nft -f - <<NFT
table inet $table {
  chain input { type filter hook input priority -300; policy drop; }
  chain output { type filter hook output priority -300; policy drop; }
}
NFT
      say "blackhole on" ;;
    off)
      podman exec "$name" nft delete table inet "$table" 2>/dev/null || true
      say "blackhole off" ;;
    *) die "usage: $0 blackhole on|off" ;;
  esac
}

case "${1:-}" in
  up) cmd_up ;;
  down) cmd_down ;;
  image) ensure_image ;;
  status) cmd_status ;;
  blackhole) shift; cmd_blackhole "$@" ;;
  *) echo "usage: $0 up | down | image | status | blackhole on|off" >&2; exit 2 ;;
esac
