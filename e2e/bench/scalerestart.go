package main

// The scale part's restart (scale.go): every controller process killed with thousands of
// DeploymentConfigs in the cluster, and the steps of its coming back.

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
)

// ScaleRestart is every controller process killed (SIGKILL) with DeploymentConfigs DCs
// in the cluster. Each time runs from the kill to the first poll that saw the step.
type ScaleRestart struct {
	DeploymentConfigs int `json:"deploymentConfigs"`
	Killed            int `json:"killed"`
	// LeaseLeftMS is how long the dead leader's Lease was still valid at the kill.
	LeaseLeftMS float64 `json:"leaseLeftMs"`
	// ProcessMS: a new controller process runs; ReadyMS: a controller's /readyz answers
	// 200; LeaderMS: one answers "ok: leader"; SyncedMS: the leader's caches have synced
	// (stagehand_rollouts appears in its /metrics); DrainedMS: its queues have taken
	// every DC and are empty again.
	ProcessMS float64 `json:"processMs"`
	ReadyMS   float64 `json:"readyMs"`
	LeaderMS  float64 `json:"leaderMs"`
	SyncedMS  float64 `json:"syncedMs"`
	DrainedMS float64 `json:"drainedMs"`
	// ChangeSentMS is when a template change was sent (while no controller ran), and
	// DeployerPodMS when its revision's deployer pod was created.
	ChangeSentMS  float64 `json:"changeSentMs"`
	DeployerPodMS float64 `json:"deployerPodMs"`
	// RSSMiB is the new leader's VmRSS once drained.
	RSSMiB float64 `json:"rssMiB"`
	Note   string  `json:"note,omitempty"`
}

