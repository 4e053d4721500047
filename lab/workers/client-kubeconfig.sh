#!/usr/bin/env bash
# Writes a kubeconfig with a client certificate signed by the lab CA (lab/.state/pki), for lab
# identities the control plane's pki.py does not create (extra workers, the CSI attacher).
#
#   client-kubeconfig.sh OUT_FILE USER [GROUP]
#
set -euo pipefail
out=$1 user=$2 group=${3:-}
state=${NODEGUARD_LAB_STATE:-$(cd "$(dirname "$0")/.." && pwd)/.state}
ca_dir=$state/pki/kubernetes/pki
[ -f "$ca_dir/ca.key" ] || { echo "client-kubeconfig: no lab CA in $ca_dir (control plane not up?)" >&2; exit 1; }
[ -f "$out" ] && exit 0

# The control plane's own address (as in controller-manager.conf), or NODEGUARD_LAB_CLIENT_SERVER:
# workers.sh passes its nodes' server, which is the load balancer's in a lab with one (lab/lb).
server=${NODEGUARD_LAB_CLIENT_SERVER:-$(awk '/server:/ {print $2; exit}' "$state/pki/kubernetes/controller-manager.conf")}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
subject="/CN=$user"
[ -n "$group" ] && subject="/O=$group$subject"
openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$work/client.key" \
  -subj "$subject" -out "$work/client.csr" 2>/dev/null
openssl x509 -req -in "$work/client.csr" -CA "$ca_dir/ca.crt" -CAkey "$ca_dir/ca.key" \
  -set_serial "0x$(openssl rand -hex 8)" -days 365 -out "$work/client.crt" 2>/dev/null \
  -extfile <(printf 'keyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n')

mkdir -p "$(dirname "$out")"
export KUBECONFIG=$work/kubeconfig
kubectl config set-cluster kubernetes --server "$server" --certificate-authority "$ca_dir/ca.crt" --embed-certs >/dev/null
kubectl config set-credentials "$user" --client-certificate "$work/client.crt" --client-key "$work/client.key" \
  --embed-certs >/dev/null
kubectl config set-context default --cluster kubernetes --user "$user" >/dev/null
kubectl config use-context default >/dev/null
install -m 600 "$KUBECONFIG" "$out"
