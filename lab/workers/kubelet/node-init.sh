#!/bin/sh
# PID 1 of the real-kubelet node until it execs systemd (the image's CMD).
# The node runs in its own cgroup namespace (--cgroupns=private), but on a cgroup v1 host podman's
# systemd mode also stacks the HOST's whole name=systemd hierarchy (mount root "/../..") over the
# node's own one: systemd would then build its tree at the host's root cgroup, and the node's own
# name=systemd cgroup would be left empty and removed (podman exec fails, runc in the node fails).
# Remove that layer (with its release_agent mask) so systemd and the kubelet see only the node's cgroups.
set -eu
for _ in 1 2 3; do
  awk '$5 == "/sys/fs/cgroup/systemd" && $4 != "/" {found = 1} END {exit !found}' /proc/self/mountinfo || break
  umount -l /sys/fs/cgroup/systemd
done
exec /sbin/init "$@"
