package main

// templateEnums restrict the embedded pod template's enumerated fields to the values that
// Kubernetes accepts in a ReplicaSet's pods, so that a typo (imagePullPolicy: Sometimes) is
// refused at admission, naming the field and listing the supported values, instead of
// failing the revision when its ReplicaSet is refused. "" is listed where Kubernetes
// defaults an empty value, as it does for a pod.
var templateEnums = map[string][]any{
	"imagePullPolicy":               {"Always", "IfNotPresent", "Never", ""},
	"terminationMessagePolicy":      {"File", "FallbackToLogsOnError", ""},
	"ports.[].protocol":             {"TCP", "UDP", "SCTP", ""},
	"livenessProbe.httpGet.scheme":  {"HTTP", "HTTPS", ""},
	"readinessProbe.httpGet.scheme": {"HTTP", "HTTPS", ""},
	"startupProbe.httpGet.scheme":   {"HTTP", "HTTPS", ""},
}

// maxInlineItems bounds the lists of a template container that the template's size rule
// adds up (env, command, args) and the template's annotations, so that the rule's cost
// stays within the apiserver's CEL budget. A spec that reaches it could not be stored in a
// revision's snapshot anyway (docs/api.md, "The size of the snapshot").
const maxInlineItems = 1024

// templateBounds are the enums and size bounds of the pod template's containers and init
// containers.
func templateBounds() []bound {
	bounds := []bound{
		{"spec.template.spec.dnsPolicy", "enum", []any{"ClusterFirstWithHostNet", "ClusterFirst", "Default", "None", ""}},
		{"spec.template.metadata.annotations", "maxProperties", maxInlineItems},
	}
	for _, list := range []string{"containers", "initContainers"} {
		prefix := "spec.template.spec." + list + ".[]."
		for field, values := range templateEnums {
			bounds = append(bounds, bound{prefix + field, "enum", values})
		}
		for _, field := range []string{"env", "command", "args"} {
			bounds = append(bounds, bound{prefix + field, "maxItems", maxInlineItems})
		}
	}
	return bounds
}
