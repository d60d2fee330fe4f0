package main

import (
	"fmt"
	"strings"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes"

	stagehandclient "github.com/stagehand-dev/stagehand/api/client/clientset/versioned"
	"github.com/stagehand-dev/stagehand/internal/rollout"
)

// newClient builds the rollout client from the kubeconfig flags (--kubeconfig, --context,
// --namespace, ...), the way kubectl does.
func newClient(flags *genericclioptions.ConfigFlags) (*rollout.Client, error) {
	config, err := flags.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("loading the kubeconfig: %w", err)
	}
	ns, _, err := flags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, fmt.Errorf("finding the namespace: %w", err)
	}
	kube, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	sh, err := stagehandclient.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	return &rollout.Client{Kube: kube, Stagehand: sh, Namespace: ns}, nil
}

// dcNames are the ways to name the resource in TYPE/NAME.
var dcNames = map[string]bool{
	"dc": true, "deploymentconfig": true, "deploymentconfigs": true,
	"deploymentconfig.stagehand.dev": true, "deploymentconfigs.stagehand.dev": true,
}

// parseRef reads NAME or dc/NAME (deploymentconfig/NAME, ...).
func parseRef(arg string) (string, error) {
	kind, name, found := strings.Cut(arg, "/")
	if !found {
		name, kind = arg, "dc"
	}
	if !dcNames[strings.ToLower(kind)] {
		return "", usagef("%q is not a DeploymentConfig: give NAME or dc/NAME", arg)
	}
	if name == "" {
		return "", usagef("%q has no name: give NAME or dc/NAME", arg)
	}
	return name, nil
}
