package nodeagent

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

const (
	kubeletVersion       = "v1.37.2"
	leaseNamespace       = corev1.NamespaceNodeLease
	leaseDuration        = 40 // seconds, like the kubelet's default
	leaseRenewPeriod     = 10 * time.Second
	nodeStatusPeriod     = 30 * time.Second
	nodeRegisterAttempts = 30
)

// nodeAllocatable is what every node offers: much more than the machine has, because
// simulated containers cost nothing.
var nodeAllocatable = corev1.ResourceList{
	corev1.ResourceCPU:              resource.MustParse("32"),
	corev1.ResourceMemory:           resource.MustParse("64Gi"),
	corev1.ResourcePods:             resource.MustParse("1000"),
	corev1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
}

// registerNode creates the Node, or updates the one an earlier agent left, and reports it
// Ready. It retries for a while: the apiserver may have only just started.
func (a *Agent) registerNode(ctx context.Context, name string, port int32) error {
	var lastErr error
	backoff := wait.Backoff{Duration: 200 * time.Millisecond, Factor: 1.5, Steps: nodeRegisterAttempts, Cap: 2 * time.Second}
	err := wait.ExponentialBackoffWithContext(ctx, backoff, func(ctx context.Context) (bool, error) {
		lastErr = a.registerNodeOnce(ctx, name, port)
		if lastErr != nil {
			a.log.WithError(lastErr).WithField("node", name).Debug("registering node, will retry")
		}
		return lastErr == nil, nil
	})
	if err != nil {
		return fmt.Errorf("registering node %s: %w (last error: %v)", name, err, lastErr)
	}
	return nil
}

func (a *Agent) registerNodeOnce(ctx context.Context, name string, port int32) error {
	nodes := a.client.CoreV1().Nodes()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: nodeLabels(name)}}
	node.Status = a.nodeStatus(name, port, nil, nowSecond())
	created, err := nodes.Create(ctx, node, metav1.CreateOptions{})
	if err == nil {
		node = created
	} else if apierrors.IsAlreadyExists(err) {
		node, err = nodes.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("getting node: %w", err)
		}
		if node.Labels == nil {
			node.Labels = map[string]string{}
		}
		for k, v := range nodeLabels(name) {
			node.Labels[k] = v
		}
		if node, err = nodes.Update(ctx, node, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("updating node labels: %w", err)
		}
	} else {
		return fmt.Errorf("creating node: %w", err)
	}
	// Status on create is kept, but an existing node needs its status replaced; one
	// status update covers both.
	node.Status = a.nodeStatus(name, port, node.Status.Conditions, nowSecond())
	if _, err := nodes.UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("updating node status: %w", err)
	}
	return nil
}

func nodeLabels(name string) map[string]string {
	return map[string]string{
		corev1.LabelHostname:       name,
		corev1.LabelOSStable:       runtime.GOOS,
		corev1.LabelArchStable:     runtime.GOARCH,
		"stagehand.dev/node-agent": "true",
	}
}

