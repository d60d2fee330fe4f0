package localcluster

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEnsurePKIReusesValidFiles(t *testing.T) {
	p := pki{dir: filepath.Join(t.TempDir(), "pki")}
	require.NoError(t, ensurePKI(p))
	before := readAll(t, p.dir)
	for _, spec := range leafSpecs {
		cert, _, err := loadPair(p.cert(spec.name), p.key(spec.name))
		require.NoError(t, err, spec.name)
		assert.Equal(t, spec.cn, cert.Subject.CommonName)
		assert.Equal(t, spec.orgs, cert.Subject.Organization)
	}

	require.NoError(t, ensurePKI(p))
	assert.Equal(t, before, readAll(t, p.dir), "a second start keeps every file")

	// A new CA invalidates every leaf; the service-account key stays.
	require.NoError(t, os.Remove(p.caCert()))
	require.NoError(t, ensurePKI(p))
	after := readAll(t, p.dir)
	assert.NotEqual(t, before["admin.crt"], after["admin.crt"])
	assert.Equal(t, before["sa.key"], after["sa.key"])
	ca, _, err := loadPair(p.caCert(), p.key("ca"))
	require.NoError(t, err)
	admin, _, err := loadPair(p.cert("admin"), p.key("admin"))
	require.NoError(t, err)
	assert.NoError(t, admin.CheckSignatureFrom(ca))
}

func readAll(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	files := map[string]string{}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		files[e.Name()] = string(data)
	}
	return files
}
