// kubectl for the tests (the client team members use), built from the Go module proxy at the control plane's
// Kubernetes version: the main of k8s.io/kubernetes/cmd/kubectl, which only runs the staging module's command.
package main

import (
	"k8s.io/component-base/cli"
	"k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/util"
)

func main() {
	command := cmd.NewDefaultKubectlCommand()
	if err := cli.RunNoErrOutput(command); err != nil {
		util.CheckErr(err)
	}
}
