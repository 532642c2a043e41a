package redis_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	rxredis "github.com/rxbulkhead/bulkhead/contrib/redis"
)

// TestCloseIsBoundedByTimeoutWhenTheSubscriptionsTLSHandshakeStalls pins
// the case go-redis's default dialer left open: with Options.TLSConfig and
// no Dialer it makes the TLS handshake without the context
// (tls.DialWithDialer), so a server that accepted the connection and never
// answered the ClientHello held Close up to DialTimeout (5 s here). The
// "server" is a listener of the test's own that accepts and never writes.
// The test closes the Store once the subscriber has connected (its
// handshake then waits), with a call waiting on a bulkhead.
func TestCloseIsBoundedByTimeoutWhenTheSubscriptionsTLSHandshakeStalls(t *testing.T) {
	before := goleak.IgnoreCurrent()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan struct{}, 1)
	var (
		mu    sync.Mutex
		conns []net.Conn
	)
	acceptDone := make(chan struct{})
	go func() {
		defer close(acceptDone)
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, nc)
			mu.Unlock()
			select {
			case accepted <- struct{}{}:
			default:
			}
		}
	}()
	// stopListener ends every stalled handshake (the caller's client's too)
	// and the accept loop.
	stopListener := func() {
		ln.Close()
		<-acceptDone
		mu.Lock()
		defer mu.Unlock()
		for _, nc := range conns {
			nc.Close()
		}
	}
	defer stopListener()

	c := goredis.NewClient(&goredis.Options{
		Addr: ln.Addr().String(), TLSConfig: &tls.Config{MinVersion: tls.VersionTLS12},
		DialTimeout: 5 * time.Second, ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second,
		MaxRetries: -1, DialerRetries: 1,
	})
	defer c.Close()
	cfg := fastStore()
	cfg.KeyPrefix = prefixFor(t)
	s, err := rxredis.NewStore(c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Without bulkheads the Store makes no round trip: the first
	// connection accepted is the subscriber's.
	closeWithAWaiterWithinTimeout(t, s, cfg.Timeout, accepted, "during the subscription's TLS handshake")
	// The caller's client's own dials (round trips the Store gave up on)
	// are in their handshakes too: closing the listener's connections
	// ends them.
	stopListener()
	c.Close()
	if err := goleak.Find(before); err != nil {
		t.Errorf("goroutines left once the Store and the client are closed: %v", err)
	}
}

// TestTheSubscriptionWakesAWaiterThroughTLS: through a TLS-only port of a
// real server, with go-redis's default dialer (no Dialer), the Store's
// subscription (its own TLS dialer) connects, verifies the server's
// certificate by the address's IP (ServerName left empty, as go-redis
// does), and its release message wakes a waiter.
func TestTheSubscriptionWakesAWaiterThroughTLS(t *testing.T) {
	requireServer(t)
	dir := t.TempDir()
	pool := writeTestCerts(t, dir)
	tlsPort, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := startServer("--tls-port", strconv.Itoa(tlsPort),
		"--tls-cert-file", filepath.Join(dir, "server.crt"), "--tls-key-file", filepath.Join(dir, "server.key"),
		"--tls-ca-cert-file", filepath.Join(dir, "ca.crt"), "--tls-auth-clients", "no")
	if err != nil {
		if strings.Contains(err.Error(), "tls-port") || strings.Contains(err.Error(), "Bad directive") {
			t.Skipf("this redis-server has no TLS support (built without BUILD_TLS): %v", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	const name = "rxbt-tls"
	c := srv.client(t, func(o *goredis.Options) {
		o.Addr = "127.0.0.1:" + strconv.Itoa(tlsPort)
		o.TLSConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
		o.ClientName = name
	})
	if err := c.Ping(t.Context()).Err(); err != nil {
		t.Fatalf("PING through TLS: %v", err)
	}
	checkReleaseWakesThroughPubSub(t, c, name, srv.client(t))
}

// writeTestCerts writes a CA (ca.crt) and a server certificate for
// 127.0.0.1 signed by it (server.crt, server.key) into dir, and returns a
// pool holding the CA.
func writeTestCerts(t *testing.T, dir string) *x509.CertPool {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "rxbulkhead test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	for name, block := range map[string]*pem.Block{
		"ca.crt":     {Type: "CERTIFICATE", Bytes: caDER},
		"server.crt": {Type: "CERTIFICATE", Bytes: der},
		"server.key": {Type: "PRIVATE KEY", Bytes: keyDER},
	} {
		if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return pool
}
