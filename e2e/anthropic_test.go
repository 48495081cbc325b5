package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// anthropicHost stands in for Anthropic's own API at its real name. A CLI pointed at a custom
// ANTHROPIC_BASE_URL is not eligible for server-managed settings, so the scenarios that need an
// eligible CLI run it with its default base URL through HTTPS_PROXY: the proxy hands every CONNECT
// to one TLS server whose certificates a test CA signs (trusted through NODE_EXTRA_CA_CERTS). The
// Messages API is the fake one; /api/claude_code/settings answers as the test sets it.
type anthropicHost struct {
	api   *fakeAPI
	proxy *httptest.Server
	tls   *httptest.Server
	caPEM string // the CA's certificate, for NODE_EXTRA_CA_CERTS

	mu       sync.Mutex
	status   int    // what /api/claude_code/settings answers; 0 closes the connection (offline)
	body     string // its body when status is 200
	requests map[string]int
}

func newAnthropicHost(t *testing.T, api *fakeAPI) *anthropicHost {
	t.Helper()
	h := &anthropicHost{api: api, requests: map[string]int{}}
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ca := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "coworkbridge e2e CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ = x509.ParseCertificate(caDER)
	h.caPEM = filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(h.caPEM, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o644); err != nil {
		t.Fatal(err)
	}
	var certs sync.Map
	issue := func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
		name := hello.ServerName
		if c, ok := certs.Load(name); ok {
			return c.(*tls.Certificate), nil
		}
		key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		leaf := &x509.Certificate{
			SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
			DNSNames: []string{name}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		}
		der, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
		if err != nil {
			return nil, err
		}
		c := &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
		certs.Store(name, c)
		return c, nil
	}
	h.tls = httptest.NewUnstartedServer(http.HandlerFunc(h.serve))
	h.tls.TLS = &tls.Config{GetCertificate: issue}
	h.tls.StartTLS()
	t.Cleanup(h.tls.Close)
	h.proxy = httptest.NewServer(http.HandlerFunc(h.connect))
	t.Cleanup(h.proxy.Close)
	return h
}

// env is what makes the CLI talk to this host as it would to Anthropic's.
func (h *anthropicHost) env() []string {
	return []string{"ANTHROPIC_BASE_URL=", "HTTPS_PROXY=" + h.proxy.URL, "https_proxy=" + h.proxy.URL,
		"NO_PROXY=", "no_proxy=", "NODE_EXTRA_CA_CERTS=" + h.caPEM}
}

// settings sets what the settings endpoint answers from now on.
func (h *anthropicHost) settings(status int, body string) {
	h.mu.Lock()
	h.status, h.body = status, body
	h.mu.Unlock()
}

func (h *anthropicHost) count(path string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.requests[path]
}

func (h *anthropicHost) serve(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.requests[r.URL.Path]++
	status, body := h.status, h.body
	h.mu.Unlock()
	switch r.URL.Path {
	case "/api/claude_code/settings", "/api/claude_code/policy_limits":
		if status == 0 {
			if hj, ok := w.(http.Hijacker); ok {
				if c, _, err := hj.Hijack(); err == nil {
					c.Close()
					return
				}
			}
			http.Error(w, "offline", http.StatusBadGateway)
			return
		}
		if status != http.StatusOK {
			w.WriteHeader(status)
			return
		}
		if r.URL.Path == "/api/claude_code/policy_limits" {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, body)
	default:
		h.api.serve(w, r)
	}
}

// connect tunnels a CONNECT to the TLS server whatever host it names.
func (h *anthropicHost) connect(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodConnect {
		http.Error(w, "CONNECT only", http.StatusMethodNotAllowed)
		return
	}
	up, err := net.Dial("tcp", h.tls.Listener.Addr().String())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		up.Close()
		return
	}
	c, buf, err := hj.Hijack()
	if err != nil {
		up.Close()
		return
	}
	io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n")
	go pipe(up, buf.Reader, c)
	pipe(c, up, up)
}

func pipe(dst io.WriteCloser, src io.Reader, closeAfter io.Closer) {
	io.Copy(dst, src)
	dst.Close()
	closeAfter.Close()
}
