package deployerpod

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-dev/stagehand/api/revision"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// Defaults are what the controller gives every deployer pod where its revision says
// nothing (controller flags, docs/controller.md).
type Defaults struct {
	// Image is the built-in strategy image of Recreate and Rolling revisions.
	Image string
	// Resources fill in the requests and limits that spec.strategy.resources lacks, so
	// that a namespace whose ResourceQuota requires them admits the deployer pod.
	Resources corev1.ResourceRequirements
}

// NewPod is the one function that builds a revision's deployer pod (DESIGN.md §5,
// docs/deployer-contract.md). strategy and template come from the revision's config
// snapshot, so the pod runs what the revision was created with; defaults give the
// controller's built-in strategy image and the resources the strategy leaves unset.
func NewPod(rs *appsv1.ReplicaSet, spec *v1alpha1.DeploymentConfigSpec, defaults Defaults) *corev1.Pod {
	strategy := spec.Strategy
	config := rs.Labels[v1alpha1.ConfigLabel]

	labels := map[string]string{}
	for k, v := range strategy.Labels {
		labels[k] = v
	}
	labels[v1alpha1.ConfigLabel] = config
	labels[v1alpha1.RevisionLabel] = rs.Labels[v1alpha1.RevisionLabel]
	labels[v1alpha1.DeployerPodForLabel] = rs.Name

	var annotations map[string]string
	if len(strategy.Annotations) > 0 {
		annotations = make(map[string]string, len(strategy.Annotations))
		for k, v := range strategy.Annotations {
			annotations[k] = v
		}
	}

	// A plain (non-controller) owner: the ReplicaSet controller must not adopt or count the
	// pod, but deleting the revision deletes its deployer pod.
	kind := revision.Kind(rs)
	owner := metav1.OwnerReference{APIVersion: kind.GroupVersion().String(), Kind: kind.Kind, Name: rs.Name, UID: rs.UID}

	env := []corev1.EnvVar{
		{Name: v1alpha1.EnvRevision, Value: rs.Name},
		{Name: v1alpha1.EnvNamespace, Value: rs.Namespace},
		{Name: v1alpha1.EnvOpenShiftDeploymentName, Value: rs.Name},
		{Name: v1alpha1.EnvOpenShiftDeploymentNamespace, Value: rs.Namespace},
	}
	image := defaults.Image
	var command []string
	if p := strategy.CustomParams; p != nil {
		if strategy.Type == v1alpha1.DeploymentStrategyTypeCustom && p.Image != "" {
			image = p.Image
		}
		command = append(command, p.Command...)
		env = append(env, p.Environment...)
	}

	tmpl := spec.Template.Spec
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:            v1alpha1.DeployerPodName(rs.Name),
			Namespace:       rs.Namespace,
			Labels:          labels,
			Annotations:     annotations,
			OwnerReferences: []metav1.OwnerReference{owner},
		},
		Spec: corev1.PodSpec{
			ServiceAccountName:    v1alpha1.DeployerServiceAccountName,
			RestartPolicy:         corev1.RestartPolicyNever,
			ActiveDeadlineSeconds: strategy.ActiveDeadlineSeconds,
			NodeSelector:          tmpl.NodeSelector,
			Tolerations:           tmpl.Tolerations,
			ImagePullSecrets:      tmpl.ImagePullSecrets,
			SecurityContext:       podSecurityContext(),
			Containers: []corev1.Container{{
				Name:                     v1alpha1.DeployerContainerName,
				Image:                    image,
				Command:                  command,
				Env:                      env,
				Resources:                v1alpha1.WithDefaultResources(strategy.Resources, defaults.Resources),
				TerminationMessagePath:   v1alpha1.DefaultTerminationMessagePath,
				TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
				SecurityContext:          containerSecurityContext(),
			}},
		},
	}
	return pod.DeepCopy() // nothing shared with the snapshot or the cache
}

// podSecurityContext and containerSecurityContext make the deployer pod pass the Pod
// Security Standard "restricted" in any namespace, whatever the template says (the
// template's security contexts are not copied). runAsNonRoot is set without a runAsUser:
// the built-in image runs as the numeric user 65532 (Dockerfile.deployer), which the kubelet
// can verify, and a custom strategy image keeps its own non-root user. A user forced here
// would override that user, and fall outside the UID range that some clusters (OpenShift's
// restricted SCC) assign to a namespace.
func podSecurityContext() *corev1.PodSecurityContext {
	return &corev1.PodSecurityContext{
		RunAsNonRoot:   new(true),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

func containerSecurityContext() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		RunAsNonRoot:             new(true),
		AllowPrivilegeEscalation: new(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
}

// PodFor is the deployer pod of revision rs, built by NewPod from the revision's config
// snapshot with the API's defaults applied; it also returns that spec. The error is the
// snapshot's.
func PodFor(rs *appsv1.ReplicaSet, defaults Defaults) (*corev1.Pod, *v1alpha1.DeploymentConfigSpec, error) {
	spec, err := revision.Snapshot(rs)
	if err != nil {
		return nil, nil, err
	}
	defaulted := &v1alpha1.DeploymentConfig{Spec: *spec}
	v1alpha1.SetDefaults(defaulted)
	return NewPod(rs, &defaulted.Spec, defaults), &defaulted.Spec, nil
}
