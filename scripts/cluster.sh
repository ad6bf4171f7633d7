#!/usr/bin/env bash
# A Kubernetes control plane on loopback for the cluster tests: etcd,
# kube-apiserver, kube-scheduler and kube-controller-manager as
# scripts/cluster-build.sh built them. There is no kubelet; nodes are Node
# objects the tests create.
#
#   scripts/cluster.sh up     start what is not running, wait until each part is
#                             ready, write build/cluster/kubeconfig (admin)
#   scripts/cluster.sh down   stop each part by its PID, nothing left running, and
#                             drop etcd's data: the next `up` starts an empty cluster
#   scripts/cluster.sh env    print `export KUBECONFIG=...` for a shell
#   scripts/cluster.sh serviceaccount-kubeconfig NAMESPACE NAME [DURATION]
#                             print a kubeconfig that authenticates as that
#                             ServiceAccount with a token the API server issues
#                             (kubectl create token; DURATION default 24h)
#
# CLUSTER_DIR (default build/cluster) holds the run's state (run/: PIDs, logs,
# certificates, etcd's data, the audit log) and the admin kubeconfig;
# CLUSTER_ETCD_PORT (23790, and the next for peers) and CLUSTER_APISERVER_PORT
# (26443, and the next two for the scheduler and the controller manager) place
# it, so that several clusters can run side by side.
#
# The API server authenticates client certificates and ServiceAccount
# tokens, authorizes with RBAC, calls admission webhooks, serves
# resource.k8s.io/v1, and writes an audit log (build/cluster/run/audit.log).
# The controller manager runs without the node lifecycle controllers, which
# would evict the pods of nodes that no kubelet keeps ready.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin="$repo/build/cluster/bin"
state=${CLUSTER_DIR:-$repo/build/cluster}
run="$state/run"
pki="$run/pki"
kubeconfig="$state/kubeconfig"
etcd_client_port=${CLUSTER_ETCD_PORT:-23790}
etcd_peer_port=$((etcd_client_port + 1))
apiserver_port=${CLUSTER_APISERVER_PORT:-26443}
scheduler_port=$((apiserver_port + 1))
controller_port=$((apiserver_port + 2))

running() {
  local pid_file="$run/$1.pid"
  [ -f "$pid_file" ] && kill -0 "$(cat "$pid_file")" 2>/dev/null
}

# Waits until `command` succeeds, for at most `seconds`; fails naming `what`
# and the tail of its log.
wait_for() {
  local what=$1 seconds=$2
  shift 2
  local deadline=$((SECONDS + seconds))
  until "$@" >/dev/null 2>&1; do
    if ! running "$what"; then
      echo "cluster: $what exited:" >&2
      tail -n 20 "$run/$what.log" >&2
      return 1
    fi
    if [ $SECONDS -ge $deadline ]; then
      echo "cluster: $what not ready after ${seconds}s:" >&2
      tail -n 20 "$run/$what.log" >&2
      return 1
    fi
    sleep 0.2
  done
}

start() {
  local name=$1
  shift
  if running "$name"; then return; fi
  "$@" >"$run/$name.log" 2>&1 &
  echo $! >"$run/$name.pid"
}

# A certificate signed by the cluster CA: name, subject, extensions.
certificate() {
  local name=$1 subject=$2 extensions=$3
  [ -f "$pki/$name.crt" ] && return
  openssl req -new -newkey rsa:2048 -nodes -keyout "$pki/$name.key" -subj "$subject" \
    -out "$pki/$name.csr" 2>/dev/null
  openssl x509 -req -in "$pki/$name.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" \
    -CAcreateserial -days 30 -extfile <(printf '%s\n' "$extensions") \
    -out "$pki/$name.crt" 2>/dev/null
}

make_pki() {
  mkdir -p "$pki"
  if [ ! -f "$pki/ca.crt" ]; then
    openssl req -x509 -newkey rsa:2048 -nodes -keyout "$pki/ca.key" -out "$pki/ca.crt" \
      -days 30 -subj "/CN=cudagate-cluster-ca" 2>/dev/null
  fi
  certificate apiserver "/CN=kube-apiserver" \
    "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes.default.svc,IP:10.96.0.1
extendedKeyUsage=serverAuth"
  certificate admin "/O=system:masters/CN=cudagate-admin" "extendedKeyUsage=clientAuth"
  certificate scheduler "/CN=system:kube-scheduler" "extendedKeyUsage=clientAuth"
  certificate controller-manager "/CN=system:kube-controller-manager" \
    "extendedKeyUsage=clientAuth"
  [ -f "$pki/service-account.key" ] ||
    openssl genrsa -out "$pki/service-account.key" 2048 2>/dev/null
}

# A kubeconfig on stdout for `user`, whose credentials are the YAML lines
# `credentials` (indented under `user:`).
kubeconfig_of() {
  local user=$1 credentials=$2
  cat <<EOF
apiVersion: v1
kind: Config
clusters:
- name: cudagate-cluster
  cluster:
    server: https://127.0.0.1:$apiserver_port
    certificate-authority: $pki/ca.crt
users:
- name: $user
  user:
$credentials
contexts:
- name: cudagate-cluster
  context:
    cluster: cudagate-cluster
    user: $user
current-context: cudagate-cluster
EOF
}