// nodeStatus is the full status of a node. Conditions keep their transition time.
func (a *Agent) nodeStatus(name string, port int32, prev []corev1.NodeCondition, now metav1.Time) corev1.NodeStatus {
	cond := func(t corev1.NodeConditionType, s corev1.ConditionStatus, reason, msg string) corev1.NodeCondition {
		c := corev1.NodeCondition{Type: t, Status: s, Reason: reason, Message: msg, LastHeartbeatTime: now, LastTransitionTime: now}
		for _, p := range prev {
			if p.Type == t && p.Status == s {
				c.LastTransitionTime = p.LastTransitionTime
			}
		}
		return c
	}
	return corev1.NodeStatus{
		Capacity:    nodeAllocatable.DeepCopy(),
		Allocatable: nodeAllocatable.DeepCopy(),
		Phase:       corev1.NodeRunning,
		Conditions: []corev1.NodeCondition{
			cond(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
			cond(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
			cond(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
			cond(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady", "kubelet is posting ready status"),
		},
		Addresses: []corev1.NodeAddress{
			{Type: corev1.NodeInternalIP, Address: a.address},
			{Type: corev1.NodeHostName, Address: name},
		},
		DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: port}},
		NodeInfo: corev1.NodeSystemInfo{
			MachineID:               "stagehand-local",
			SystemUUID:              "stagehand-local",
			BootID:                  a.bootID,
			KernelVersion:           kernelVersion(),
			OSImage:                 "Stagehand local node agent",
			ContainerRuntimeVersion: "stagehand://" + kubeletVersion,
			KubeletVersion:          kubeletVersion,
			OperatingSystem:         runtime.GOOS,
			Architecture:            runtime.GOARCH,
		},
	}
}

// heartbeat beats for the node whenever it runs (see StopNode), until ctx ends.
func (a *Agent) heartbeat(ctx context.Context, n *node) {
	for {
		nodeCtx, ok := n.gate.wait(ctx)
		if !ok {
			return
		}
		a.beat(nodeCtx, n.name, n.port)
	}
}

// beat renews the node's Lease at once and every leaseRenewPeriod, and its Ready condition
// every nodeStatusPeriod, until ctx ends. Errors are logged and retried on the next tick.
func (a *Agent) beat(ctx context.Context, name string, port int32) {
	lease := time.NewTicker(leaseRenewPeriod)
	defer lease.Stop()
	status := time.NewTicker(nodeStatusPeriod)
	defer status.Stop()
	a.renewLease(ctx, name)
	for {
		select {
		case <-ctx.Done():
			return
		case <-lease.C:
			a.renewLease(ctx, name)
		case <-status.C:
			if err := a.updateNodeStatus(ctx, name, port); err != nil && ctx.Err() == nil {
				a.log.WithError(err).WithField("node", name).Warn("updating node status")
			}
		}
	}
}

func (a *Agent) updateNodeStatus(ctx context.Context, name string, port int32) error {
	nodes := a.client.CoreV1().Nodes()
	for attempt := 0; ; attempt++ {
		node, err := nodes.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			// Someone deleted the node: register it again.
			return a.registerNodeOnce(ctx, name, port)
		}
		if err != nil {
			return fmt.Errorf("getting node: %w", err)
		}
		node.Status = a.nodeStatus(name, port, node.Status.Conditions, nowSecond())
		_, err = nodes.UpdateStatus(ctx, node, metav1.UpdateOptions{})
		if err == nil || !apierrors.IsConflict(err) || attempt == 3 {
			if err != nil {
				return fmt.Errorf("updating node status: %w", err)
			}
			return nil
		}
	}
}

func (a *Agent) renewLease(ctx context.Context, name string) {
	if err := a.renewLeaseOnce(ctx, name); err != nil && ctx.Err() == nil {
		a.log.WithError(err).WithField("node", name).Warn("renewing node lease")
	}
}

func (a *Agent) renewLeaseOnce(ctx context.Context, name string) error {
	leases := a.client.CoordinationV1().Leases(leaseNamespace)
	now := metav1.NewMicroTime(time.Now())
	lease, err := leases.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		lease = &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: leaseNamespace},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity:       ptrTo(name),
				LeaseDurationSeconds: ptrTo(int32(leaseDuration)),
				RenewTime:            &now,
			},
		}
		if node, err := a.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); err == nil {
			lease.OwnerReferences = []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID,
			}}
		}
		if _, err := leases.Create(ctx, lease, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating lease: %w", err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("getting lease: %w", err)
	}
	lease.Spec.HolderIdentity = ptrTo(name)
	lease.Spec.LeaseDurationSeconds = ptrTo(int32(leaseDuration))
	lease.Spec.RenewTime = &now
	if _, err := leases.Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("updating lease: %w", err)
	}
	return nil
}

// kernelVersion is the host's kernel release, as the kubelet reports it.
func kernelVersion() string {
	data, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(data))
}
