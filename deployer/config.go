package deployer

import (
	"flag"
	"fmt"

	"github.com/kelseyhightower/envconfig"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/strategies"
)

// EnvTerminationMessagePath names the variable that overrides where the termination
// message is written. The local cluster's node agent sets it, because a host process
// cannot write /dev/termination-log.
const EnvTerminationMessagePath = "STAGEHAND_TERMINATION_MESSAGE_PATH"

// Config is every input of the deployer, read from the environment of the deployer-pod
// contract (docs/deployer-contract.md). Flags override it (see BindFlags). It is the one
// place where the deployer reads an environment variable; a test checks the names against
// api/v1alpha1.
type Config struct {
	// Revision is the revision's ReplicaSet (STAGEHAND_REVISION, else OPENSHIFT_DEPLOYMENT_NAME).
	Revision string `envconfig:"STAGEHAND_REVISION"`
	// Namespace is the revision's namespace (STAGEHAND_NAMESPACE, else OPENSHIFT_DEPLOYMENT_NAMESPACE).
	Namespace string `envconfig:"STAGEHAND_NAMESPACE"`
	// OpenShiftDeploymentName is the OpenShift name of Revision, used when Revision is empty.
	OpenShiftDeploymentName string `envconfig:"OPENSHIFT_DEPLOYMENT_NAME"`
	// OpenShiftDeploymentNamespace is the OpenShift name of Namespace, used when Namespace is empty.
	OpenShiftDeploymentNamespace string `envconfig:"OPENSHIFT_DEPLOYMENT_NAMESPACE"`
	// TerminationMessagePath is where the TerminationMessage is written before exiting.
	TerminationMessagePath string `envconfig:"STAGEHAND_TERMINATION_MESSAGE_PATH" default:"/dev/termination-log"`
	// LogFormat is text or json (STAGEHAND_LOG_FORMAT).
	LogFormat string `envconfig:"STAGEHAND_LOG_FORMAT" default:"text"`
	// LogLevel is a logrus level: debug, info, warning, error (STAGEHAND_LOG_LEVEL).
	LogLevel string `envconfig:"STAGEHAND_LOG_LEVEL" default:"info"`
	// Until stops the built-in strategy early: pre, mid, N% (flag --until only).
	Until string `ignored:"true"`
	// FailureHook runs the revision's failure hook instead of a rollout (flag
	// --failure-hook only): the controller's failure-hook runner pod passes it.
	FailureHook bool `ignored:"true"`
}

// LoadConfig reads the Config from the environment.
func LoadConfig() (Config, error) {
	var c Config
	if err := envconfig.Process("", &c); err != nil {
		return c, fmt.Errorf("reading the deployer's environment: %w", err)
	}
	return c, nil
}

// BindFlags registers a flag for every setting, with the current values as defaults, so
// that a flag overrides the environment.
func (c *Config) BindFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Revision, "revision", c.Revision, "the revision's ReplicaSet (env "+v1alpha1.EnvRevision+")")
	fs.StringVar(&c.Revision, "deployment", c.Revision, "the same as --revision, under the name of OpenShift's openshift-deploy")
	fs.StringVar(&c.Until, "until", c.Until,
		"stop the built-in strategy early and exit 0: pre (after the pre hook), mid (after the mid hook, Recreate only), "+
			"or N% (once N% of the desired pods are available on the new revision; 100% stops before the post hook)")
	fs.BoolVar(&c.FailureHook, v1alpha1.FailureHookFlag[2:], c.FailureHook,
		"run the failed revision's failure hook (recreateParams.failed or rollingParams.failed) once, instead of a rollout")
	fs.StringVar(&c.Namespace, "namespace", c.Namespace, "the revision's namespace (env "+v1alpha1.EnvNamespace+")")
	fs.StringVar(&c.TerminationMessagePath, "termination-message-path", c.TerminationMessagePath,
		"where the termination message is written (env "+EnvTerminationMessagePath+")")
	fs.StringVar(&c.LogFormat, "log-format", c.LogFormat, "log format: text or json (env STAGEHAND_LOG_FORMAT)")
	fs.StringVar(&c.LogLevel, "log-level", c.LogLevel, "log level: debug, info, warning or error (env STAGEHAND_LOG_LEVEL)")
}

// Resolved returns the revision and namespace, falling back to the OpenShift names, or an
// InvalidError that says which variable to set.
func (c Config) Resolved() (revision, namespace string, err error) {
	revision, namespace = c.Revision, c.Namespace
	if revision == "" {
		revision = c.OpenShiftDeploymentName
	}
	if namespace == "" {
		namespace = c.OpenShiftDeploymentNamespace
	}
	switch {
	case revision == "":
		return "", "", strategies.Invalidf("no revision to deploy: set %s (or %s) to the revision's ReplicaSet name, or pass --revision",
			v1alpha1.EnvRevision, v1alpha1.EnvOpenShiftDeploymentName)
	case namespace == "":
		return "", "", strategies.Invalidf("no namespace: set %s (or %s) to the revision's namespace, or pass --namespace",
			v1alpha1.EnvNamespace, v1alpha1.EnvOpenShiftDeploymentNamespace)
	}
	return revision, namespace, nil
}
