package localcluster

import (
	"context"
	"fmt"
	"os"

	"k8s.io/client-go/kubernetes"
)

// Status checks that the cluster recorded in dir runs: every component's pid file names a
// live process and the apiserver answers /readyz. `up` uses it to tell a healthy running
// cluster (nothing to do) from a broken one (run `down` first).
func Status(ctx context.Context, dir string) error {
	l := layout{dir: dir}
	st, err := l.readState()
	if err != nil {
		return err
	}
	for _, name := range stopOrder {
		if (isRegistryComponent(name) && st.Registry == "") || (isRealNodeComponent(name) && st.RealNode == "") {
			continue
		}
		pid, alive, err := readPIDFile(l.pidFile(name))
		if err != nil {
			if os.IsNotExist(err) {
				return fmt.Errorf("%s is not running (no %s)", name, l.pidFile(name))
			}
			return err
		}
		if !alive {
			return fmt.Errorf("%s (pid %d) is not running; see %s", name, pid, l.logFile(name))
		}
	}
	rc, err := loadRESTConfig(l.kubeconfig())
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return fmt.Errorf("building the admin client: %w", err)
	}
	if err := apiserverReady(cs)(ctx); err != nil {
		return fmt.Errorf("kube-apiserver is not ready: %w; see %s", err, l.logFile(apiserverName))
	}
	return nil
}
