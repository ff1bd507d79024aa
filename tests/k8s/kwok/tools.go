//go:build tools

// Pins the kwok command (sigs.k8s.io/kwok/cmd/kwok, the controller that plays the
// kubelets of fake Nodes); tests/k8s/build builds it. Test tooling only.
package tools

import _ "sigs.k8s.io/kwok/cmd/kwok"
