//go:build tools

// Pins the etcd server command (go.etcd.io/etcd/server/v3 is the etcd binary's
// main package); tests/k8s/build builds it. Test tooling only.
package tools

import _ "go.etcd.io/etcd/server/v3"
