package imagetrigger

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/stagehand-dev/stagehand/api/podstatus"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/controller/plumbing"
	"github.com/stagehand-dev/stagehand/images"
)

// syncTriggers brings one DC's ImageChange triggers up to date with what its tags
// resolved to:
//
//  1. The DC's watches (tag and pull credentials) are handed to the watcher, which starts
//     or shares a poller for each.
//  2. An automatic trigger whose tag resolved to a digest other than lastTriggeredImage
//     gets that digest pinned (repo@sha256:...) into its containers, together with
//     lastTriggeredImage, in one Update carrying the cached resourceVersion. That template
//     change is what starts the revision (DeploymentConfig controller).
//  3. status.triggerImages and the ImagesResolved condition record every tag's digest or
//     error, so an automatic: false trigger shows a new digest without rolling out.
func (c *Controller) syncTriggers(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return plumbing.Fatal(err)
	}
	cached, err := c.dcLister.DeploymentConfigs(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.watcher.SetWatches(key, nil)
		return nil
	}
	if err != nil {
		return err
	}
	triggers := cached.ImageTriggers()
	if cached.DeletionTimestamp != nil || len(triggers) == 0 {
		c.watcher.SetWatches(key, nil)
		return c.clearTriggerStatus(ctx, cached)
	}

	// Step 1.
	creds, credProblems := c.credentials(ctx, cached)
	watches := make([]images.Watch, 0, len(triggers))
	for _, p := range triggers {
		watches = append(watches, images.Watch{Ref: p.From.Image, Credentials: creds})
	}
	c.watcher.SetWatches(key, watches)

	// Step 2.
	dc := cached.DeepCopy()
	var fired []string
	statuses := make([]v1alpha1.TriggerImageStatus, 0, len(triggers))
	seen := map[string]bool{}
	for _, p := range dc.ImageTriggers() {
		res, checked := c.watcher.Latest(p.From.Image, creds.ID)
		st := triggerStatus(cached, p.From.Image, res, checked, credProblems)
		if !seen[st.From] {
			seen[st.From] = true
			statuses = append(statuses, st)
		}
		if checked && res.Err == nil && res.Image != "" && p.Automatic && res.Image != p.LastTriggeredImage {
			pinImage(dc, p, res.Image)
			fired = append(fired, fmt.Sprintf("%s is now %s", p.From.Image, res.Image))
		}
	}
	if len(fired) > 0 {
		if _, err := c.stagehand.StagehandV1alpha1().DeploymentConfigs(ns).Update(ctx, dc, plumbing.UpdateOptions()); err != nil {
			return fmt.Errorf("pinning the new image of %s: %w", name, err)
		}
		c.recorder.Eventf(cached, corev1.EventTypeNormal, v1alpha1.EventImageTriggered, v1alpha1.MsgImageTriggered, strings.Join(fired, "; "))
		plumbing.SyncLog(c.log, ns, name, "").WithField("images", fired).Info("Pinned a new image digest")
		return nil // the update brings the DC back for step 3
	}

	// Step 3.
	failing := false
	for _, st := range statuses {
		if st.Error == "" {
			continue
		}
		failing = true
		if prev := cached.TriggerImage(st.From); prev == nil || prev.Error != st.Error {
			c.recorder.Eventf(cached, corev1.EventTypeWarning, v1alpha1.EventImageResolveFailed, v1alpha1.MsgImageResolveFailed, st.From, st.Error)
		}
	}
	if failing {
		// A fix may come from outside the DC (a pull secret or the service account's
		// secrets), which no DC event announces: read the credentials again later.
		c.queue.AddAfter(key, c.recheck)
	}
	return c.writeTriggerStatus(ctx, cached, statuses)
}

// triggerStatus is the status entry of one watched tag. A failed or missing check keeps
// the last digest known, so the status never forgets what the tag resolved to.
func triggerStatus(dc *v1alpha1.DeploymentConfig, from string, res images.Result, checked bool, credProblems []string) v1alpha1.TriggerImageStatus {
	st := v1alpha1.TriggerImageStatus{From: from}
	if prev := dc.TriggerImage(from); prev != nil {
		st.Image, st.Error = prev.Image, prev.Error
	}
	switch {
	case !checked:
	case res.Err != nil:
		st.Error = res.Err.Error()
		if len(credProblems) > 0 {
			st.Error += " (pull secrets: " + strings.Join(credProblems, "; ") + ")"
		}
		st.Error = podstatus.TruncateEnd(st.Error, v1alpha1.MaxStatusMessage)
	default:
		st.Image, st.Error = res.Image, ""
	}
	return st
}

// pinImage writes the digest reference into the trigger's containers and lastTriggeredImage.
func pinImage(dc *v1alpha1.DeploymentConfig, p *v1alpha1.DeploymentTriggerImageChangeParams, image string) {
	names := map[string]bool{}
	for _, n := range p.ContainerNames {
		names[n] = true
	}
	spec := &dc.Spec.Template.Spec
	for _, list := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range list {
			if names[list[i].Name] {
				list[i].Image = image
			}
		}
	}
	p.LastTriggeredImage = image
}

