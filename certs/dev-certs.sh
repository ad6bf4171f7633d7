#!/usr/bin/env bash
# Development certificates for `cudagate serve`, made with openssl:
#
#   ca.crt, ca.key                 the development CA (the webhook's caBundle)
#   server.crt, server.key         the server certificate, signed by ca.crt, for
#                                  DNS:localhost, IP:127.0.0.1, IP:::1,
#                                  DNS:<service>.<namespace>.svc (the name the API
#                                  server verifies) and its longer forms
#   client-ca.crt, client-ca.key   a separate CA for client certificates
#                                  (cudagate serve --client-ca client-ca.crt)
#   client.crt, client.key         a client certificate signed by client-ca.crt
#
# Idempotent: files that exist, match each other, are signed by their CA, carry
# the requested names and stay valid for at least a day are kept; the rest is
# made anew. --renew re-issues the server and client certificates (new keys and
# serial numbers) under the existing CAs, which is how a rotation is tested.
# Each file is written to a temporary name and renamed into place.
#
# --overlay DIR (manifests/overlays/self-signed) also writes, under
# DIR/generated/, what that kustomize overlay reads: secret.yaml, the
# kubernetes.io/tls Secret cudagate-tls (tls.crt, tls.key, ca.crt) in the
# namespace, and ca-bundle.yaml, the JSON patch that puts the CA into the
# caBundle of every webhook of the base's webhook configurations.
# --also-trust FILE adds FILE's CA certificates to that caBundle and to the
# Secret's ca.crt, for a CA rotation (README, "Certificate rotation").
#
# Progress goes to stderr; the last line on stdout is the base64 CA bundle for
# a ValidatingWebhookConfiguration's or MutatingWebhookConfiguration's caBundle.
set -euo pipefail

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out="$script_dir/dev"
service=cudagate
namespace=cudagate-system
days=365
ca_days=3650
renew=0
overlay=""
also_trust=""

usage() {
  cat <<EOF
usage: $(basename "$0") [--out DIR] [--service NAME] [--namespace NAME] [--days N] [--renew]

  --out DIR          where to write the files (default: certs/dev)
  --service NAME     the webhook Service's name (default: cudagate)
  --namespace NAME   the webhook Service's namespace (default: cudagate-system)
  --days N           validity of the server and client certificates (default: 365)
  --renew            re-issue the server and client certificates even if valid
  --overlay DIR      also write DIR/generated/secret.yaml and ca-bundle.yaml for the
                     kustomize overlay manifests/overlays/self-signed
  --also-trust FILE  with --overlay: trust FILE's CA certificates too (CA rotation)
EOF
}

die() {
  echo "dev-certs.sh: error: $*" >&2
  exit 2
}

while [ $# -gt 0 ]; do
  case "$1" in
    --out) [ $# -ge 2 ] || die "--out needs a directory"; out="$2"; shift 2 ;;
    --out=*) out="${1#*=}"; shift ;;
    --service) [ $# -ge 2 ] || die "--service needs a name"; service="$2"; shift 2 ;;
    --service=*) service="${1#*=}"; shift ;;
    --namespace) [ $# -ge 2 ] || die "--namespace needs a name"; namespace="$2"; shift 2 ;;
    --namespace=*) namespace="${1#*=}"; shift ;;
    --days) [ $# -ge 2 ] || die "--days needs a number"; days="$2"; shift 2 ;;
    --days=*) days="${1#*=}"; shift ;;
    --renew) renew=1; shift ;;
    --overlay) [ $# -ge 2 ] || die "--overlay needs a directory"; overlay="$2"; shift 2 ;;
    --overlay=*) overlay="${1#*=}"; shift ;;
    --also-trust) [ $# -ge 2 ] || die "--also-trust needs a file"; also_trust="$2"; shift 2 ;;
    --also-trust=*) also_trust="${1#*=}"; shift ;;
    -h | --help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument: $1" ;;
  esac
done

