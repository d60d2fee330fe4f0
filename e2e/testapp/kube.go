package main

import (
	"context"
	"fmt"
	"os"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// kube runs "kube get configmaps|pods -n NAMESPACE".
func kube(args []string) int {
	if len(args) != 4 || args[0] != "get" || args[2] != "-n" {
		fmt.Fprintln(os.Stderr, "usage: testapp kube get configmaps|pods -n NAMESPACE")
		return exitUsage
	}
	resource, namespace := args[1], args[3]
	cfg, err := clientConfig()
	if err != nil {
		fmt.Fprintf(os.Stderr, "testapp: %v\n", err)
		return exitError
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "testapp: creating client: %v\n", err)
		return exitError
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var names []string
	switch resource {
	case "configmaps", "configmap", "cm":
		list, lerr := client.CoreV1().ConfigMaps(namespace).List(ctx, metav1.ListOptions{})
		err = lerr
		if lerr == nil {
			for _, o := range list.Items {
				names = append(names, o.Name)
			}
		}
	case "pods", "pod", "po":
		list, lerr := client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
		err = lerr
		if lerr == nil {
			for _, o := range list.Items {
				names = append(names, o.Name)
			}
		}
	default:
		fmt.Fprintf(os.Stderr, "testapp: unknown resource %q (want configmaps or pods)\n", resource)
		return exitUsage
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "testapp: listing %s in %s: %v\n", resource, namespace, err)
		if apierrors.IsForbidden(err) {
			return exitForbidden
		}
		return exitError
	}
	for _, n := range names {
		fmt.Println(n)
	}
	return exitOK
}

// clientConfig loads the config the standard client-go way: in-cluster first, then the
// kubeconfig loading rules (KUBECONFIG, then ~/.kube/config).
func clientConfig() (*rest.Config, error) {
	if cfg, err := rest.InClusterConfig(); err == nil {
		return cfg, nil
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading client config (in-cluster, then KUBECONFIG): %w", err)
	}
	return cfg, nil
}
