package framework

import "os"

// Images are the container images the suite uses. On the local cluster the node agent's
// image map turns the stagehand/* images into local binaries and runs any image's explicit
// command on the host; on kind they are real images (make e2e-kind builds and loads them).
type Images struct {
	// Shell is an image with /bin/sh and the usual tools, for containers given a command.
	Shell string
	// TestApp is the e2e test app (e2e/testapp).
	TestApp string
}

// TestImages reads the image names from the environment (E2E_SHELL_IMAGE,
// E2E_IMAGE_TAG), with defaults that work on the local cluster.
func TestImages() Images {
	tag := os.Getenv("E2E_IMAGE_TAG")
	if tag == "" {
		tag = "e2e"
	}
	shell := os.Getenv("E2E_SHELL_IMAGE")
	if shell == "" {
		shell = "busybox:1.36"
	}
	return Images{Shell: shell, TestApp: "stagehand/testapp:" + tag}
}
