// The pod sandbox's process: it holds the pod's namespaces open, reaps the
// zombies of a shared PID namespace, and exits on SIGINT or SIGTERM. The
// same job as Kubernetes' build/pause/linux/pause.c, in Go so that
// deploy/local/build.sh makes it static with the toolchain it already has.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range sigs {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
