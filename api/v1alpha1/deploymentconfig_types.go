package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DeploymentConfig is an application together with how it rolls out. Every rollout is a
// revision: the ReplicaSet <name>-<N> and exactly one deployer pod <name>-<N>-deploy.
//
// +genclient
// +genclient:method=GetScale,verb=get,subresource=scale,result=k8s.io/api/autoscaling/v1.Scale
// +genclient:method=UpdateScale,verb=update,subresource=scale,input=k8s.io/api/autoscaling/v1.Scale,result=k8s.io/api/autoscaling/v1.Scale
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=dc,categories=all
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:printcolumn:name="Revision",type=integer,JSONPath=`.status.latestVersion`,description="The latest revision"
// +kubebuilder:printcolumn:name="Desired",type=integer,JSONPath=`.spec.replicas`,description="Desired replicas"
// +kubebuilder:printcolumn:name="Current",type=integer,JSONPath=`.status.replicas`,description="Replicas of every revision"
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`,description="Ready replicas"
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`,description="Phase of the latest revision"
// +kubebuilder:printcolumn:name="Frozen",type=string,JSONPath=`.status.frozen`,description="The Failed revision the replicas are frozen at (onFailure: Freeze)"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="oldSelf.hasValue() || size(self.metadata.name) <= 52",optionalOldSelf=true,message="metadata.name must be at most 52 characters: the revision name <name>-<N> is a label value of its deployer pod, limited to 63 characters, and needs room for the revision number; choose a shorter name",reason=FieldValueInvalid
type DeploymentConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired application and its rollout settings.
	// +required
	Spec DeploymentConfigSpec `json:"spec"`
	// Status is the observed state, written by the controller.
	// +optional
	Status DeploymentConfigStatus `json:"status,omitempty"`
}

