//go:build tools

// Pins the helm command; tests/k8s/build builds it. Test tooling only.
package tools

import _ "helm.sh/helm/v3/cmd/helm"
