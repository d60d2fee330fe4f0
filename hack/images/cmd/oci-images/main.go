// Command oci-images builds Stagehand's container images without Docker (make oci-images):
// from the static binaries of bin/ and busybox-static, into an OCI image layout, and pushes
// them to a registry when one is named. See docs/images.md.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/stagehand-dev/stagehand/hack/images/oci"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "oci-images:", err)
		os.Exit(1)
	}
}

func run() error {
	bin := flag.String("bin", "bin", "folder of the binaries that make build writes")
	busybox := flag.String("busybox", "/bin/busybox", "a statically linked busybox (hack/install-busybox.sh)")
	ca := flag.String("ca-certs", "/etc/ssl/certs/ca-certificates.crt", "CA bundle for the distroless images; none when the file is missing")
	out := flag.String("out", "bin/oci-images", "the OCI image layout to write (replaced)")
	tag := flag.String("tag", "dev", "tag of every image")
	registry := flag.String("registry", os.Getenv("STAGEHAND_REGISTRY"), "host:port of a plain-HTTP registry to push to; none when empty")
	flag.Parse()

	in, err := inputs(*bin, *busybox, *ca)
	if err != nil {
		return err
	}
	images, err := oci.Images(in)
	if err != nil {
		return err
	}
	created, err := sourceDate()
	if err != nil {
		return err
	}
	var built []oci.Built
	for _, img := range images {
		i, err := oci.Build(img, created)
		if err != nil {
			return err
		}
		built = append(built, oci.Built{Ref: img.Repository + ":" + *tag, Image: i})
	}
	if err := oci.WriteLayout(*out, built); err != nil {
		return err
	}
	for _, b := range built {
		d, err := b.Image.Digest()
		if err != nil {
			return fmt.Errorf("digest of %s: %w", b.Ref, err)
		}
		where := filepath.Clean(*out)
		if *registry != "" {
			if where, err = oci.Push(*registry, b); err != nil {
				return err
			}
		}
		fmt.Printf("%-34s %s  %s\n", b.Ref, d, where)
	}
	return nil
}

func inputs(bin, busybox, ca string) (oci.Inputs, error) {
	var in oci.Inputs
	var err error
	if in.Binaries, err = oci.ReadBinaries(bin); err != nil {
		return in, err
	}
	if err := oci.CheckStatic(busybox); err != nil {
		return in, fmt.Errorf("%w (hack/install-busybox.sh installs busybox-static)", err)
	}
	if in.Busybox.Binary, err = os.ReadFile(busybox); err != nil {
		return in, fmt.Errorf("reading busybox: %w", err)
	}
	list, err := exec.Command(busybox, "--list").Output()
	if err != nil {
		return in, fmt.Errorf("listing the applets of %s: %w", busybox, err)
	}
	in.Busybox.Applets = strings.Fields(string(list))
	if in.CACerts, err = os.ReadFile(ca); err != nil && !os.IsNotExist(err) {
		return in, fmt.Errorf("reading the CA bundle: %w", err)
	}
	return in, nil
}

// sourceDate is the time stamp of every file and of the images: SOURCE_DATE_EPOCH when set,
// else the Unix epoch, so that a rebuild of the same binaries gives the same digests.
func sourceDate() (time.Time, error) {
	s := os.Getenv("SOURCE_DATE_EPOCH")
	if s == "" {
		return time.Unix(0, 0).UTC(), nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH=%q is not a number of seconds: %w", s, err)
	}
	return time.Unix(n, 0).UTC(), nil
}
