// Command pause is the lab's pod sandbox process (tagged registry.k8s.io/pause:3.10 in the
// lab's containerd, never pulled). As PID 1 of a pod's namespaces it blocks forever, reaps
// orphaned children, and exits 0 on SIGINT or SIGTERM so a sandbox stops at once.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for sig := range signals {
		if sig != syscall.SIGCHLD {
			os.Exit(0)
		}
		reap()
	}
}

// reap collects every exited child without blocking.
func reap() {
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}