# A kubeconfig for `user`'s client certificate.
write_kubeconfig() {
  local path=$1 user=$2
  kubeconfig_of "$user" "    client-certificate: $pki/$user.crt
    client-key: $pki/$user.key" >"$path"
}

ready() {
  curl -sf --cacert "$pki/ca.crt" --cert "$pki/admin.crt" --key "$pki/admin.key" \
    "https://127.0.0.1:$1/$2" | grep -qx ok
}

up() {
  for part in etcd kube-apiserver kube-scheduler kube-controller-manager; do
    [ -x "$bin/$part" ] || {
      echo "cluster: $bin/$part is missing: run scripts/cluster-build.sh" >&2
      exit 1
    }
  done
  mkdir -p "$run"
  make_pki
  cat >"$run/audit-policy.yaml" <<EOF
apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: Metadata
EOF

  start etcd "$bin/etcd" --name cluster --data-dir "$run/etcd" \
    --listen-client-urls "http://127.0.0.1:$etcd_client_port" \
    --advertise-client-urls "http://127.0.0.1:$etcd_client_port" \
    --listen-peer-urls "http://127.0.0.1:$etcd_peer_port" \
    --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer_port" \
    --initial-cluster "cluster=http://127.0.0.1:$etcd_peer_port"
  wait_for etcd 60 curl -sf "http://127.0.0.1:$etcd_client_port/health"

  start kube-apiserver "$bin/kube-apiserver" \
    --bind-address 127.0.0.1 --secure-port "$apiserver_port" \
    --etcd-servers "http://127.0.0.1:$etcd_client_port" \
    --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
    --client-ca-file "$pki/ca.crt" \
    --service-account-issuer https://kubernetes.default.svc \
    --service-account-key-file "$pki/service-account.key" \
    --service-account-signing-key-file "$pki/service-account.key" \
    --api-audiences https://kubernetes.default.svc \
    --authorization-mode Node,RBAC \
    --runtime-config resource.k8s.io/v1=true \
    --service-cluster-ip-range 10.96.0.0/16 \
    --audit-policy-file "$run/audit-policy.yaml" --audit-log-path "$run/audit.log" \
    --allow-privileged
  wait_for kube-apiserver 120 ready "$apiserver_port" readyz

  write_kubeconfig "$kubeconfig" admin
  write_kubeconfig "$run/scheduler.kubeconfig" scheduler
  write_kubeconfig "$run/controller-manager.kubeconfig" controller-manager

  start kube-scheduler "$bin/kube-scheduler" \
    --kubeconfig "$run/scheduler.kubeconfig" \
    --authentication-kubeconfig "$run/scheduler.kubeconfig" \
    --authorization-kubeconfig "$run/scheduler.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port "$scheduler_port"
  start kube-controller-manager "$bin/kube-controller-manager" \
    --kubeconfig "$run/controller-manager.kubeconfig" \
    --authentication-kubeconfig "$run/controller-manager.kubeconfig" \
    --authorization-kubeconfig "$run/controller-manager.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port "$controller_port" \
    --service-account-private-key-file "$pki/service-account.key" \
    --root-ca-file "$pki/ca.crt" --use-service-account-credentials \
    --controllers '*,-node-lifecycle-controller,-node-ipam-controller,-taint-eviction-controller'
  wait_for kube-scheduler 60 curl -skf "https://127.0.0.1:$scheduler_port/healthz"
  wait_for kube-controller-manager 60 curl -skf "https://127.0.0.1:$controller_port/healthz"
  # Pods can be created once the controllers have given the default
  # namespace its ServiceAccount.
  wait_for kube-controller-manager 60 \
    "$bin/kubectl" --kubeconfig "$kubeconfig" -n default get serviceaccount default
  echo "cluster: up; KUBECONFIG=$kubeconfig"
}

down() {
  for part in kube-controller-manager kube-scheduler kube-apiserver etcd; do
    local pid_file="$run/$part.pid"
    [ -f "$pid_file" ] || continue
    local pid
    pid=$(cat "$pid_file")
    if kill -0 "$pid" 2>/dev/null; then
      kill "$pid"
      for _ in $(seq 1 100); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
      done
      kill -9 "$pid" 2>/dev/null || true
    fi
    rm -f "$pid_file"
  done
  rm -rf "$run/etcd" "$run/audit.log"
  echo "cluster: down"
}

# A kubeconfig for a ServiceAccount's bound token, as a pod of that
# ServiceAccount would present it.
serviceaccount_kubeconfig() {
  local namespace=${1:?namespace} name=${2:?name} duration=${3:-24h} token
  token=$("$bin/kubectl" --kubeconfig "$kubeconfig" -n "$namespace" create token "$name" \
    --duration "$duration")
  kubeconfig_of "$namespace-$name" "    token: $token"
}
case "${1:-}" in
  up) up ;;
  serviceaccount-kubeconfig)
    shift
    serviceaccount_kubeconfig "$@"
    ;;
  down) down ;;
  env) echo "export KUBECONFIG=$kubeconfig" ;;
  *)
    echo "usage: scripts/cluster.sh up | down | env | serviceaccount-kubeconfig NAMESPACE NAME [DURATION]" >&2
    exit 2
    ;;
esac
