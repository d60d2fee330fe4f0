// Package nodeagent plays the kubelet for the local test cluster: it registers Nodes, runs
// the pods bound to them as local processes (or simulates them), reports their status, and
// serves the containerLogs and exec endpoints that the apiserver proxies to.
//
// What a pod sees, in short (details next to the code that does it):
//
//   - How a container runs: prepare.go (image map, host command, or simulated) and
//     ImageMap.Resolve (the argv of a mapped image).
//   - Its folder: <Config.Dir>/pods/<namespace>_<name>_<uid>/, the working directory of
//     every process unless workingDir names an existing absolute folder. It holds
//     <container>.log and <container>.previous.log (logfile.go), <container>/termination-log
//     (EnvTerminationMessagePath), and the service-account files (serviceaccount.go).
//   - Its volumes (volumes.go, mounts.go): hostPath, and claims bound to hostPath or local
//     PersistentVolumes, are folders under <Config.Dir>/host/<node>/, never the host's
//     real paths; emptyDir is <poddir>/volumes/<name>. A volumeMount at /data is a symlink
//     <poddir>/data to the volume's folder, so paths relative to the working directory
//     reach it; absolute paths are not remapped, and readOnly is not enforced. A claim that
//     is missing or not bound keeps the pod in ContainerCreating.
//   - Its network: the host's. Pod IP and host IP are Config.Address; ports collide between
//     pods.
//   - Its identity: a bound token for its service account in KUBECONFIG
//     (serviceaccount.go); KUBERNETES_SERVICE_HOST is never set.
//   - Restarts: restartPolicy with a back-off of Config.RestartBackoff doubling up to
//     Config.MaxRestartBackoff; CrashLoopBackOff while waiting.
//   - Readiness probes run on the host (probe.go); liveness and startup probes are ignored.
//   - Stopping: SIGTERM to the container's process group, SIGKILL after the grace period.
//     activeDeadlineSeconds fails the pod with reason DeadlineExceeded.
//
// Not supported: the content of configMap, secret and downwardAPI volumes (their folders
// are empty; read ConfigMaps and Secrets through env or the API), volume types other than
// those above, lifecycle hooks (postStart, preStop), TTYs for exec (stderr goes to stdout),
// attach, port-forward, resource limits, and the pod's own network namespace.
//
// Every process the agent starts dies with it. Children are started from one
// OS-thread-locked goroutine, in process groups of their own, and Run kills every group
// before it returns. A container's process runs under the shim (shim.go), which adopts
// the container's orphans, kills them when the command exits, and kills the whole
// container when the agent dies, even by SIGKILL (its Pdeathsig). exec sessions and exec
// probes run without the shim, with Pdeathsig SIGKILL: what they start in the background
// may outlive an agent that is killed.
package nodeagent