dns_label='^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'
[[ "$service" =~ $dns_label ]] || die "--service: expected a DNS label (a-z, 0-9, -), got \"$service\""
[[ "$namespace" =~ $dns_label ]] || die "--namespace: expected a DNS label (a-z, 0-9, -), got \"$namespace\""
[[ "$days" =~ ^[1-9][0-9]{0,4}$ ]] || die "--days: expected a number of days from 1 to 99999, got \"$days\""
command -v openssl >/dev/null || die "openssl not found"
if [ -n "$overlay" ]; then
  [ -f "$overlay/kustomization.yaml" ] || die "--overlay: no kustomization.yaml in \"$overlay\""
  webhooks_file="$overlay/../../base/webhooks.yaml"
  [ -f "$webhooks_file" ] || die "--overlay: expected the base's webhooks at $webhooks_file"
fi
if [ -n "$also_trust" ]; then
  [ -n "$overlay" ] || die "--also-trust goes with --overlay"
  openssl x509 -in "$also_trust" -noout 2>/dev/null || die "--also-trust: no PEM certificate in \"$also_trust\""
fi

mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d "$out/.dev-certs.XXXXXX")
trap 'rm -rf "$work"' EXIT
umask 077

svc_dns="$service.$namespace.svc"
server_names=("DNS:localhost" "IP:127.0.0.1" "IP:::1" "DNS:$svc_dns"
              "DNS:$svc_dns.cluster.local" "DNS:$service.$namespace" "DNS:$service")

log() { echo "dev-certs.sh: $*" >&2; }

# Moves a finished file from the work directory into place atomically.
install_file() {
  chmod "$2" "$work/$1"
  mv -f "$work/$1" "$out/$1"
}

new_key() {
  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$work/$1" 2>/dev/null
}

# A positive random serial of 16 bytes.
new_serial() {
  echo "0x7$(openssl rand -hex 16 | cut -c2-)"
}

valid_for_a_day() {
  openssl x509 -in "$1" -noout -checkend 86400 >/dev/null 2>&1
}

key_matches() {
  local cert_pub key_pub
  cert_pub=$(openssl x509 -in "$1" -noout -pubkey 2>/dev/null) || return 1
  key_pub=$(openssl pkey -in "$2" -pubout 2>/dev/null) || return 1
  [ "$cert_pub" = "$key_pub" ]
}

ca_usable() {
  [ -s "$out/$1.crt" ] && [ -s "$out/$1.key" ] &&
    valid_for_a_day "$out/$1.crt" && key_matches "$out/$1.crt" "$out/$1.key"
}

make_ca() {
  local name=$1 subject=$2
  new_key "$name.key"
  openssl req -x509 -new -key "$work/$name.key" -sha256 -days "$ca_days" -subj "$subject" \
    -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign" \
    -addext "subjectKeyIdentifier=hash" \
    -set_serial "$(new_serial)" -out "$work/$name.crt" 2>/dev/null
  install_file "$name.key" 600
  install_file "$name.crt" 644
  log "made $out/$name.crt"
}

# The SAN entries of a certificate, one per line, as "DNS:x" or "IP Address:x".
sans_of() {
  openssl x509 -in "$1" -noout -ext subjectAltName 2>/dev/null | tail -n +2 | tr ',' '\n' |
    sed -e 's/^ *//' -e 's/^IP Address:/IP:/'
}

leaf_usable() {
  local name=$1 ca=$2
  shift 2
  [ -s "$out/$name.crt" ] && [ -s "$out/$name.key" ] || return 1
  valid_for_a_day "$out/$name.crt" || return 1
  key_matches "$out/$name.crt" "$out/$name.key" || return 1
  openssl verify -CAfile "$out/$ca.crt" "$out/$name.crt" >/dev/null 2>&1 || return 1
  local sans want
  sans=$(sans_of "$out/$name.crt")
  for want in "$@"; do
    # openssl prints IPv6 addresses in full ("0:0:0:0:0:0:0:1").
    [ "$want" = "IP:::1" ] && want="IP:0:0:0:0:0:0:0:1"
    grep -qxF "$want" <<<"$sans" || return 1
  done
}

