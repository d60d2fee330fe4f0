package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/google/uuid"
	"github.com/sirupsen/logrus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/stagehand-dev/stagehand/controller/plumbing"
)

// inClusterNamespaceFile holds the pod's namespace when it runs in a cluster.
const inClusterNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// errLostLeadership stops the process: another replica leads now, and this one's caches
// and queues must not act any more. The Deployment restarts it as a standby.
var errLostLeadership = errors.New("lost the leader Lease")

// leaderIdentity is this replica's identity in the Lease: <pod name>_<uuid> when the pod
// name is known (POD_NAME, from the downward API), else <hostname>_<uuid>, so that the
// Lease, the logs and a standby's /readyz name the pod that leads.
func leaderIdentity(podName string, hostname func() (string, error)) (string, error) {
	name := podName
	if name == "" {
		host, err := hostname()
		if err != nil {
			return "", fmt.Errorf("reading the hostname for the leader identity: %w", err)
		}
		name = host
	}
	return name + "_" + uuid.NewString(), nil
}

// runWithLeaderElection runs run while this process holds the Lease, and keeps status
// (the stagehand_leader gauge and /readyz) up to date.
func runWithLeaderElection(ctx context.Context, cfg config, kube kubernetes.Interface, run func(context.Context),
	status *plumbing.LeaderStatus, log *logrus.Entry) error {
	identity, err := leaderIdentity(cfg.PodName, os.Hostname)
	if err != nil {
		return err
	}
	namespace := ownNamespace(cfg)
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Name: cfg.LeaseName, Namespace: namespace},
		Client:     kube.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: identity},
	}
	log = log.WithFields(logrus.Fields{"lease": namespace + "/" + cfg.LeaseName, "identity": identity})

	var lost bool
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   cfg.LeaseDuration,
		RenewDeadline:   cfg.RenewDeadline,
		RetryPeriod:     cfg.RetryPeriod,
		ReleaseOnCancel: true,
		Name:            cfg.LeaseName,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				log.Info("Became the leader")
				status.Observed(identity)
				status.Started()
				run(ctx)
			},
			OnStoppedLeading: func() {
				status.Stopped()
				if ctx.Err() == nil {
					lost = true
					log.Error("Lost the leader Lease")
				}
				cancel()
			},
			OnNewLeader: func(current string) {
				status.Observed(current)
				if current != identity {
					log.WithField("leader", current).Info("Another replica leads")
				}
			},
		},
	})
	if err != nil {
		return fmt.Errorf("setting up leader election: %w", err)
	}
	status.Follow(elector.GetLeader)
	log.Info("Waiting for the leader Lease")
	elector.Run(runCtx)
	if lost {
		return errLostLeadership
	}
	return nil
}

// ownNamespace is the controller's own namespace: --leader-elect-lease-namespace (the
// shipped Deployment sets it to the pod's), else the pod's, else default.
func ownNamespace(cfg config) string {
	if cfg.LeaseNamespace != "" {
		return cfg.LeaseNamespace
	}
	if data, err := os.ReadFile(inClusterNamespaceFile); err == nil && strings.TrimSpace(string(data)) != "" {
		return strings.TrimSpace(string(data))
	}
	return "default"
}
