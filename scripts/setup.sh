#!/usr/bin/env bash
# Sets up everything the project needs on a fresh Debian machine, idempotently:
# system packages, podman defaults, the Python virtualenv and the collection link.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"

# 1. Debian packages (root is expected; apt-get update once per setup when something is missing).
mapfile -t packages < <(grep -Ev '^\s*(#|$)' scripts/system-packages.txt)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# 2. Podman defaults that container nodes need on these machines (see docs/lab.md):
#    runc (crun fails on hybrid cgroups) and ulimits the runtime is allowed to set.
conf=/etc/containers/containers.conf
if ! grep -q "nodeguard" "$conf" 2>/dev/null; then
  if [ -s "$conf" ]; then
    echo "setup: $conf exists; add runtime = \"runc\" and default_ulimits by hand (see docs/lab.md)" >&2
    exit 1
  fi
  mkdir -p "$(dirname "$conf")"
  cat > "$conf" <<'CONF'
# written by nodeguard.failover scripts/setup.sh
[containers]
default_ulimits = ["nofile=1024:1024", "nproc=4096:4096"]

[engine]
runtime = "runc"
CONF
fi

# 3. Python virtualenv with the pinned requirements (re-run only when requirements change).
venv="$repo/.venv"
stamp="$venv/.requirements.sha256"
want=$(sha256sum requirements.txt | cut -d' ' -f1)
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  "$venv/bin/pip" install -q --upgrade pip
  "$venv/bin/pip" install -q -r requirements.txt
  echo "$want" > "$stamp"
fi

# 4. The repository is the collection: link it where Ansible and pytest look for it.
link="$repo/.build/collections/ansible_collections/nodeguard/failover"
mkdir -p "$(dirname "$link")"
[ -L "$link" ] || ln -sfn "$repo" "$link"
echo "setup: ok"