// credentials collects the pull secrets of the DC's pods (the template's imagePullSecrets
// and those of its service account) into registry credentials. Secrets that cannot be
// read are reported by name, never by content; reading them is an optional permission.
func (c *Controller) credentials(ctx context.Context, dc *v1alpha1.DeploymentConfig) (images.Credentials, []string) {
	names := map[string]bool{}
	for _, ref := range dc.Spec.Template.Spec.ImagePullSecrets {
		names[ref.Name] = true
	}
	sa := dc.Spec.Template.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	var problems []string
	if account, err := c.kube.CoreV1().ServiceAccounts(dc.Namespace).Get(ctx, sa, metav1.GetOptions{}); err == nil {
		for _, ref := range account.ImagePullSecrets {
			names[ref.Name] = true
		}
	} else if !apierrors.IsNotFound(err) {
		problems = append(problems, fmt.Sprintf("reading service account %s: %v", sa, err))
	}
	if len(names) == 0 {
		return images.Credentials{}, problems
	}
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	var secrets []corev1.Secret
	id := []string{dc.Namespace}
	for _, n := range sorted {
		s, err := c.kube.CoreV1().Secrets(dc.Namespace).Get(ctx, n, metav1.GetOptions{})
		if apierrors.IsForbidden(err) {
			// The Secret read is optional; the operator may have left it out (docs/security.md).
			problems = append(problems, fmt.Sprintf("secret %s: forbidden: the controller may not read Secrets "+
				"(is deploy/rbac/controller-pull-secrets.yaml installed?)", n))
			continue
		}
		if err != nil {
			problems = append(problems, fmt.Sprintf("secret %s: %s", n, apiReason(err)))
			continue
		}
		secrets = append(secrets, *s)
		id = append(id, n+"@"+s.ResourceVersion)
	}
	keychain, errs := images.KeychainFromSecrets(secrets)
	for _, err := range errs {
		problems = append(problems, err.Error())
	}
	if len(secrets) == 0 {
		return images.Credentials{}, problems
	}
	return images.Credentials{ID: strings.Join(id, ","), Keychain: keychain}, problems
}

// apiReason is a short reason of an API error, for messages.
func apiReason(err error) string {
	switch {
	case apierrors.IsNotFound(err):
		return "not found"
	case apierrors.IsForbidden(err):
		return "forbidden"
	}
	return err.Error()
}

// writeTriggerStatus writes status.triggerImages and the ImagesResolved condition when
// they changed.
func (c *Controller) writeTriggerStatus(ctx context.Context, cached *v1alpha1.DeploymentConfig, statuses []v1alpha1.TriggerImageStatus) error {
	update := cached.DeepCopy()
	update.Status.TriggerImages = statuses
	meta.SetStatusCondition(&update.Status.Conditions, imagesResolvedCondition(cached.Generation, statuses))
	if apiequality.Semantic.DeepEqual(cached.Status, update.Status) {
		return nil
	}
	if _, err := c.stagehand.StagehandV1alpha1().DeploymentConfigs(cached.Namespace).UpdateStatus(ctx, update, plumbing.UpdateOptions()); err != nil {
		return fmt.Errorf("recording the trigger images of %s: %w", cached.Name, err)
	}
	return nil
}

// clearTriggerStatus removes the trigger status of a DC that no longer has ImageChange triggers.
func (c *Controller) clearTriggerStatus(ctx context.Context, cached *v1alpha1.DeploymentConfig) error {
	if cached.DeletionTimestamp != nil || (len(cached.Status.TriggerImages) == 0 &&
		meta.FindStatusCondition(cached.Status.Conditions, v1alpha1.ConditionImagesResolved) == nil) {
		return nil
	}
	update := cached.DeepCopy()
	update.Status.TriggerImages = nil
	meta.RemoveStatusCondition(&update.Status.Conditions, v1alpha1.ConditionImagesResolved)
	if _, err := c.stagehand.StagehandV1alpha1().DeploymentConfigs(cached.Namespace).UpdateStatus(ctx, update, plumbing.UpdateOptions()); err != nil {
		return fmt.Errorf("clearing the trigger images of %s: %w", cached.Name, err)
	}
	return nil
}

// imagesResolvedCondition summarises the watched tags: True when every tag resolved at
// its last check, False with the registry's errors, Unknown before the first checks.
func imagesResolvedCondition(generation int64, statuses []v1alpha1.TriggerImageStatus) metav1.Condition {
	var failed, pending, resolved []string
	for _, st := range statuses {
		switch {
		case st.Error != "":
			failed = append(failed, st.From+": "+st.Error)
		case st.Image == "":
			pending = append(pending, st.From)
		default:
			resolved = append(resolved, st.From+" is "+st.Image)
		}
	}
	c := metav1.Condition{Type: v1alpha1.ConditionImagesResolved, ObservedGeneration: generation}
	switch {
	case len(failed) > 0:
		c.Status, c.Reason = metav1.ConditionFalse, v1alpha1.ReasonRegistryError
		c.Message = "cannot resolve " + strings.Join(failed, "; ")
	case len(pending) > 0:
		c.Status, c.Reason = metav1.ConditionUnknown, v1alpha1.ReasonImagesPending
		c.Message = "waiting for the first check of " + strings.Join(pending, ", ")
	default:
		c.Status, c.Reason = metav1.ConditionTrue, v1alpha1.ReasonImagesResolved
		c.Message = strings.Join(resolved, "; ")
	}
	c.Message = podstatus.TruncateEnd(c.Message, maxConditionMessage)
	return c
}

// maxConditionMessage is the longest message the apiserver accepts in a condition.
const maxConditionMessage = 32768
