package v1alpha1

// Adoption of a running Deployment (kubectl stagehand adopt, docs/adopt.md).
const (
	// AdoptAnnotation on a DeploymentConfig made by kubectl stagehand adopt says where the
	// adoption is: AdoptPending (the controller creates no revision yet) or AdoptReady (the
	// pods are relabelled and orphaned: the controller creates revision 1 Complete, with
	// spec.replicas, and no deployer pod, and its ReplicaSet adopts them).
	AdoptAnnotation = GroupName + "/adopt"
	// AdoptReplicaSetAnnotation names the Deployment's ReplicaSet whose pods become
	// revision 1, so that a rerun after the Deployment is gone finds them.
	AdoptReplicaSetAnnotation = GroupName + "/adopt-replicaset"
	// AdoptSelectorAnnotation is that ReplicaSet's selector (JSON): its pods are the ones
	// relabelled, whatever the ReplicaSet's name.
	AdoptSelectorAnnotation = GroupName + "/adopt-selector"
	// AdoptTemplateAnnotation holds the Deployment's template (JSON) when its pods do not
	// run it yet (a paused Deployment, or one whose controller had not caught up): revision
	// 1 is what the pods run, and this template becomes the DC's once revision 1 owns them.
	AdoptTemplateAnnotation = GroupName + "/adopt-template"
	// AdoptPausedAnnotation says the Deployment was paused: the DC is paused once revision
	// 1 owns the pods (a paused DC could not create revision 1).
	AdoptPausedAnnotation = GroupName + "/adopt-paused"
	// AdoptedFromAnnotation on revision 1 of an adopted DeploymentConfig names the
	// Deployment whose pods it took over (deployment/NAME): it never had a deployer pod.
	AdoptedFromAnnotation = GroupName + "/adopted-from"

	AdoptPending = "Pending"
	AdoptReady   = "Ready"
)
