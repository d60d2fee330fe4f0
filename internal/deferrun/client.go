package deferrun

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	stagehandclient "github.com/stagehand-dev/stagehand/api/client/clientset/versioned"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// Client reads and releases pods' defer runs.
type Client struct {
	Kube      kubernetes.Interface
	Stagehand stagehandclient.Interface
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// policies caches the policies read for the step names, by namespace/name; nil when
	// unreadable.
	policies map[string]*v1alpha1.DeferPolicy
}

func (c *Client) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// policy is the named policy, or nil when it cannot be read (gone, or not allowed).
func (c *Client) policy(ctx context.Context, ns, name string) *v1alpha1.DeferPolicy {
	key := ns + "/" + name
	if p, ok := c.policies[key]; ok {
		return p
	}
	if c.policies == nil {
		c.policies = map[string]*v1alpha1.DeferPolicy{}
	}
	p, err := c.Stagehand.StagehandV1alpha1().DeferPolicies(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		p = nil
	}
	c.policies[key] = p
	return p
}
