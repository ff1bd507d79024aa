#!/usr/bin/env bash
# Gives the plain install (manifests/install.yaml) its certificate: the development
# CA and serving certificate of `make certs` (certs/gen-dev-certs.sh, for Service
# nodewarden in namespace nodewarden) go into Secret nodewarden/nodewarden-tls, and the
# CA into the caBundle of every webhook of nodewarden-validating and
# nodewarden-mutating. Idempotent. Extra arguments go to every kubectl call
# (e.g. --kubeconfig FILE).
#
#   manifests/install-dev-certs.sh [--certs DIR] [kubectl flags...]
set -euo pipefail
cd "$(dirname "$0")/.."
dir=certs/dev
if [ "${1:-}" = --certs ]; then dir=$2; shift 2; fi
[ -f "$dir/ca.crt" ] || NW_SERVICE=nodewarden NW_NAMESPACE=nodewarden certs/gen-dev-certs.sh "$dir" >/dev/null
kubectl "$@" -n nodewarden create secret generic nodewarden-tls --type=kubernetes.io/tls \
    --from-file=tls.crt="$dir/tls.crt" --from-file=tls.key="$dir/tls.key" \
    --from-file=ca.crt="$dir/ca.crt" --dry-run=client -o json | kubectl "$@" apply -f - >/dev/null
ca=$(base64 -w0 < "$dir/ca.crt")
for kind in validating mutating; do
    n=$(kubectl "$@" get ${kind}webhookconfiguration nodewarden-$kind -o jsonpath='{range .webhooks[*]}x{end}')
    patch="["
    for ((i = 0; i < ${#n}; i++)); do
        [ $i = 0 ] || patch+=","
        patch+="{\"op\":\"add\",\"path\":\"/webhooks/$i/clientConfig/caBundle\",\"value\":\"$ca\"}"
    done
    patch+="]"
    kubectl "$@" patch ${kind}webhookconfiguration nodewarden-$kind --type=json -p "$patch" >/dev/null
done
echo "install-dev-certs: Secret nodewarden/nodewarden-tls and caBundle of nodewarden-validating, nodewarden-mutating set from $dir"
