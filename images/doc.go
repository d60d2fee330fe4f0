// Package images resolves image references (a registry tag to its digest) and polls the
// tags that ImageChange triggers watch. It is filled in by the image-trigger issue.
package images