make_leaf() {
  local name=$1 ca=$2 cn=$3 usage=$4
  shift 4
  local san
  san=$(IFS=,; echo "$*")
  new_key "$name.key"
  openssl req -new -key "$work/$name.key" -subj "/CN=$cn" -out "$work/$name.csr" 2>/dev/null
  cat >"$work/$name.ext" <<EOF
basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=$usage
subjectKeyIdentifier=hash
authorityKeyIdentifier=keyid
${san:+subjectAltName=$san}
EOF
  openssl x509 -req -in "$work/$name.csr" -CA "$out/$ca.crt" -CAkey "$out/$ca.key" \
    -set_serial "$(new_serial)" -days "$days" -sha256 -extfile "$work/$name.ext" \
    -out "$work/$name.crt" 2>/dev/null
  # The key first: a server that reloads in between sees a mismatched pair,
  # keeps its current one and picks up the new pair at the certificate's rename.
  install_file "$name.key" 600
  install_file "$name.crt" 644
  log "made $out/$name.crt ($(openssl x509 -in "$out/$name.crt" -noout -serial))"
}

ca_usable ca || make_ca ca "/O=cudagate development/CN=cudagate development CA"
ca_usable client-ca || make_ca client-ca "/O=cudagate development/CN=cudagate development client CA"

if [ "$renew" = 1 ] || ! leaf_usable server ca "${server_names[@]}"; then
  make_leaf server ca "$svc_dns" serverAuth "${server_names[@]}"
else
  log "kept $out/server.crt"
fi
if [ "$renew" = 1 ] || ! leaf_usable client client-ca; then
  make_leaf client client-ca "cudagate-test-client" clientAuth
else
  log "kept $out/client.crt"
fi

# The overlay's Secret and caBundle patch, each written whole and renamed into
# place. The patch has one operation per webhook of a configuration (the base
# lists the same webhooks, by mode, in both).
write_overlay() {
  local dir="$1/generated" count i
  mkdir -p "$dir"
  count=$(awk '/^kind: ValidatingWebhookConfiguration/ { v = 1 } v && /^- name: / { n++ } END { print n + 0 }' \
    "$webhooks_file")
  [ "$count" -gt 0 ] || die "--overlay: no webhooks found in $webhooks_file"
  cat "$out/ca.crt" ${also_trust:+"$also_trust"} >"$work/trusted.crt"
  {
    echo "# Written by certs/dev-certs.sh: the serving certificate of cudagate.$namespace.svc."
    echo "apiVersion: v1"
    echo "kind: Secret"
    echo "metadata:"
    echo "  name: $service-tls"
    echo "  namespace: $namespace"
    echo "  labels:"
    echo "    app.kubernetes.io/name: cudagate"
    echo "type: kubernetes.io/tls"
    echo "data:"
    echo "  tls.crt: $(base64 -w0 "$out/server.crt")"
    echo "  tls.key: $(base64 -w0 "$out/server.key")"
    echo "  ca.crt: $(base64 -w0 "$work/trusted.crt")"
  } >"$work/secret.yaml"
  {
    echo "# Written by certs/dev-certs.sh: the CA of $out/ca.crt${also_trust:+ and $also_trust} as every webhook's caBundle."
    for ((i = 0; i < count; i++)); do
      echo "- op: add"
      echo "  path: /webhooks/$i/clientConfig/caBundle"
      echo "  value: $(base64 -w0 "$work/trusted.crt")"
    done
  } >"$work/ca-bundle.yaml"
  chmod 600 "$work/secret.yaml"
  chmod 644 "$work/ca-bundle.yaml"
  mv -f "$work/secret.yaml" "$dir/secret.yaml"
  mv -f "$work/ca-bundle.yaml" "$dir/ca-bundle.yaml"
  log "wrote $dir/secret.yaml and $dir/ca-bundle.yaml ($count webhooks a configuration)"
}
[ -z "$overlay" ] || write_overlay "$overlay"

base64 -w0 "$out/ca.crt"
echo
