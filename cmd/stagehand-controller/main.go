// Command stagehand-controller runs Stagehand's watch controllers.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/stagehand-dev/stagehand/internal/version"
)

func main() {
	showVersion := flag.Bool("version", false, "print the version and exit")
	flag.Parse()
	if *showVersion {
		fmt.Println(version.String("stagehand-controller"))
		return
	}
	fmt.Fprintln(os.Stderr, "stagehand-controller: not implemented yet. The controller (the DeploymentConfig, deployer-pod and trigger controllers) arrives with the rollout-loop issue.")
	os.Exit(2)
}
