package nodeagent

import (
	"context"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// How a container runs:
//   - its image is in the ImageMap: the mapped binary runs, or, when the command names
//     another program (a shell, say), that command runs on the host with <poddir>/bin,
//     which holds links to the binary and its aliases, first in PATH (see
//     ImageMap.Resolve for the rule);
//   - else it has a command: command+args run on the host, looked up in the container's PATH;
//   - else it is simulated: no process, Running and Ready at once until the pod stops
//     (a simulated init container completes at once). Probes of simulated containers are
//     ignored, which keeps thousands of pods cheap.
//
// A process runs in <poddir> unless the container's workingDir is an existing absolute
// folder on the host, or names a folder under <poddir> (a volume's link, mounts.go). Its
// volumes are resolved before anything else (a claim that is not bound keeps it in
// ContainerCreating), and its mount links are made once its environment is known
// (subPathExpr). Its environment is built in this order, later entries winning:
// PATH, TMPDIR, LANG, TZ and GOCOVERDIR from the agent, HOME=<poddir>, HOSTNAME=<pod name>,
// Config.ExtraEnv, the agent's own variables (EnvTerminationMessagePath, and for a pod
// with a token KUBECONFIG and EnvServiceAccountDir), then envFrom and env of the container.
// $(VAR) references in env values, command and args are expanded as the kubelet does.

// prepare resolves everything a run of c needs. Its errors are user errors (a missing
// Secret, say) that a retry may fix.
func (w *podWorker) prepare(ctx context.Context, c *ctr) (*ctrRun, error) {
	pod := w.latest()
	spec := c.spec
	img, mapped := w.a.cfg.ImageMap.Resolve(spec.Image)
	run := &ctrRun{
		done:      make(chan struct{}),
		killed:    make(chan struct{}),
		simulated: !mapped && len(spec.Command) == 0,
	}
	env := baseEnv(pod, w.dir, w.a.cfg.ExtraEnv)
	env.set(EnvTerminationMessagePath, w.terminationPath(c))
	folders, err := w.volumeFolders(ctx, pod)
	if err != nil {
		return nil, &containerCreatingError{err: err}
	}
	if !run.simulated {
		ok, err := w.ensureIdentity(ctx, pod)
		if err != nil {
			return nil, &containerCreatingError{err: err}
		}
		if ok {
			env.set(envKubeconfig, filepath.Join(w.dir, kubeconfigFile))
			env.set(EnvServiceAccountDir, filepath.Join(w.dir, serviceAccountDirName))
		}
	}
	r := &envResolver{client: w.a.client, pod: pod, hostIP: w.a.address, podIP: w.podIPOrHost(), allocatable: nodeAllocatable}
	if err := r.resolve(ctx, spec, env); err != nil {
		return nil, err
	}
	if !run.simulated {
		expand := func(s string) string { return expandVars(s, env.lookup) }
		mounts, err := planMounts(w.dir, reservedNames(pod), spec, folders, expand)
		if err != nil {
			return nil, err
		}
		if err := w.linkMounts(mounts); err != nil {
			return nil, err
		}
	}
	run.dir = w.workingDir(spec)
	command := expandAll(spec.Command, env.lookup)
	args := expandAll(spec.Args, env.lookup)
	switch {
	case mapped:
		binDir := filepath.Join(w.dir, binDirName)
		launch := planMapped(img, binDir, command, args)
		if launch.links {
			if err := linkMapped(binDir, img); err != nil {
				return nil, &containerCreatingError{err: err}
			}
			path, _ := env.lookup("PATH")
			env.set("PATH", prependPath(binDir, path))
		}
		run.argv = launch.argv
	case !run.simulated:
		run.argv = append(command, args...)
	}
	run.env = env.environ()
	run.started = time.Now()
	return run, nil
}

// workingDir is the container's workingDir when it is an existing host folder, else the
// same path under the pod folder when that exists (a volume's link, see mounts.go), else
// the pod folder.
func (w *podWorker) workingDir(spec *corev1.Container) string {
	d := spec.WorkingDir
	if !filepath.IsAbs(d) {
		return w.dir
	}
	if fi, err := os.Stat(d); err == nil && fi.IsDir() {
		return d
	}
	if in := filepath.Join(w.dir, filepath.Clean(d)); in != w.dir {
		if fi, err := os.Stat(in); err == nil && fi.IsDir() {
			return in
		}
	}
	return w.dir
}

// linkMounts creates the links of a container's mounts; the pod's containers link one at
// a time, so that two of them never race for one path.
func (w *podWorker) linkMounts(mounts []mount) error {
	w.volMu.Lock()
	defer w.volMu.Unlock()
	for _, m := range mounts {
		if err := ensureLink(m.link, m.target); err != nil {
			return err
		}
	}
	return nil
}

// ensureIdentity mints the pod's token on first use and keeps it fresh while the pod's
// containers run. It reports whether the pod has an identity.
func (w *podWorker) ensureIdentity(ctx context.Context, pod *corev1.Pod) (bool, error) {
	w.idMu.Lock()
	defer w.idMu.Unlock()
	if w.idWanted == nil {
		wanted := wantsToken(pod)
		w.idWanted = &wanted
	}
	if !*w.idWanted {
		return false, nil
	}
	if w.idRefresh.IsZero() {
		refresh, err := w.a.writeIdentity(ctx, pod, w.dir)
		if err != nil {
			return false, err
		}
		w.idRefresh = refresh
		go w.refreshIdentity(ctx)
	}
	return true, nil
}

// refreshIdentity renews the token before it expires until ctx (the pod's run) ends.
func (w *podWorker) refreshIdentity(ctx context.Context) {
	for {
		w.idMu.Lock()
		at := w.idRefresh
		w.idMu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Until(at)):
		}
		if _, ok := w.gate.wait(ctx); !ok { // no token requests while the node is stopped
			return
		}
		refresh, err := w.a.writeIdentity(ctx, w.latest(), w.dir)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			w.log.WithError(err).Warn("refreshing service account token")
			refresh = time.Now().Add(10 * time.Second)
		}
		w.idMu.Lock()
		w.idRefresh = refresh
		w.idMu.Unlock()
	}
}

// restartBackoff is the delay before a container restarts: base, doubling with every
// restart up to max. It starts again from base after a run that lasted at least 2*max,
// like the kubelet's back-off, which forgets a container that stayed up that long.
type restartBackoff struct {
	base, max time.Duration
	steps     int
}

func (b *restartBackoff) next(ran time.Duration) time.Duration {
	if ran >= 2*b.max {
		b.steps = 0
	}
	d := b.base
	for i := 0; i < b.steps && d < b.max; i++ {
		d *= 2
	}
	d = min(d, b.max)
	if d < b.max {
		b.steps++
	}
	return d
}