// DeploymentConfigSpec is the desired state of a DeploymentConfig.
//
// Cross-field rules (CEL) live here because a hook or a trigger cannot see the template.
//
// +kubebuilder:validation:XValidation:rule="has(self.template.metadata) && has(self.template.metadata.labels) && size(self.template.metadata.labels) > 0",message="must not be empty: the labels select the pods and are the default selector",fieldPath=".template.metadata.labels",reason=FieldValueRequired
// +kubebuilder:validation:XValidation:rule="!has(self.selector) || (has(self.selector.matchLabels) && size(self.selector.matchLabels) > 0) || (has(self.selector.matchExpressions) && size(self.selector.matchExpressions) > 0)",message="must not be empty (it would select every pod): set matchLabels, or leave selector out to use the template's labels",fieldPath=".selector",reason=FieldValueInvalid
// +kubebuilder:validation:XValidation:rule="!has(self.selector) || !has(self.selector.matchLabels) || self.selector.matchLabels.all(k, has(self.template.metadata) && has(self.template.metadata.labels) && k in self.template.metadata.labels && self.template.metadata.labels[k] == self.selector.matchLabels[k])",message="does not match spec.template.metadata.labels: every selector label must be on the template with the same value",fieldPath=".selector.matchLabels",reason=FieldValueInvalid
// +kubebuilder:validation:XValidation:rule="!has(self.selector) || !has(self.selector.matchExpressions) || self.selector.matchExpressions.all(e, e.operator == 'Exists' ? (has(self.template.metadata.labels) && e.key in self.template.metadata.labels) : e.operator == 'DoesNotExist' ? !(has(self.template.metadata.labels) && e.key in self.template.metadata.labels) : e.operator == 'In' ? (has(self.template.metadata.labels) && e.key in self.template.metadata.labels && has(e.values) && self.template.metadata.labels[e.key] in e.values) : !(has(self.template.metadata.labels) && e.key in self.template.metadata.labels && has(e.values) && self.template.metadata.labels[e.key] in e.values))",message="does not match spec.template.metadata.labels: the template's own pods must be selected",fieldPath=".selector.matchExpressions",reason=FieldValueInvalid
// +kubebuilder:validation:XValidation:rule="!has(self.minReadySeconds) || self.minReadySeconds < (self.strategy.type == 'Recreate' ? self.strategy.?recreateParams.?timeoutSeconds.orValue(600) : self.strategy.type == 'Rolling' ? self.strategy.?rollingParams.?timeoutSeconds.orValue(600) : self.strategy.?activeDeadlineSeconds.orValue(21600))",message="must be below the strategy's timeoutSeconds (default 600), or no pod could ever count as available in time",fieldPath=".minReadySeconds",reason=FieldValueInvalid
// +kubebuilder:validation:XValidation:rule="!self.strategy.?recreateParams.?pre.?execNewPod.hasValue() || self.template.spec.containers.exists(c, c.name == self.strategy.recreateParams.pre.execNewPod.containerName)",message="must name a container of spec.template.spec.containers",fieldPath=".strategy.recreateParams.pre.execNewPod.containerName",reason=FieldValueInvalid
// +kubebuilder:validation:XValidation:rule="!self.strategy.?recreateParams.?mid.?execNewPod.hasValue() || self.template.spec.containers.exists(c, c.name == self.strategy.recreateParams.mid.execNewPod.containerName)",message="must name a container of spec.template.spec.containers",fieldPath=".strategy.recreateParams.mid.execNewPod.containerName",reason=FieldValueInvalid
// +kubebuilder:validation:XValidation:rule="!self.strategy.?recreateParams.?post.?execNewPod.hasValue() || self.template.spec.containers.exists(c, c.name == self.strategy.recreateParams.post.execNewPod.containerName)",message="must name a container of spec.template.spec.containers",fieldPath=".strategy.recreateParams.post.execNewPod.containerName",reason=FieldValueInvalid
// +kubebuilder:validation:XValidation:rule="!self.strategy.?rollingParams.?pre.?execNewPod.hasValue() || self.template.spec.containers.exists(c, c.name == self.strategy.rollingParams.pre.execNewPod.containerName)",message="must name a container of spec.template.spec.containers",fieldPath=".strategy.rollingParams.pre.execNewPod.containerName",reason=FieldValueInvalid
// +kubebuilder:validation:XValidation:rule="!self.strategy.?rollingParams.?post.?execNewPod.hasValue() || self.template.spec.containers.exists(c, c.name == self.strategy.rollingParams.post.execNewPod.containerName)",message="must name a container of spec.template.spec.containers",fieldPath=".strategy.rollingParams.post.execNewPod.containerName",reason=FieldValueInvalid
// +kubebuilder:validation:XValidation:rule="!self.strategy.?recreateParams.?pre.?exec.hasValue() || self.template.spec.containers.exists(c, c.name == self.strategy.recreateParams.pre.exec.containerName)",message="must name a container of spec.template.spec.containers",fieldPath=".strategy.recreateParams.pre.exec.containerName",reason=FieldValueInvalid
// +kubebuilder:validation:XValidation:rule="!self.strategy.?recreateParams.?post.?exec.hasValue() || self.template.spec.containers.exists(c, c.name == self.strategy.recreateParams.post.exec.containerName)",message="must name a container of spec.template.spec.containers",fieldPath=".strategy.recreateParams.post.exec.containerName",reason=FieldValueInvalid
// +kubebuilder:validation:XValidation:rule="!self.strategy.?rollingParams.?pre.?exec.hasValue() || self.template.spec.containers.exists(c, c.name == self.strategy.rollingParams.pre.exec.containerName)",message="must name a container of spec.template.spec.containers",fieldPath=".strategy.rollingParams.pre.exec.containerName",reason=FieldValueInvalid
// +kubebuilder:validation:XValidation:rule="!self.strategy.?rollingParams.?post.?exec.hasValue() || self.template.spec.containers.exists(c, c.name == self.strategy.rollingParams.post.exec.containerName)",message="must name a container of spec.template.spec.containers",fieldPath=".strategy.rollingParams.post.exec.containerName",reason=FieldValueInvalid
// +kubebuilder:validation:XValidation:rule="!self.strategy.?recreateParams.?pre.?execNewPod.?volumes.hasValue() || self.strategy.recreateParams.pre.execNewPod.volumes.all(v, has(self.template.spec.volumes) && self.template.spec.volumes.exists(tv, tv.name == v))",message="must name volumes of spec.template.spec.volumes",fieldPath=".strategy.recreateParams.pre.execNewPod.volumes",reason=FieldValueInvalid
// +kubebuilder:validation:XValidation:rule="!self.strategy.?recreateParams.?mid.?execNewPod.?volumes.hasValue() || self.strategy.recreateParams.mid.execNewPod.volumes.all(v, has(self.template.spec.volumes) && self.template.spec.volumes.exists(tv, tv.name == v))",message="must name volumes of spec.template.spec.volumes",fieldPath=".strategy.recreateParams.mid.execNewPod.volumes",reason=FieldValueInvalid
// +kubebuilder:validation:XValidation:rule="!self.strategy.?recreateParams.?post.?execNewPod.?volumes.hasValue() || self.strategy.recreateParams.post.execNewPod.volumes.all(v, has(self.template.spec.volumes) && self.template.spec.volumes.exists(tv, tv.name == v))",message="must name volumes of spec.template.spec.volumes",fieldPath=".strategy.recreateParams.post.execNewPod.volumes",reason=FieldValueInvalid
// +kubebuilder:validation:XValidation:rule="!self.strategy.?rollingParams.?pre.?execNewPod.?volumes.hasValue() || self.strategy.rollingParams.pre.execNewPod.volumes.all(v, has(self.template.spec.volumes) && self.template.spec.volumes.exists(tv, tv.name == v))",message="must name volumes of spec.template.spec.volumes",fieldPath=".strategy.rollingParams.pre.execNewPod.volumes",reason=FieldValueInvalid
// +kubebuilder:validation:XValidation:rule="!self.strategy.?rollingParams.?post.?execNewPod.?volumes.hasValue() || self.strategy.rollingParams.post.execNewPod.volumes.all(v, has(self.template.spec.volumes) && self.template.spec.volumes.exists(tv, tv.name == v))",message="must name volumes of spec.template.spec.volumes",fieldPath=".strategy.rollingParams.post.execNewPod.volumes",reason=FieldValueInvalid
// +kubebuilder:validation:XValidation:rule="oldSelf.hasValue() || !self.strategy.?rollingParams.?steps.hasValue() || self.strategy.rollingParams.steps.map(s, has(s.setReplicas) && (type(s.setReplicas) == int ? s.setReplicas >= self.?replicas.orValue(1) : s.setReplicas == '100%')).indexOf(true) == -1 || self.strategy.rollingParams.steps.map(s, has(s.hook) && has(s.hook.exec) && s.hook.exec.?pods.orValue('New') == 'Old').lastIndexOf(true) < self.strategy.rollingParams.steps.map(s, has(s.setReplicas) && (type(s.setReplicas) == int ? s.setReplicas >= self.?replicas.orValue(1) : s.setReplicas == '100%')).indexOf(true)",message="an exec hook with pods: Old cannot run after a step that sets the new revision to all of spec.replicas: the old revision has no pods left by then; move the hook earlier, or use pods: New",fieldPath=".strategy.rollingParams.steps",reason=FieldValueInvalid,optionalOldSelf=true
// +kubebuilder:validation:XValidation:rule="(has(oldSelf.strategy.rollingParams) && has(oldSelf.strategy.rollingParams.steps) && has(self.strategy.rollingParams) && has(self.strategy.rollingParams.steps) && oldSelf.strategy.rollingParams.steps.map(s, has(s.setReplicas) ? (type(s.setReplicas) == int ? int(s.setReplicas) : s.setReplicas.matches('^[0-9]+%$') ? -1000 - int(s.setReplicas.substring(0, size(s.setReplicas) - 1)) : -3) : has(s.hook) && has(s.hook.exec) && s.hook.exec.?pods.orValue('New') == 'Old' ? -1 : -2) == self.strategy.rollingParams.steps.map(s, has(s.setReplicas) ? (type(s.setReplicas) == int ? int(s.setReplicas) : s.setReplicas.matches('^[0-9]+%$') ? -1000 - int(s.setReplicas.substring(0, size(s.setReplicas) - 1)) : -3) : has(s.hook) && has(s.hook.exec) && s.hook.exec.?pods.orValue('New') == 'Old' ? -1 : -2)) || !self.strategy.?rollingParams.?steps.hasValue() || self.strategy.rollingParams.steps.map(s, has(s.setReplicas) && (type(s.setReplicas) == int ? s.setReplicas >= self.?replicas.orValue(1) : s.setReplicas == '100%')).indexOf(true) == -1 || self.strategy.rollingParams.steps.map(s, has(s.hook) && has(s.hook.exec) && s.hook.exec.?pods.orValue('New') == 'Old').lastIndexOf(true) < self.strategy.rollingParams.steps.map(s, has(s.setReplicas) && (type(s.setReplicas) == int ? s.setReplicas >= self.?replicas.orValue(1) : s.setReplicas == '100%')).indexOf(true)",message="an exec hook with pods: Old cannot run after a step that sets the new revision to all of spec.replicas: the old revision has no pods left by then; move the hook earlier, or use pods: New",fieldPath=".strategy.rollingParams.steps",reason=FieldValueInvalid
// +kubebuilder:validation:XValidation:rule="oldSelf.hasValue() || !(has(self.strategy.rollingParams) && has(self.strategy.rollingParams.steps)) || (self.strategy.rollingParams.steps.map(s, has(s.setReplicas) && type(s.setReplicas) == int ? int(s.setReplicas) : -1).filter(x, x >= 0).isSorted() && self.strategy.rollingParams.steps.map(s, has(s.setReplicas) && type(s.setReplicas) != int && s.setReplicas.matches('^[0-9]+%$') ? int(s.setReplicas.substring(0, size(s.setReplicas) - 1)) : -1).filter(x, x >= 0).isSorted() && self.strategy.rollingParams.steps.map(s, !has(s.setReplicas) ? -1 : type(s.setReplicas) == int ? (int(s.setReplicas) < self.?replicas.orValue(1) ? int(s.setReplicas) : self.?replicas.orValue(1)) : !(s.setReplicas.matches('^[0-9]+%$')) ? -1 : s.setReplicas == '100%' ? self.?replicas.orValue(1) : (((int(s.setReplicas.substring(0, size(s.setReplicas) - 1)) * self.?replicas.orValue(1) + 99) / 100) < self.?replicas.orValue(1) - 1 ? ((int(s.setReplicas.substring(0, size(s.setReplicas) - 1)) * self.?replicas.orValue(1) + 99) / 100) : (self.?replicas.orValue(1) > 0 ? self.?replicas.orValue(1) - 1 : 0))).filter(x, x >= 0).isSorted())",message="setReplicas must not go down from one step to a later one: steps only add new pods, so a lower value would do nothing; order the setReplicas steps from the smallest to the largest (counts are compared with counts, percentages with percentages, and a count with a percentage of spec.replicas as it is when the steps are written)",fieldPath=".strategy.rollingParams.steps",reason=FieldValueInvalid,optionalOldSelf=true
// +kubebuilder:validation:XValidation:rule="(has(oldSelf.strategy.rollingParams) && has(oldSelf.strategy.rollingParams.steps) && has(self.strategy.rollingParams) && has(self.strategy.rollingParams.steps) && oldSelf.strategy.rollingParams.steps.map(s, has(s.setReplicas) ? (type(s.setReplicas) == int ? int(s.setReplicas) : s.setReplicas.matches('^[0-9]+%$') ? -1000 - int(s.setReplicas.substring(0, size(s.setReplicas) - 1)) : -3) : has(s.hook) && has(s.hook.exec) && s.hook.exec.?pods.orValue('New') == 'Old' ? -1 : -2) == self.strategy.rollingParams.steps.map(s, has(s.setReplicas) ? (type(s.setReplicas) == int ? int(s.setReplicas) : s.setReplicas.matches('^[0-9]+%$') ? -1000 - int(s.setReplicas.substring(0, size(s.setReplicas) - 1)) : -3) : has(s.hook) && has(s.hook.exec) && s.hook.exec.?pods.orValue('New') == 'Old' ? -1 : -2)) || !(has(self.strategy.rollingParams) && has(self.strategy.rollingParams.steps)) || (self.strategy.rollingParams.steps.map(s, has(s.setReplicas) && type(s.setReplicas) == int ? int(s.setReplicas) : -1).filter(x, x >= 0).isSorted() && self.strategy.rollingParams.steps.map(s, has(s.setReplicas) && type(s.setReplicas) != int && s.setReplicas.matches('^[0-9]+%$') ? int(s.setReplicas.substring(0, size(s.setReplicas) - 1)) : -1).filter(x, x >= 0).isSorted() && self.strategy.rollingParams.steps.map(s, !has(s.setReplicas) ? -1 : type(s.setReplicas) == int ? (int(s.setReplicas) < self.?replicas.orValue(1) ? int(s.setReplicas) : self.?replicas.orValue(1)) : !(s.setReplicas.matches('^[0-9]+%$')) ? -1 : s.setReplicas == '100%' ? self.?replicas.orValue(1) : (((int(s.setReplicas.substring(0, size(s.setReplicas) - 1)) * self.?replicas.orValue(1) + 99) / 100) < self.?replicas.orValue(1) - 1 ? ((int(s.setReplicas.substring(0, size(s.setReplicas) - 1)) * self.?replicas.orValue(1) + 99) / 100) : (self.?replicas.orValue(1) > 0 ? self.?replicas.orValue(1) - 1 : 0))).filter(x, x >= 0).isSorted())",message="setReplicas must not go down from one step to a later one: steps only add new pods, so a lower value would do nothing; order the setReplicas steps from the smallest to the largest (counts are compared with counts, percentages with percentages, and a count with a percentage of spec.replicas as it is when the steps are written)",fieldPath=".strategy.rollingParams.steps",reason=FieldValueInvalid
// +kubebuilder:validation:XValidation:rule="!self.strategy.?rollingParams.?steps.hasValue() || self.strategy.rollingParams.steps.all(s, !has(s.hook) || ((!has(s.hook.execNewPod) || self.template.spec.containers.exists(c, c.name == s.hook.execNewPod.containerName)) && (!has(s.hook.exec) || self.template.spec.containers.exists(c, c.name == s.hook.exec.containerName))))",message="every step hook must name a container of spec.template.spec.containers in execNewPod.containerName or exec.containerName",fieldPath=".strategy.rollingParams.steps",reason=FieldValueInvalid
// +kubebuilder:validation:XValidation:rule="!self.strategy.?rollingParams.?steps.hasValue() || self.strategy.rollingParams.steps.all(s, !has(s.hook) || !has(s.hook.execNewPod) || !has(s.hook.execNewPod.volumes) || s.hook.execNewPod.volumes.all(v, has(self.template.spec.volumes) && self.template.spec.volumes.exists(tv, tv.name == v)))",message="every step hook must name volumes of spec.template.spec.volumes in execNewPod.volumes",fieldPath=".strategy.rollingParams.steps",reason=FieldValueInvalid
// +kubebuilder:validation:XValidation:rule="!self.strategy.?recreateParams.?failed.hasValue() || ((!has(self.strategy.recreateParams.failed.execNewPod) || self.template.spec.containers.exists(c, c.name == self.strategy.recreateParams.failed.execNewPod.containerName)) && (!has(self.strategy.recreateParams.failed.exec) || self.template.spec.containers.exists(c, c.name == self.strategy.recreateParams.failed.exec.containerName)))",message="must name a container of spec.template.spec.containers in execNewPod.containerName or exec.containerName",fieldPath=".strategy.recreateParams.failed",reason=FieldValueInvalid
// +kubebuilder:validation:XValidation:rule="!self.strategy.?recreateParams.?failed.?execNewPod.?volumes.hasValue() || self.strategy.recreateParams.failed.execNewPod.volumes.all(v, has(self.template.spec.volumes) && self.template.spec.volumes.exists(tv, tv.name == v))",message="must name volumes of spec.template.spec.volumes",fieldPath=".strategy.recreateParams.failed.execNewPod.volumes",reason=FieldValueInvalid
// +kubebuilder:validation:XValidation:rule="!self.strategy.?rollingParams.?failed.hasValue() || ((!has(self.strategy.rollingParams.failed.execNewPod) || self.template.spec.containers.exists(c, c.name == self.strategy.rollingParams.failed.execNewPod.containerName)) && (!has(self.strategy.rollingParams.failed.exec) || self.template.spec.containers.exists(c, c.name == self.strategy.rollingParams.failed.exec.containerName)))",message="must name a container of spec.template.spec.containers in execNewPod.containerName or exec.containerName",fieldPath=".strategy.rollingParams.failed",reason=FieldValueInvalid
// +kubebuilder:validation:XValidation:rule="!self.strategy.?rollingParams.?failed.?execNewPod.?volumes.hasValue() || self.strategy.rollingParams.failed.execNewPod.volumes.all(v, has(self.template.spec.volumes) && self.template.spec.volumes.exists(tv, tv.name == v))",message="must name volumes of spec.template.spec.volumes",fieldPath=".strategy.rollingParams.failed.execNewPod.volumes",reason=FieldValueInvalid
// +kubebuilder:validation:XValidation:rule="!has(self.triggers) || self.triggers.all(t, !has(t.imageChangeParams) || t.imageChangeParams.containerNames.all(n, self.template.spec.containers.exists(c, c.name == n)))",message="spec.triggers[].imageChangeParams.containerNames must name containers of spec.template.spec.containers",fieldPath=".triggers",reason=FieldValueInvalid
// +kubebuilder:validation:XValidation:rule="!has(self.triggers) || self.triggers.all(t, !t.?imageChangeParams.?automatic.orValue(false) || t.imageChangeParams.containerNames.all(n, self.triggers.filter(u, u.?imageChangeParams.?automatic.orValue(false) && n in u.imageChangeParams.containerNames).size() == 1))",message="a container may follow at most one automatic ImageChange trigger: two would pin their images into it in turn; remove the container from all but one trigger's containerNames, or set automatic: false on the others",fieldPath=".triggers",reason=FieldValueInvalid
// +kubebuilder:validation:XValidation:rule="has(self.statefulSet) == has(oldSelf.statefulSet)",message="cannot be added or removed: whether a DeploymentConfig runs on a StatefulSet is fixed when it is created; create a new DeploymentConfig, or take a running StatefulSet over with kubectl stagehand adopt statefulset/NAME",fieldPath=".statefulSet",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="!has(self.statefulSet) || self.strategy.?type.orValue('Rolling') == 'Rolling'",message="must be Rolling with spec.statefulSet: Recreate would stop every member at once, and custom strategy images scale ReplicaSets; set spec.strategy.type: Rolling",fieldPath=".strategy.type",reason=FieldValueInvalid
// +kubebuilder:validation:XValidation:rule="!has(self.statefulSet) || !self.test || self.statefulSet.?persistentVolumeClaimRetentionPolicy.?whenScaled.orValue('Retain') != 'Delete'",message="spec.test scales every revision to 0 after its rollout, and persistentVolumeClaimRetentionPolicy.whenScaled: Delete would then delete the claims, which no rollout may do; set whenScaled: Retain or leave test out",fieldPath=".test",reason=FieldValueForbidden
type DeploymentConfigSpec struct {
	// Replicas is the number of pods the active revision runs. Default 1.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`

	// Selector selects the application's pods. Default: the template's labels. Each
	// revision's ReplicaSet adds the stagehand.dev/revision label to it. The operators are
	// In, NotIn, Exists and DoesNotExist (an enum, added by crdpatch).
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(e, e.operator in ['In', 'NotIn'] ? has(e.values) && size(e.values) > 0 : !(e.operator in ['Exists', 'DoesNotExist']) || !has(e.values) || size(e.values) == 0)",message="operators In and NotIn need values; Exists and DoesNotExist take none",fieldPath=".matchExpressions",reason=FieldValueInvalid
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(e, (e.key.size() <= 317 && e.key.indexOf('/') <= 253 && e.key.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$')) && (!has(e.values) || e.values.all(v, v.matches('^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$'))))",message="every key must be a label key and every value a label value: a key is an optional DNS subdomain prefix and /, then a name of at most 63 letters, digits, dashes, underscores or dots that starts and ends with a letter or digit, such as team or example.com/team; a value is empty, or at most 63 letters, digits, dashes, underscores or dots that starts and ends with a letter or digit",fieldPath=".matchExpressions",reason=FieldValueInvalid
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`

	// Template is the pod template of the application. Admission refuses what the
	// revision's ReplicaSet would refuse later: a restartPolicy other than Always, an
	// activeDeadlineSeconds, no containers, a container without an image or with a name
	// that is not a DNS label, invalid label keys or values, and a value outside
	// Kubernetes' own for imagePullPolicy, a port's protocol and the other enumerated
	// fields (enums added by crdpatch). It also refuses more than 128 KiB of env values,
	// commands, args and annotations, which no revision's snapshot annotation could hold.
	// +kubebuilder:validation:XValidation:rule="self.?spec.?restartPolicy.orValue('Always') == 'Always'",message="must be Always or left out: each revision is a ReplicaSet, whose pods always restart; run one-off work in a lifecycle hook",fieldPath=".spec.restartPolicy",reason=FieldValueInvalid
	// +kubebuilder:validation:XValidation:rule="!has(self.spec) || !has(self.spec.activeDeadlineSeconds)",message="is not allowed in the template of a ReplicaSet: remove it; spec.strategy.activeDeadlineSeconds bounds the rollout",fieldPath=".spec.activeDeadlineSeconds",reason=FieldValueForbidden
	// +kubebuilder:validation:XValidation:rule="has(self.spec) && size(self.spec.containers) > 0",message="must hold at least one container",fieldPath=".spec.containers",reason=FieldValueRequired
	// +kubebuilder:validation:XValidation:rule="!has(self.spec) || self.spec.containers.all(c, has(c.image) && size(c.image) > 0)",message="every container needs an image: set spec.template.spec.containers[].image",fieldPath=".spec.containers",reason=FieldValueRequired
	// +kubebuilder:validation:XValidation:rule="!has(self.spec) || self.spec.containers.all(c, c.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'))",message="every container name must be a DNS label: at most 63 lowercase letters, digits or dashes, starting and ending with a letter or digit",fieldPath=".spec.containers",reason=FieldValueInvalid
	// +kubebuilder:validation:XValidation:rule="!has(self.spec) || !has(self.spec.initContainers) || self.spec.initContainers.all(c, has(c.image) && size(c.image) > 0)",message="every init container needs an image: set spec.template.spec.initContainers[].image",fieldPath=".spec.initContainers",reason=FieldValueRequired
	// +kubebuilder:validation:XValidation:rule="!has(self.spec) || !has(self.spec.initContainers) || self.spec.initContainers.all(c, c.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'))",message="every init container name must be a DNS label: at most 63 lowercase letters, digits or dashes, starting and ending with a letter or digit",fieldPath=".spec.initContainers",reason=FieldValueInvalid
	// +kubebuilder:validation:XValidation:rule="!has(self.metadata) || !has(self.metadata.labels) || self.metadata.labels.all(k, (k.size() <= 317 && k.indexOf('/') <= 253 && k.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$')))",message="every label key must be valid: a key is an optional DNS subdomain prefix and /, then a name of at most 63 letters, digits, dashes, underscores or dots that starts and ends with a letter or digit, such as team or example.com/team",messageExpression="'invalid label key(s) ' + self.metadata.labels.filter(k, !(k.size() <= 317 && k.indexOf('/') <= 253 && k.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$')))[0] + ': a key is an optional DNS subdomain prefix and /, then a name of at most 63 letters, digits, dashes, underscores or dots that starts and ends with a letter or digit, such as team or example.com/team'",fieldPath=".metadata.labels",reason=FieldValueInvalid
	// +kubebuilder:validation:XValidation:rule="!has(self.metadata) || !has(self.metadata.labels) || self.metadata.labels.all(k, self.metadata.labels[k].matches('^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$'))",message="every label value must be valid: a value is empty, or at most 63 letters, digits, dashes, underscores or dots that starts and ends with a letter or digit",messageExpression="'invalid label value(s) for the key(s) ' + self.metadata.labels.filter(k, !self.metadata.labels[k].matches('^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$'))[0] + ': a value is empty, or at most 63 letters, digits, dashes, underscores or dots that starts and ends with a letter or digit'",fieldPath=".metadata.labels",reason=FieldValueInvalid
	// +kubebuilder:validation:XValidation:rule="((has(self.metadata) && has(self.metadata.annotations) ? self.metadata.annotations.map(k, size(k) + size(self.metadata.annotations[k])).sum() : 0) + (has(self.spec) ? self.spec.containers.map(c, (has(c.env) ? c.env.map(e, size(e.name) + size(e.?value.orValue(''))).sum() : 0) + (has(c.command) ? c.command.map(x, size(x)).sum() : 0) + (has(c.args) ? c.args.map(x, size(x)).sum() : 0)).sum() : 0) + (has(self.spec) && has(self.spec.initContainers) ? self.spec.initContainers.map(c, (has(c.env) ? c.env.map(e, size(e.name) + size(e.?value.orValue(''))).sum() : 0) + (has(c.command) ? c.command.map(x, size(x)).sum() : 0) + (has(c.args) ? c.args.map(x, size(x)).sum() : 0)).sum() : 0)) <= 131072",message="the pod template holds more than 131072 (128 KiB) characters in env values, commands, args and annotations: each revision stores the spec in an annotation of its ReplicaSet, and the annotations of a ReplicaSet hold at most 256 KiB; keep large data in a ConfigMap or Secret (envFrom, valueFrom or a volume) instead of inline",reason=FieldValueInvalid
	// +required
	Template corev1.PodTemplateSpec `json:"template"`

	// MinReadySeconds is how long a new pod must be ready, with no container crashing,
	// before it counts as available. It must be below the strategy's timeoutSeconds. Default 0.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MinReadySeconds int32 `json:"minReadySeconds,omitempty"`

	// RevisionHistoryLimit is how many old, scaled-down revisions are kept for rollback.
	// Default 10.
	// +kubebuilder:default=10
	// +kubebuilder:validation:Minimum=0
	// +optional
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty"`

	// Paused stops new revisions from being created. Scaling still works. Default false.
	// +optional
	Paused bool `json:"paused,omitempty"`

	// Test runs each rollout and then scales every revision to 0: the rollout itself (with
	// its hooks) is the test. Default false.
	// +optional
	Test bool `json:"test,omitempty"`

	// Triggers start rollouts. When the list is left out it is [{type: ConfigChange}]; an
	// empty list means rollouts start only by hand (kubectl stagehand rollout latest).
	// The field is serialized without omitempty so that a Go client's empty list stays empty.
	// +kubebuilder:default={{type: ConfigChange}}
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:XValidation:rule="self.filter(t, t.type == 'ConfigChange').size() <= 1",message="spec.triggers may hold at most one ConfigChange trigger"
	// +optional
	Triggers []DeploymentTriggerPolicy `json:"triggers"`

	// Strategy says how a revision replaces the previous one.
	// +kubebuilder:default={type: Rolling, activeDeadlineSeconds: 21600}
	// +optional
	Strategy DeploymentStrategy `json:"strategy,omitempty"`

	// StatefulSet, when set, runs the revisions on StatefulSet <name> instead of a
	// ReplicaSet each: pods keep their names and claims, and a rollout walks them highest
	// ordinal first (docs/statefulsets.md). It cannot be added or removed later.
	// +optional
	StatefulSet *StatefulSetWorkload `json:"statefulSet,omitempty"`
}

// DeploymentConfigList is a list of DeploymentConfigs.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type DeploymentConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the DeploymentConfigs.
	Items []DeploymentConfig `json:"items"`
}
