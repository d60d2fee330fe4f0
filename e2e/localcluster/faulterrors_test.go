package localcluster

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// The fault calls refuse what they cannot do, and say why.
func TestFaultsRefuseWhatTheyCannotDo(t *testing.T) {
	detached := &Cluster{state: state{Nodes: 2, Detached: true}}
	err := detached.StopNode("stagehand-node-1")
	assert.ErrorContains(t, err, "node faults need the node agent in this process")
	assert.ErrorContains(t, detached.LoseNode("stagehand-node-1"), "node faults need the node agent in this process")
	assert.ErrorContains(t, detached.StartNode(context.Background(), "stagehand-node-1"),
		"node faults need the node agent in this process")

	inProcess := &Cluster{state: state{Nodes: 2}, agent: &inProcessAgent{}}
	assert.ErrorContains(t, inProcess.StopNode("stagehand-node-3"),
		"the local cluster has no node stagehand-node-3; its nodes are [stagehand-node-1 stagehand-node-2]")

	err = detached.RestartComponent(context.Background(), "kube-proxy", time.Second)
	assert.ErrorContains(t, err, `RestartComponent restarts etcd, kube-apiserver, kube-controller-manager or kube-scheduler, not "kube-proxy"`)
	stopped := &Cluster{stopped: true}
	assert.ErrorContains(t, stopped.RestartComponent(context.Background(), etcdName, time.Second),
		"the local cluster is stopped")
}
