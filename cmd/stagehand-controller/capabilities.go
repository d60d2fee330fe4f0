package main

import (
	"context"
	"fmt"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// publishCapabilities records in the ConfigMap stagehand-capabilities of the controller's
// namespace what this cluster serves, for the admission policies that take it as their
// param: deploy/policies/defer-before-eviction.yaml refuses a BeforeEviction DeferPolicy
// where the EvictionRequest API is not served, with a message that says so. A failure is
// logged, not fatal: the policy then allows, and the DeferPolicy's Ready condition says
// why its steps cannot run.
func publishCapabilities(ctx context.Context, kube kubernetes.Interface, namespace string, evictionAPI bool, log *logrus.Entry) {
	value := v1alpha1.CapabilityNotServed
	if evictionAPI {
		value = v1alpha1.CapabilityServed
	}
	err := retry.OnError(retry.DefaultBackoff, func(error) bool { return true }, func() error {
		cms := kube.CoreV1().ConfigMaps(namespace)
		cm, err := cms.Get(ctx, v1alpha1.CapabilitiesConfigMap, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = cms.Create(ctx, &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.CapabilitiesConfigMap, Namespace: namespace,
					Labels: map[string]string{"app.kubernetes.io/name": "stagehand"}},
				Data: map[string]string{v1alpha1.CapabilityEvictionRequestAPI: value},
			}, metav1.CreateOptions{})
			return err
		}
		if err != nil {
			return err
		}
		if cm.Data[v1alpha1.CapabilityEvictionRequestAPI] == value {
			return nil
		}
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		cm.Data[v1alpha1.CapabilityEvictionRequestAPI] = value
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		log.WithError(err).Warn(fmt.Sprintf("could not record the cluster's capabilities in ConfigMap %s/%s", namespace, v1alpha1.CapabilitiesConfigMap))
		return
	}
	log.WithField(v1alpha1.CapabilityEvictionRequestAPI, value).Info("recorded the cluster's capabilities for the admission policies")
}
