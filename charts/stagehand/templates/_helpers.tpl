{{/* The labels Helm adds to every object, and the release's common labels. */}}
{{- define "stagehand.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* metadata.annotations of every object, when there are any. */}}
{{- define "stagehand.annotations" -}}
{{- with .Values.commonAnnotations }}
annotations:
{{ toYaml . | indent 2 }}
{{- end }}
{{- end }}

{{- define "stagehand.controllerImage" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{- define "stagehand.deployerImage" -}}
{{ .Values.deployerImage.repository }}:{{ .Values.deployerImage.tag | default .Chart.AppVersion }}
{{- end }}

{{/* One flag per value that is set; unset values keep the controller's defaults. */}}
{{- define "stagehand.args" -}}
- --leader-elect={{ .Values.leaderElection.enabled }}
{{- $flags := list
  (list "leader-elect-lease-name" .Values.leaderElection.leaseName)
  (list "leader-elect-lease-duration" .Values.leaderElection.leaseDuration)
  (list "leader-elect-renew-deadline" .Values.leaderElection.renewDeadline)
  (list "leader-elect-retry-period" .Values.leaderElection.retryPeriod)
  (list "kube-api-qps" .Values.kubeAPI.qps)
  (list "kube-api-burst" .Values.kubeAPI.burst)
  (list "workers" .Values.workers.all)
  (list "dc-workers" .Values.workers.deploymentConfig)
  (list "deployer-pod-workers" .Values.workers.deployerPod)
  (list "image-trigger-workers" .Values.workers.imageTrigger)
  (list "execution-hook-workers" .Values.workers.executionHook)
  (list "defer-workers" .Values.workers.defer)
  (list "namespace" .Values.watchNamespace)
  (list "resync" .Values.resync)
  (list "deployer-requests" .Values.deployer.requests)
  (list "deployer-limits" .Values.deployer.limits)
  (list "execution-hook-ttl" .Values.executionHooks.ttl)
  (list "defer-step-ttl" .Values.deferPolicies.stepTTL)
  (list "defer-step-requests" .Values.deferPolicies.stepRequests)
  (list "defer-step-limits" .Values.deferPolicies.stepLimits)
  (list "image-poll-interval" .Values.imageTriggers.pollInterval)
  (list "registry-qps" .Values.imageTriggers.registryQPS)
  (list "registry-burst" .Values.imageTriggers.registryBurst)
  (list "insecure-registries" (join "," .Values.imageTriggers.insecureRegistries))
  (list "log-level" .Values.log.level)
  (list "log-format" .Values.log.format)
}}
{{- range $flags }}
{{- if ne (toString (index . 1)) "" }}
- --{{ index . 0 }}={{ index . 1 }}
{{- end }}
{{- end }}
{{- if .Values.imageTriggers.webhookSecretName }}
- --registry-webhook-secret-file=/etc/stagehand/registry-webhook/secret
{{- end }}
{{- if ne (int .Values.metrics.port) 8080 }}
- --metrics-addr=:{{ .Values.metrics.port }}
{{- end }}
{{- end }}
