package main

import (
	"bufio"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// bindMount makes target show source's directory, creating target if needed. A target that is
// already a mount point is left as it is: the call is repeated work from an earlier attempt.
func bindMount(source, target string, readOnly bool) error {
	if err := os.MkdirAll(target, 0o750); err != nil {
		return err
	}
	mounted, err := isMountPoint(target)
	if err != nil || mounted {
		return err
	}
	if err := unix.Mount(source, target, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind mount %s on %s: %w", source, target, err)
	}
	if readOnly {
		// A bind mount takes the read-only flag only on a remount.
		if err := unix.Mount("", target, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
			_ = unix.Unmount(target, 0)
			return fmt.Errorf("making %s read-only: %w", target, err)
		}
	}
	return nil
}

// unmount removes the mount on path; a path that is not a mount point (or does not exist) is fine.
func unmount(path string) error {
	mounted, err := isMountPoint(path)
	if err != nil || !mounted {
		return err
	}
	if err := unix.Unmount(path, 0); err != nil {
		return fmt.Errorf("unmount %s: %w", path, err)
	}
	return nil
}

// isMountPoint reports whether something is mounted on path, from the fifth field of
// /proc/self/mountinfo (the mount point). Paths are compared as given: callers pass clean ones.
func isMountPoint(path string) (bool, error) {
	file, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return false, err
	}
	defer file.Close()
	scanner := bufio.NewScanner(file)
	for scanner.Scan() {
		fields := strings.Fields(scanner.Text())
		if len(fields) > 4 && fields[4] == path {
			return true, nil
		}
	}
	return false, scanner.Err()
}
