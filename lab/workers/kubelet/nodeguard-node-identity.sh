#!/bin/sh
# What firmware and the kernel give a real machine, given to this container node before its kubelet
# starts (the kubelet's cadvisor reads these files):
#  - systemUUID: cadvisor reads /sys/class/dmi/id/product_uuid and, where a machine has no DMI (a
#    Firecracker VM), falls back to /etc/machine-id. workers.sh writes the UUID its lab BMC reports
#    (lab/bmc/system_uuid.py) to /etc/nodeguard/product_uuid and, without dashes, to /etc/machine-id
#    at creation; with DMI it is bound over product_uuid here, else every node would report the host's.
#  - /proc/sys/kernel/random/boot_id: a new id per container start (/run is a fresh tmpfs at each
#    boot), else the host's id would never change and no power cycle could be proven.
set -eu
mkdir -p /run/nodeguard
bind() {  # bind FILE TARGET: once per boot
  if ! grep -q " $2 " /proc/self/mountinfo; then
    mount --bind "$1" "$2"
  fi
}
if [ -s /etc/nodeguard/product_uuid ] && [ -e /sys/class/dmi/id/product_uuid ]; then
  bind /etc/nodeguard/product_uuid /sys/class/dmi/id/product_uuid
fi
[ -s /run/nodeguard/boot_id ] || cat /proc/sys/kernel/random/uuid > /run/nodeguard/boot_id
bind /run/nodeguard/boot_id /proc/sys/kernel/random/boot_id
