//go:build tools

// The node components of the pinned Kubernetes release: the kubelet and kube-proxy
// (tests/kubelet runs them under a real container runtime). A module of its own so
// that adding them changed neither the go.mod nor the go.sum of tests/k8s/kubernetes,
// and so not the cache key of the control-plane binaries (tests/k8s/build).
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