// measureRestart kills every controller process of the cluster with SIGKILL (the node
// agent restarts them, as a kubelet would), changes pick's template while none runs, and
// polls until the new leader has synced, worked through every DC and created pick's
// revision 2 deployer pod.
func measureRestart(ctx context.Context, env *framework.Env, dcs int, pick types.NamespacedName) (*ScaleRestart, error) {
	rs := &ScaleRestart{DeploymentConfigs: dcs}
	pods, err := env.Kube.CoreV1().Pods(framework.ControllerNamespace).List(ctx, metav1.ListOptions{LabelSelector: framework.ControllerSelector})
	if err != nil {
		return nil, err
	}
	podOf := map[string]string{} // pod IP → pod name; a restarted container keeps its pod's IP
	for _, pod := range pods.Items {
		if pod.Status.PodIP != "" && pod.DeletionTimestamp == nil {
			podOf[pod.Status.PodIP] = pod.Name
		}
	}
	lease, err := env.Kube.CoordinationV1().Leases(framework.ControllerNamespace).Get(ctx, framework.LeaseName, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	old := env.LocalProcesses(controllerBin)
	if len(old) == 0 || len(podOf) == 0 {
		return nil, fmt.Errorf("no controller process (%d) or pod IP (%d) to restart", len(old), len(podOf))
	}
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	first, err := watchRevisionStarts(wctx, env, pick.Namespace)
	if err != nil {
		return nil, err
	}
	logf("scale: killing %d controller processes with %d DCs in the cluster", len(old), dcs)
	t0 := time.Now()
	for _, pid := range old {
		if err := syscall.Kill(pid, syscall.SIGKILL); err == nil {
			rs.Killed++
		}
	}
	if l := lease.Spec; l.RenewTime != nil && l.LeaseDurationSeconds != nil {
		rs.LeaseLeftMS = max(0, sinceMS(t0, l.RenewTime.Add(time.Duration(*l.LeaseDurationSeconds)*time.Second)))
	}
	var sent time.Time
	if err := changeDC(ctx, env.Stagehand.StagehandV1alpha1().DeploymentConfigs(pick.Namespace), pick.Name, 2, &sent); err != nil {
		return rs, fmt.Errorf("changing %s: %w", pick, err)
	}
	rs.ChangeSentMS = sinceMS(t0, sent)
	key := podKey(pick.Namespace, stagehandv1.RevisionName(pick.Name, 2))
	leaderPod, leaderIP := "", ""
	for rs.DrainedMS == 0 || rs.DeployerPodMS == 0 {
		if time.Since(t0) > scaleRestartLimit {
			rs.Note = fmt.Sprintf("not all steps seen within %s", scaleRestartLimit)
			logf("scale: restart: %s", rs.Note)
			break
		}
		now := time.Now()
		if rs.ProcessMS == 0 && slices.ContainsFunc(env.LocalProcesses(controllerBin), func(pid int) bool { return !slices.Contains(old, pid) }) {
			rs.ProcessMS = sinceMS(t0, now)
		}
		for ip, pod := range podOf {
			if rs.LeaderMS != 0 {
				break
			}
			code, body, err := controllerGet(ctx, ip, "/readyz", time.Second)
			if err != nil || code != http.StatusOK {
				continue
			}
			if rs.ReadyMS == 0 {
				rs.ReadyMS = sinceMS(t0, now)
			}
			if body == "ok: leader" {
				rs.LeaderMS, leaderPod, leaderIP = sinceMS(t0, now), pod, ip
			}
		}
		if leaderIP != "" && rs.DrainedMS == 0 {
			if code, text, err := controllerGet(ctx, leaderIP, "/metrics", 10*time.Second); err == nil && code == http.StatusOK {
				synced, depth, adds := restartProgress(text)
				if synced && rs.SyncedMS == 0 {
					rs.SyncedMS = sinceMS(t0, now)
				}
				if synced && depth == 0 && adds >= float64(dcs) {
					rs.DrainedMS = sinceMS(t0, now)
				}
			}
		}
		if rs.DeployerPodMS == 0 {
			if at, err := first.wait(ctx, key, 0); err == nil {
				rs.DeployerPodMS = sinceMS(t0, at)
			}
		}
		select {
		case <-ctx.Done():
			return rs, ctx.Err()
		case <-time.After(scalePoll):
		}
	}
	if pids := env.PodProcesses(framework.ControllerNamespace, leaderPod, controllerBin); len(pids) > 0 {
		if ps, ok := readProc(pids[0]); ok {
			rs.RSSMiB = kbToMiB(ps.rssKB)
		}
	}
	logf("scale: restart with %d DCs: process %s, ready %s, leader %s (the Lease had %s left), synced %s, drained %s; a change sent at %s got its deployer pod at %s; RSS then %.0f MiB",
		dcs, ms(rs.ProcessMS), ms(rs.ReadyMS), ms(rs.LeaderMS), ms(rs.LeaseLeftMS), ms(rs.SyncedMS), ms(rs.DrainedMS), ms(rs.ChangeSentMS), ms(rs.DeployerPodMS), rs.RSSMiB)
	if err := waitRevisionComplete(ctx, env, pick.Namespace, pick.Name, 2, time.Minute); err != nil {
		msg := fmt.Sprintf("the change's revision (%s): %v", pick, err)
		logf("scale: restart: %s", msg)
		rs.Note = strings.Join(slices.DeleteFunc([]string{rs.Note, msg}, func(s string) bool { return s == "" }), "; ")
	}
	return rs, nil
}

// restartProgress reads a leader's /metrics: whether its caches have synced
// (stagehand_rollouts is absent until then), the summed depth of its workqueues, and the
// adds of its DeploymentConfig queue.
func restartProgress(text string) (synced bool, depth, dcAdds float64) {
	eachSeries(text, func(name string, labels map[string]string, v float64) {
		switch name {
		case "stagehand_rollouts":
			synced = true
		case "workqueue_depth":
			depth += v
		case "workqueue_adds_total":
			if labels["name"] == scaleDCQueue {
				dcAdds += v
			}
		}
	})
	return synced, depth, dcAdds
}
