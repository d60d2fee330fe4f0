package localcluster

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// The certificates below are kept in <dir>/pki and reused by the next start while they are
// valid and signed by the CA there, so a kubeconfig written by one `up` still authenticates
// after `down` and `up` again. Delete the folder to start afresh.
const (
	caValidity   = 10 * 365 * 24 * time.Hour
	leafValidity = 2 * 365 * 24 * time.Hour
	// renewBefore makes a start replace a certificate that would expire during a long run.
	renewBefore = 30 * 24 * time.Hour
)

// leafSpec describes one certificate signed by the cluster CA.
type leafSpec struct {
	name   string // file stem in pki/: <name>.crt and <name>.key
	cn     string
	orgs   []string
	server bool // serving (true) or client (false)
	dns    []string
	ips    []net.IP
}

var loopbackIPs = []net.IP{net.IPv4(127, 0, 0, 1)}

// leafSpecs lists every certificate the cluster uses. The names are part of the folder layout.
var leafSpecs = []leafSpec{
	{name: "apiserver", cn: "kube-apiserver", server: true,
		dns: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local"},
		ips: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv4(10, 0, 0, 1)}},
	{name: "admin", cn: "stagehand-admin", orgs: []string{"system:masters"}},
	// The controller manager runs every controller with its own credentials
	// (--use-service-account-credentials=false), so it needs system:masters.
	{name: "kube-controller-manager", cn: "system:kube-controller-manager", orgs: []string{"system:masters"}},
	// The scheduler's bootstrap RBAC role is enough, as in kubeadm.
	{name: "kube-scheduler", cn: "system:kube-scheduler"},
	{name: "apiserver-kubelet-client", cn: "kube-apiserver-kubelet-client", orgs: []string{"system:masters"}},
	// components serves the controller manager's and the scheduler's /healthz.
	{name: "components", cn: "localcluster-components", server: true, dns: []string{"localhost"}, ips: loopbackIPs},
	{name: "kubelet", cn: "stagehand-node-agent", server: true, dns: []string{"localhost"}, ips: loopbackIPs},
}

// pki is the set of files in <dir>/pki.
type pki struct{ dir string }

func (p pki) cert(name string) string { return filepath.Join(p.dir, name+".crt") }
func (p pki) key(name string) string  { return filepath.Join(p.dir, name+".key") }
func (p pki) caCert() string          { return p.cert("ca") }
func (p pki) saKey() string           { return filepath.Join(p.dir, "sa.key") }
func (p pki) saPub() string           { return filepath.Join(p.dir, "sa.pub") }

// ensurePKI creates whatever is missing, expiring or not signed by the current CA.
func ensurePKI(p pki) error {
	if err := os.MkdirAll(p.dir, 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", p.dir, err)
	}
	ca, caKey, err := loadPair(p.caCert(), p.key("ca"))
	if err != nil || !fresh(ca) {
		if ca, caKey, err = newCA(); err != nil {
			return err
		}
		if err := writePair(p.caCert(), p.key("ca"), ca, caKey); err != nil {
			return err
		}
	}
	for _, spec := range leafSpecs {
		cert, _, err := loadPair(p.cert(spec.name), p.key(spec.name))
		if err == nil && fresh(cert) && cert.CheckSignatureFrom(ca) == nil {
			continue
		}
		cert, key, err := newLeaf(spec, ca, caKey)
		if err != nil {
			return err
		}
		if err := writePair(p.cert(spec.name), p.key(spec.name), cert, key); err != nil {
			return err
		}
	}
	return ensureSAKey(p)
}

// ensureSAKey keeps the service-account signing key: replacing it would invalidate every
// token minted before.
func ensureSAKey(p pki) error {
	if _, err := os.Stat(p.saKey()); err == nil {
		if _, err := os.Stat(p.saPub()); err == nil {
			return nil
		}
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return fmt.Errorf("generating the service-account key: %w", err)
	}
	if err := writeKey(p.saKey(), key); err != nil {
		return err
	}
	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return fmt.Errorf("encoding the service-account public key: %w", err)
	}
	return writePEM(p.saPub(), "PUBLIC KEY", der, 0o644)
}

func fresh(cert *x509.Certificate) bool {
	return time.Now().Add(renewBefore).Before(cert.NotAfter)
}

func newCA() (*x509.Certificate, crypto.Signer, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generating the CA key: %w", err)
	}
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: "stagehand-localcluster-ca"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(caValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	cert, err := sign(tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, nil, fmt.Errorf("self-signing the CA: %w", err)
	}
	return cert, key, nil
}

func newLeaf(spec leafSpec, ca *x509.Certificate, caKey crypto.Signer) (*x509.Certificate, crypto.Signer, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generating the %s key: %w", spec.name, err)
	}
	usage := x509.ExtKeyUsageClientAuth
	if spec.server {
		usage = x509.ExtKeyUsageServerAuth
	}
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: spec.cn, Organization: spec.orgs},
		NotBefore:   time.Now().Add(-time.Hour),
		NotAfter:    time.Now().Add(leafValidity),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{usage},
		DNSNames:    spec.dns,
		IPAddresses: spec.ips,
	}
	cert, err := sign(tmpl, ca, key.Public(), caKey)
	if err != nil {
		return nil, nil, fmt.Errorf("signing the %s certificate: %w", spec.name, err)
	}
	return cert, key, nil
}

func sign(tmpl, parent *x509.Certificate, pub crypto.PublicKey, signer crypto.Signer) (*x509.Certificate, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, fmt.Errorf("picking a serial number: %w", err)
	}
	tmpl.SerialNumber = serial
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, signer)
	if err != nil {
		return nil, err
	}
	return x509.ParseCertificate(der)
}

func loadPair(certPath, keyPath string) (*x509.Certificate, crypto.Signer, error) {
	certPEM, err := os.ReadFile(certPath)
	if err != nil {
		return nil, nil, err
	}
	keyPEM, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, nil, err
	}
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return nil, nil, fmt.Errorf("%s or %s is not PEM", certPath, keyPath)
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("parsing %s: %w", certPath, err)
	}
	k, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("parsing %s: %w", keyPath, err)
	}
	signer, ok := k.(crypto.Signer)
	if !ok {
		return nil, nil, fmt.Errorf("%s holds no signing key", keyPath)
	}
	pub, ok := cert.PublicKey.(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(signer.Public()) {
		return nil, nil, errors.New(certPath + " does not match " + keyPath)
	}
	return cert, signer, nil
}

func writePair(certPath, keyPath string, cert *x509.Certificate, key crypto.Signer) error {
	if err := writeKey(keyPath, key); err != nil {
		return err
	}
	return writePEM(certPath, "CERTIFICATE", cert.Raw, 0o644)
}

func writeKey(path string, key crypto.Signer) error {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return fmt.Errorf("encoding %s: %w", path, err)
	}
	return writePEM(path, "PRIVATE KEY", der, 0o600)
}

func writePEM(path, blockType string, der []byte, mode os.FileMode) error {
	return writeFileAtomic(path, pem.EncodeToMemory(&pem.Block{Type: blockType, Bytes: der}), mode)
}

// writeFileAtomic replaces path in one rename, so a reader never sees half a file.
func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, mode); err != nil {
		return fmt.Errorf("writing %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("replacing %s: %w", path, err)
	}
	return nil
}
