package oci

import (
	"fmt"
	"os"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Platform is the one platform the images are built for.
var Platform = v1.Platform{OS: "linux", Architecture: "amd64"}

// Build makes the OCI image: the base's layer, then the final stage's (none when it adds
// no file), and the config. Every time stamp is created, so the same inputs give the same
// digest.
func Build(img Image, created time.Time) (v1.Image, error) {
	out := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	layers := []struct {
		tree Tree
		by   string
	}{
		{img.Base.Tree, "stagehand oci-images: base " + img.Base.Name},
		{img.Layer, "stagehand oci-images: final stage of " + img.Dockerfile},
	}
	for _, l := range layers {
		if len(l.tree) == 0 {
			continue
		}
		layer, err := l.tree.Layer(created)
		if err != nil {
			return nil, fmt.Errorf("building a layer of %s: %w", img.Repository, err)
		}
		out, err = mutate.Append(out, mutate.Addendum{
			Layer:   layer,
			History: v1.History{CreatedBy: l.by, Created: v1.Time{Time: created}},
		})
		if err != nil {
			return nil, fmt.Errorf("adding a layer to %s: %w", img.Repository, err)
		}
	}
	cf, err := out.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("reading the config of %s: %w", img.Repository, err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = Platform.OS, Platform.Architecture
	cf.Created = v1.Time{Time: created}
	cf.Config = img.Config()
	out, err = mutate.ConfigFile(out, cf)
	if err != nil {
		return nil, fmt.Errorf("setting the config of %s: %w", img.Repository, err)
	}
	return out, nil
}

// Built is an image with the reference it is written and pushed as.
type Built struct {
	Ref   string // repository:tag, such as stagehand/deployer:dev
	Image v1.Image
}

// WriteLayout writes the images into a new OCI image layout at dir (whatever was there
// goes), each named by the annotation org.opencontainers.image.ref.name.
func WriteLayout(dir string, images []Built) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("removing the old layout %s: %w", dir, err)
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("creating the OCI layout %s: %w", dir, err)
	}
	for _, b := range images {
		err := p.AppendImage(b.Image, layout.WithPlatform(Platform),
			layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": b.Ref}))
		if err != nil {
			return fmt.Errorf("writing %s into %s: %w", b.Ref, dir, err)
		}
	}
	return nil
}

// Push writes the image to registry (host:port) over plain HTTP, as the local cluster's
// registry on loopback serves it, and returns the reference it pushed.
func Push(registry string, b Built) (string, error) {
	ref, err := name.ParseReference(registry+"/"+b.Ref, name.Insecure)
	if err != nil {
		return "", fmt.Errorf("parsing the reference %s/%s: %w", registry, b.Ref, err)
	}
	if err := remote.Write(ref, b.Image); err != nil {
		return "", fmt.Errorf("pushing %s: %w", ref, err)
	}
	return ref.String(), nil
}
