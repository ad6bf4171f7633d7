#!/usr/bin/env bash
# Builds cudagate and runs the webhook on loopback: HTTPS on 127.0.0.1:8443
# with a fresh development certificate (certs/dev-certs.sh), the embedded
# compatibility matrix, examples/policy.yaml and the example inventory
# examples/nodes.yaml. Ctrl-C stops it.
#
#   scripts/run.sh [extra `cudagate serve` flags]
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc)" --target cudagate

certs=build/dev-certs
certs/dev-certs.sh --out "$certs" >/dev/null
listen=${CUDAGATE_LISTEN:-127.0.0.1:8443}

cat <<MSG
cudagate: serving https://${listen} (Ctrl-C to stop). Try, from another terminal:

  curl --cacert $certs/ca.crt -H 'Content-Type: application/json' \\
       --data @examples/reviews/cuda-12.4-pod.json https://${listen}/validate

MSG
exec build/release/cudagate serve --listen "$listen" \
  --tls-cert "$certs/server.crt" --tls-key "$certs/server.key" \
  --config examples/policy.yaml --nodes examples/nodes.yaml "$@"
