#!/usr/bin/env bash
# Installs everything cudagate needs to build and test on Debian 12.
# Idempotent: packages already present are left alone, so a second run is fast.
#
#   scripts/install-deps.sh           build and test
#   scripts/install-deps.sh --bench   also what the load comparison needs
#                                     (bench/compare.sh: wrk, nginx, Go for peer-go)
#   scripts/install-deps.sh --torch   also Debian's python3-torch, for the test that
#                                     compares cudagate's TORCH_CUDA_ARCH_LIST parse
#                                     with PyTorch's own (ArchListAgainstPyTorch); it
#                                     brings ~180 packages (~620 MB: Qt, OpenCV, GDAL).
#                                     scripts/test.sh (and so CI) asks for it; a build
#                                     without it reports that one test skipped
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config git
  g++ clang clang-format clang-tidy libclang-rt-14-dev
  libboost1.81-dev libboost-json1.81-dev libssl-dev openssl
  nlohmann-json3-dev libspdlog-dev libyaml-cpp-dev libcli11-dev libsimdjson-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  curl jq python3 python3-jsonpatch prometheus
  docker-registry skopeo sslscan
  chromium python3-jsonschema python3-yaml
)
for arg in "$@"; do
  case "$arg" in
    --bench) packages+=(golang-go wrk nginx-light util-linux) ;;
    --torch) packages+=(python3-torch) ;;
    *)
      echo "install-deps.sh: unknown option $arg (expected --bench or --torch)" >&2
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

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; fi
echo "installing: ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
