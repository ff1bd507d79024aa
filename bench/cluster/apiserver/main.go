// Command apiserver is a fast stand-in for kube-apiserver, for nodewarden's cluster-scale
// benchmark (bench/cluster). It generates a cluster in memory (Nodes, NodeClaims, pods of
// Deployments, StatefulSets, Jobs and DaemonSets, PDBs, volumes, namespaces, one
// EC2NodeClass and two NodePools), serves it over the Kubernetes REST protocol (discovery,
// GET, LIST with limit/continue, WATCH with resourceVersion, bookmarks and 410 Gone, and
// the writes: create, update, merge and JSON patch, status, delete with finalizers,
// eviction, binding) and, on its control port, plays the churn, the burst and the forced
// relist the driver asks for. Objects are serialized once when they change, so a LIST or
// a watch event sends stored bytes.
//
// Test tooling only; standard library only.
//
//	apiserver -dir DIR -nodes N -pods P [-hashes FILE] [-seed S] [-window EVENTS]
//	          [-bookmark DURATION] [-idle-timeout DURATION] [-plain] [-http1] [-reqlog FILE]
//	          [-hold-pods]
//
// It writes DIR/kubeconfig (a token and the CA of its self-signed certificate),
// DIR/kubeconfig-observer (another token: a client whose pod watch is not measured, see
// server.observer),
// DIR/ca.crt and, last, DIR/ports.json ({"api","control","url","pid"}).
package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"flag"
	"fmt"
	"log"
	"math/big"
	mrand "math/rand"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"
)

