// Package v1alpha1 is the stagehand.dev/v1alpha1 API: the DeploymentConfig resource.
//
// A DeploymentConfig describes an application (a pod template and a replica count) and how
// it rolls out: the strategy (Recreate, Rolling or a user's Custom image), lifecycle hooks
// that run once per rollout (pre, mid, post), and the triggers that start a rollout
// (ConfigChange, ImageChange). Every rollout is a revision: the ReplicaSet <name>-<N>,
// carried out by exactly one deployer pod <name>-<N>-deploy.
//
// Field names follow OpenShift's apps.openshift.io/v1 so that existing DeploymentConfigs
// convert mechanically. Defaults are applied by the CRD schema where the default does not
// depend on another field, and by SetDefaults otherwise; validation is in
// the CRD schema and its CEL rules, so invalid objects are refused at admission.
//
// +k8s:deepcopy-gen=package
// +groupName=stagehand.dev
// +kubebuilder:object:generate=true
package v1alpha1
