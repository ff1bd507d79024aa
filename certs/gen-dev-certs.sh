#!/usr/bin/env bash
# certs/gen-dev-certs.sh — a development CA and a serving certificate for the
# webhook (OpenSSL CLI). `make certs` calls it with certs/dev.
#
#   certs/gen-dev-certs.sh [--service NAME] [--namespace NS] [--days N] [--force] [DIR]
#
# Writes DIR/{ca.crt,ca.key,tls.crt,tls.key} (DIR defaults to certs/dev).
# The CA has basicConstraints CA:TRUE; both are SHA-256 with EC P-256 keys. The
# serving certificate has EKU serverAuth and SANs <service>.<namespace>.svc,
# <service>.<namespace>.svc.cluster.local, localhost, 127.0.0.1 and ::1.
# Service and namespace also come from NW_SERVICE / NW_NAMESPACE (default
# nodewarden / nodewarden). Idempotent: existing files are kept while the pair
# verifies against the CA, carries the wanted SANs and is valid for at least
# another day; --force (or NW_FORCE=1) regenerates.
set -euo pipefail

service=${NW_SERVICE:-nodewarden}
namespace=${NW_NAMESPACE:-nodewarden}
days=${NW_DAYS:-365}
force=${NW_FORCE:-0}
dir=""
while [ $# -gt 0 ]; do
  case "$1" in
    --service) service=$2; shift 2 ;;
    --namespace) namespace=$2; shift 2 ;;
    --days) days=$2; shift 2 ;;
    --force) force=1; shift ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    -*) echo "gen-dev-certs: unknown option $1" >&2; exit 2 ;;
    *) dir=$1; shift ;;
  esac
done
dir=${dir:-certs/dev}
re='^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'
[[ $service =~ $re ]] || { echo "gen-dev-certs: service '$service' is not a DNS label" >&2; exit 2; }
[[ $namespace =~ $re ]] || { echo "gen-dev-certs: namespace '$namespace' is not a DNS label" >&2; exit 2; }
[[ $days =~ ^[0-9]+$ ]] || { echo "gen-dev-certs: --days needs a number" >&2; exit 2; }

svc="$service.$namespace.svc"
sans="DNS:$svc,DNS:$svc.cluster.local,DNS:localhost,IP:127.0.0.1,IP:::1"
mkdir -p "$dir"
umask 077

valid() {
  [ -s "$dir/ca.crt" ] && [ -s "$dir/ca.key" ] && [ -s "$dir/tls.crt" ] && [ -s "$dir/tls.key" ] || return 1
  openssl verify -CAfile "$dir/ca.crt" "$dir/tls.crt" >/dev/null 2>&1 || return 1
  openssl x509 -in "$dir/tls.crt" -noout -checkend 86400 >/dev/null 2>&1 || return 1
  openssl x509 -in "$dir/ca.crt" -noout -checkend 86400 >/dev/null 2>&1 || return 1
  openssl x509 -in "$dir/tls.crt" -noout -ext subjectAltName 2>/dev/null | grep -q "DNS:$svc," || return 1
  # the key must belong to the certificate
  [ "$(openssl x509 -in "$dir/tls.crt" -noout -pubkey | openssl sha256)" = \
    "$(openssl pkey -in "$dir/tls.key" -pubout | openssl sha256)" ] || return 1
}

if [ "$force" != 1 ] && valid; then
  echo "gen-dev-certs: $dir already holds a valid pair for $svc (use --force to regenerate)"
  exit 0
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

openssl ecparam -name prime256v1 -genkey -noout -out "$tmp/ca.key" 2>/dev/null
openssl req -x509 -new -sha256 -key "$tmp/ca.key" -days "$days" \
  -subj "/CN=nodewarden development CA" \
  -addext "basicConstraints=critical,CA:TRUE" \
  -addext "keyUsage=critical,keyCertSign,cRLSign" \
  -addext "subjectKeyIdentifier=hash" \
  -out "$tmp/ca.crt"

openssl ecparam -name prime256v1 -genkey -noout -out "$tmp/tls.key.ec" 2>/dev/null
openssl pkcs8 -topk8 -nocrypt -in "$tmp/tls.key.ec" -out "$tmp/tls.key"
openssl req -new -sha256 -key "$tmp/tls.key" -subj "/CN=$svc" -out "$tmp/tls.csr"
cat > "$tmp/ext.cnf" <<EOF
basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=serverAuth
subjectAltName=$sans
subjectKeyIdentifier=hash
authorityKeyIdentifier=keyid
EOF
openssl x509 -req -sha256 -in "$tmp/tls.csr" -CA "$tmp/ca.crt" -CAkey "$tmp/ca.key" \
  -CAcreateserial -days "$days" -extfile "$tmp/ext.cnf" -out "$tmp/tls.crt" 2>/dev/null

# install: key first, certificate last (a watcher sees a matching pair at the end)
for f in ca.key ca.crt tls.key tls.crt; do
  cp "$tmp/$f" "$dir/$f.new" && mv -f "$dir/$f.new" "$dir/$f"
done
chmod 600 "$dir/ca.key" "$dir/tls.key"
chmod 644 "$dir/ca.crt" "$dir/tls.crt"
echo "gen-dev-certs: wrote $dir/{ca.crt,ca.key,tls.crt,tls.key} for $svc (SANs $sans)"
