#!/usr/bin/env bash
# Lab BMCs: one Redfish service (sushy-tools) with one system per lab node, on loopback, TLS
# with a lab CA and HTTP basic auth. A system's power is its podman container: power actions
# stop/start the container, and PowerState is read from the container. See docs/lab-bmc.md.
#
#   lab/bmc/bmc.sh up NODE...      start (or reconfigure) the service for these nodes; idempotent
#   lab/bmc/bmc.sh status [NODE...] service state and each node's Redfish PowerState
#   lab/bmc/bmc.sh down            stop the service and remove its state (keys, credentials)
#
# Environment: NODEGUARD_BMC_STATE_DIR (default lab/.state/bmc), NODEGUARD_BMC_PORT (8443).
# Tests run a private instance with their own state dir and port, so they never touch the lab's.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
state=${NODEGUARD_BMC_STATE_DIR:-$repo/lab/.state/bmc}
listen_ip=127.0.0.1
port=${NODEGUARD_BMC_PORT:-8443}
python=${NODEGUARD_PYTHON:-$repo/.venv/bin/python}
pid_file=$state/redfish.pid
log_file=$state/redfish.log
cert_days=30

say() { echo "bmc: $*"; }
die() { echo "bmc: error: $*" >&2; exit 1; }

# --- TLS: a lab CA that signs one server certificate for 127.0.0.1 -------------------------
# The CA key is deleted once it has signed: nothing can mint another certificate it vouches for.
ensure_tls() {
  [ -s "$state/ca.crt" ] && [ -s "$state/server.crt" ] && [ -s "$state/server.key" ] && return 0
  say "creating lab CA and server certificate in $state"
  local tmp
  tmp=$(mktemp -d "$state/tls.XXXXXX")
  (
    umask 077
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
      -keyout "$tmp/ca.key" -out "$tmp/ca.crt" -days "$cert_days" \
      -subj "/CN=nodeguard lab BMC CA" \
      -addext "basicConstraints=critical,CA:TRUE" \
      -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
      -keyout "$tmp/server.key" -out "$tmp/server.csr" -subj "/CN=$listen_ip" 2>/dev/null
    printf '%s\n' \
      "subjectAltName=IP:$listen_ip,DNS:localhost" \
      "basicConstraints=critical,CA:FALSE" \
      "keyUsage=critical,digitalSignature" \
      "extendedKeyUsage=serverAuth" \
      "subjectKeyIdentifier=hash" \
      "authorityKeyIdentifier=keyid" > "$tmp/server.ext"
    openssl x509 -req -in "$tmp/server.csr" -CA "$tmp/ca.crt" -CAkey "$tmp/ca.key" \
      -CAcreateserial -days "$cert_days" -extfile "$tmp/server.ext" -out "$tmp/server.crt" 2>/dev/null
  )
  chmod 0644 "$tmp/ca.crt"
  mv "$tmp/ca.crt" "$tmp/server.crt" "$tmp/server.key" "$state/"
  rm -rf "$tmp"
}

# --- the emulator process ---------------------------------------------------------------
# A pid counts as ours only if it still runs our serve.py with our config (pids get reused).
running_pid() {
  [ -s "$pid_file" ] || return 1
  local pid
  pid=$(cat "$pid_file")
  [ -r "/proc/$pid/cmdline" ] || return 1
  tr '\0' ' ' < "/proc/$pid/cmdline" | grep -qF "redfish/serve.py $state/sushy.conf" || return 1
  echo "$pid"
}

stop_service() {
  local pid
  if pid=$(running_pid); then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null || true
    say "stopped Redfish service (pid $pid)"
  fi
  rm -f "$pid_file"
}

# curl with the credentials on stdin, never on the command line (ps would show them).
redfish_get() {
  local path=$1 user pass
  user=$("$python" -c 'import json,sys; print(json.load(open(sys.argv[1]))["username"])' "$state/credentials.json")
  pass=$("$python" -c 'import json,sys; print(json.load(open(sys.argv[1]))["password"])' "$state/credentials.json")
  printf 'user = "%s:%s"\n' "$user" "$pass" |
    curl --silent --show-error --fail --max-time 5 --cacert "$state/ca.crt" -K - \
      "https://$listen_ip:$port$path"
}

start_service() {
  rm -rf "$state/sushy-state"  # the fake driver's store; systems come from sushy.conf alone
  setsid "$python" "$here/redfish/serve.py" "$state/sushy.conf" >>"$log_file" 2>&1 < /dev/null &
  echo $! > "$pid_file"
  for _ in $(seq 100); do
    running_pid > /dev/null || { tail -n 20 "$log_file" >&2; rm -f "$pid_file"; die "Redfish service exited (log: $log_file)"; }
    redfish_get /redfish/v1/Systems > /dev/null 2>&1 && { say "Redfish service up on https://$listen_ip:$port (pid $(cat "$pid_file"))"; return 0; }
    sleep 0.2
  done
  tail -n 20 "$log_file" >&2
  stop_service
  die "Redfish service did not answer on https://$listen_ip:$port within 20 s (log: $log_file)"
}

cmd_up() {
  [ $# -gt 0 ] || die "usage: bmc.sh up NODE..."
  mkdir -p "$state"
  chmod 0700 "$state"
  ensure_tls
  local before after
  before=$(sha256sum "$state/sushy.conf" 2>/dev/null | cut -d' ' -f1 || true)
  "$python" "$here/redfish/write_config.py" "$state" "$listen_ip" "$port" "$@"
  after=$(sha256sum "$state/sushy.conf" | cut -d' ' -f1)
  if running_pid > /dev/null && [ "$before" = "$after" ]; then
    say "Redfish service already up on https://$listen_ip:$port for: $*"
    return 0
  fi
  stop_service
  start_service
  say "endpoints: $state/endpoints.json"
}

cmd_down() {
  stop_service
  if [ -d "$state" ]; then
    rm -rf "$state"
    say "removed $state"
  fi
}

cmd_status() {
  local pid
  if ! pid=$(running_pid); then
    say "Redfish service: down"
    return 3
  fi
  say "Redfish service: up on https://$listen_ip:$port (pid $pid)"
  local nodes=("$@")
  [ ${#nodes[@]} -gt 0 ] || mapfile -t nodes < <("$python" -c 'import json,sys; print("\n".join(json.load(open(sys.argv[1]))))' "$state/endpoints.json")
  local node power container rc=0
  printf '%-16s %-8s %s\n' NODE REDFISH CONTAINER
  for node in "${nodes[@]}"; do
    power=$(redfish_get "/redfish/v1/Systems/$node" 2>/dev/null |
      "$python" -c 'import json,sys; print(json.load(sys.stdin)["PowerState"])' 2>/dev/null) || { power="?"; rc=1; }
    container=$(podman container inspect --format '{{.State.Status}}' "$node" 2>/dev/null || echo absent)
    printf '%-16s %-8s %s\n' "$node" "$power" "$container"
  done
  return $rc
}

case "${1:-}" in
  up) shift; cmd_up "$@" ;;
  down) shift; cmd_down ;;
  status) shift; cmd_status "$@" ;;
  *) echo "usage: $0 up NODE... | down | status [NODE...]" >&2; exit 2 ;;
esac
