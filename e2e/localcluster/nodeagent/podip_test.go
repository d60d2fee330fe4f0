package nodeagent

import (
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestPodIPIsOwnOnlyWhenAsked(t *testing.T) {
	pod := func(uid string, own bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid)}}
		if own {
			p.Annotations = map[string]string{OwnIPAnnotation: "true"}
		}
		return p
	}
	assert.Equal(t, "127.0.0.1", podIP(pod("a", false), "127.0.0.1", "198.18.0.0/16"))

	_, network, _ := net.ParseCIDR("198.18.0.0/16")
	for _, cidr := range []string{"", "198.18.0.0/16"} {
		seen := map[string]bool{}
		for _, uid := range []string{"3f1c", "9a7e", "0d42", "c0ff", "beef"} {
			ip := podIP(pod(uid, true), "127.0.0.1", cidr)
			assert.Equal(t, ip, podIP(pod(uid, true), "127.0.0.1", cidr), "stable for one pod")
			parsed := net.ParseIP(ip)
			if cidr == "" {
				assert.True(t, parsed.IsLoopback(), ip)
			} else {
				assert.True(t, network.Contains(parsed), ip)
			}
			assert.NotEqual(t, "127.0.0.1", ip)
			assert.False(t, seen[ip], "two pods got %s", ip)
			seen[ip] = true
		}
	}
}