func main() {
	dir := flag.String("dir", "", "where to write kubeconfig, ca.crt and ports.json (required)")
	host := flag.String("host", "127.0.0.1", "address to listen on")
	nodes := flag.Int("nodes", 200, "Nodes (each with its NodeClaim and CSINode)")
	pods := flag.Int("pods", 4000, "pods (DaemonSet pods on every node included)")
	cluster := flag.String("cluster", "sim-cluster", "cluster name: the EC2NodeClass's discovery tags")
	region := flag.String("region", "us-west-2", "region of the zones")
	seed := flag.Int64("seed", 1, "generator seed")
	hashFile := flag.String("hashes", "", "JSON {nodepools:{name:hash}, ec2nodeclasses:{name:hash}}: the drift hashes generated NodeClaims carry")
	window := flag.Int("window", 102400, "watch events kept per resource (kube-apiserver's largest watch cache); a resume from before them, or a stream that falls that far behind, is 410 Gone")
	bookmark := flag.Duration("bookmark", 5*time.Second, "bookmark period of watches that allow them (0: none)")
	plain := flag.Bool("plain", false, "plain HTTP instead of TLS")
	http1 := flag.Bool("http1", false, "offer HTTP/1.1 only (no HTTP/2 through ALPN)")
	idle := flag.Duration("idle-timeout", 90*time.Second, "close a connection idle (no request in flight) this long, HTTP/2 ones too, as kube-apiserver does after 90 s")
	reqlog := flag.String("reqlog", "", "log every request to this file")
	holdPods := flag.Bool("hold-pods", false, "the first page of a pod LIST waits until POST /hold {\"kind\":\"pods\",\"hold\":false}")
	flag.Parse()
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "apiserver: -dir is required")
		os.Exit(2)
	}
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		log.Fatal(err)
	}
	_ = os.Remove(filepath.Join(*dir, "ports.json"))
	var hs hashes
	if *hashFile != "" {
		b, err := os.ReadFile(*hashFile)
		if err == nil {
			err = json.Unmarshal(b, &hs)
		}
		if err != nil {
			log.Fatalf("apiserver: -hashes %s: %v", *hashFile, err)
		}
	}

	st := newStore(*window)
	t0 := time.Now()
	cl := generate(st, genConfig{nodes: *nodes, pods: *pods, cluster: *cluster, region: *region, seed: *seed, hashes: hs})
	var bytesN, objsN int
	for _, ks := range st.kinds {
		for _, o := range ks.objs {
			bytesN += len(o.data)
			objsN++
		}
	}
	podBytes := 0
	for _, o := range st.kind(rPods).objs {
		podBytes += len(o.data)
	}
	np := len(st.kind(rPods).objs)
	avg := 0
	if np > 0 {
		avg = podBytes / np
	}
	log.Printf("apiserver: generated %d objects (%d nodes, %d pods, %.1f MiB of JSON, %d bytes per pod) in %.1f s",
		objsN, len(st.kind(rNodes).objs), np, float64(bytesN)/(1<<20), avg, time.Since(t0).Seconds())
	if *holdPods {
		st.kind(rPods).holdList = make(chan struct{})
	}

	token := fmt.Sprintf("bench-%x", mrand.Int63())
	observer := fmt.Sprintf("observer-%x", mrand.Int63())
	srv := &server{st: st, token: token, observer: observer, bookmark: *bookmark, lag: &lagLog{}}
	if *reqlog != "" {
		f, err := os.Create(*reqlog)
		if err != nil {
			log.Fatal(err)
		}
		srv.reqlog = log.New(f, "", log.Lmicroseconds)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(*host, "0"))
	if err != nil {
		log.Fatal(err)
	}
	hs1 := &http.Server{Handler: srv, ReadHeaderTimeout: 30 * time.Second, IdleTimeout: *idle, ErrorLog: log.New(os.Stderr, "apiserver http: ", 0),
		ConnContext: func(ctx context.Context, c net.Conn) context.Context { return context.WithValue(ctx, connKey{}, c) }}
	scheme := "http"
	caPEM := []byte{}
	var served net.Listener = countingListener{ln}
	if !*plain {
		scheme = "https"
		var cert tls.Certificate
		caPEM, cert, err = selfSigned(*host)
		if err != nil {
			log.Fatal(err)
		}
		cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12, NextProtos: []string{"h2", "http/1.1"}}
		if *http1 {
			cfg.NextProtos = []string{"http/1.1"}
			hs1.TLSNextProto = map[string]func(*http.Server, *tls.Conn, http.Handler){}
		}
		hs1.TLSConfig = cfg
		served = tls.NewListener(served, cfg)
	}
	go func() { log.Println(hs1.Serve(served)) }()
	cln, err := net.Listen("tcp", net.JoinHostPort(*host, "0"))
	if err != nil {
		log.Fatal(err)
	}
	ctl := &control{s: st, c: cl, ch: newChurn(st, cl), lag: srv.lag, rnd: mrand.New(mrand.NewSource(*seed + 11))}
	go func() { log.Println(http.Serve(cln, ctl)) }()

	port := ln.Addr().(*net.TCPAddr).Port
	url := fmt.Sprintf("%s://%s", scheme, net.JoinHostPort(*host, fmt.Sprint(port)))
	clusterEntry := map[string]any{"server": url}
	if len(caPEM) > 0 {
		clusterEntry["certificate-authority-data"] = base64.StdEncoding.EncodeToString(caPEM)
		if err := os.WriteFile(filepath.Join(*dir, "ca.crt"), caPEM, 0o644); err != nil {
			log.Fatal(err)
		}
	}
	kc := map[string]any{"apiVersion": "v1", "kind": "Config", "current-context": "bench",
		"clusters": []any{map[string]any{"name": "bench", "cluster": clusterEntry}},
		"users":    []any{map[string]any{"name": "bench", "user": map[string]any{"token": token}}},
		"contexts": []any{map[string]any{"name": "bench", "context": map[string]any{"cluster": "bench", "user": "bench", "namespace": "nodewarden"}}}}
	if err := writeFile(filepath.Join(*dir, "kubeconfig"), mustJSON(kc), 0o600); err != nil {
		log.Fatal(err)
	}
	kc["users"] = []any{map[string]any{"name": "bench", "user": map[string]any{"token": observer}}}
	if err := writeFile(filepath.Join(*dir, "kubeconfig-observer"), mustJSON(kc), 0o600); err != nil {
		log.Fatal(err)
	}
	ports := map[string]any{"api": port, "control": cln.Addr().(*net.TCPAddr).Port, "url": url, "pid": os.Getpid(),
		"objects": objsN, "bytes": bytesN, "podBytes": avg, "generateSeconds": time.Since(t0).Seconds()}
	if err := writeFile(filepath.Join(*dir, "ports.json"), mustJSON(ports), 0o644); err != nil {
		log.Fatal(err)
	}
	log.Printf("apiserver: serving %s, control http://%s", url, cln.Addr())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	log.Printf("apiserver: stopping")
}

func writeFile(path string, b []byte, mode os.FileMode) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, mode); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// selfSigned makes a CA and a serving certificate for host, localhost and 127.0.0.1.
func selfSigned(host string) ([]byte, tls.Certificate, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	now := time.Now()
	caT := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "bench-apiserver-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(7 * 24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caT, caT, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	ips := []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")}
	if ip := net.ParseIP(host); ip != nil {
		ips = append(ips, ip)
	}
	leafT := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "kube-apiserver"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(7 * 24 * time.Hour), DNSNames: []string{"localhost", "kubernetes", "kubernetes.default"},
		IPAddresses: ips, KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, leafT, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	cert, err := tls.X509KeyPair(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}))
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), cert, err
}
