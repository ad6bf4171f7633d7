#!/usr/bin/env bash
# Checks cudagate's gpu-arch and cuda-driver rules against a real GPU.
#
# Builds one small kernel for several architecture lists (SASS for sm_80,
# sm_86, sm_90, sm_90a, sm_100, PTX only for compute_80, SASS for sm_80 with
# PTX for an older and for a newer architecture, the device's own, and
# TORCH_CUDA_ARCH_LIST spellings: numbers, +PTX, names, Tegra targets),
# runs each, and records whether it started or failed (e.g. "no kernel image
# is available for execution on the device"). For each build it asks
# `cudagate check` the same question with the facts read from nvidia-smi
# (driver, compute capability) and nvcc (CUDA version), and fails when the
# two disagree. Without a GPU or nvcc it exits 77, which ctest reports as
# skipped.
#
#   tests/gpu/run.sh PATH/TO/cudagate [OUTDIR]
set -uo pipefail

cudagate=${1:?usage: run.sh PATH/TO/cudagate [OUTDIR]}
out=${2:-$(mktemp -d)}
here=$(cd "$(dirname "$0")" && pwd)

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "gpu: no NVIDIA GPU here; skipped"
  exit 77
fi
nvcc=$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null || true)
if [ -z "$nvcc" ]; then
  echo "gpu: no nvcc here; skipped"
  exit 77
fi

mkdir -p "$out"
driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -n1 | tr -d ' ')
cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -n1 | tr -d ' ')
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n1)
cuda=$("$nvcc" --version | sed -n 's/.*release \([0-9]*\.[0-9]*\).*/\1/p')
own=${cc/./}
echo "gpu: $name, compute capability $cc, driver $driver, nvcc CUDA $cuda"

# The node as cudagate sees it: cudagate's own labels carry the facts read above.
cat >"$out/nodes.json" <<JSON
{"apiVersion": "v1", "kind": "NodeList", "items": [
 {"apiVersion": "v1", "kind": "Node",
  "metadata": {"name": "gpu-under-test", "labels": {
     "cudagate.io/driver-version": "$driver",
     "cudagate.io/compute-capability": "$cc"}},
  "status": {"allocatable": {"nvidia.com/gpu": "1"}}}]}
JSON

# Blackwell+Tegra is compute capability 10.1 up to CUDA 12 and 11.0 from CUDA 13 on.
if [ "${cuda%%.*}" -ge 13 ]; then thor=110; else thor=101; fi

# name | nvcc -gencode flags | the same build in CMake CUDA_ARCHITECTURES syntax
#      | or, where the fourth field is given, in TORCH_CUDA_ARCH_LIST syntax as
#        torch.utils.cpp_extension expands it (a name brings PTX for its newest member)
builds=(
  "sm_80|-gencode=arch=compute_80,code=sm_80|80-real"
  "sm_86|-gencode=arch=compute_86,code=sm_86|86-real"
  "sm_90|-gencode=arch=compute_90,code=sm_90|90-real"
  "sm_90a|-gencode=arch=compute_90a,code=sm_90a|90a-real"
  "compute_80|-gencode=arch=compute_80,code=compute_80|80-virtual"
  "sm_100|-gencode=arch=compute_100,code=sm_100|100-real"
  "sm_80+compute_90|-gencode=arch=compute_80,code=sm_80 -gencode=arch=compute_90,code=compute_90|80-real;90-virtual"
  "sm_80+compute_100|-gencode=arch=compute_80,code=sm_80 -gencode=arch=compute_100,code=compute_100|80-real;100-virtual"
  "own_sm_${own}|-gencode=arch=compute_${own},code=sm_${own}|${own}-real"
  "torch_8.6|-gencode=arch=compute_86,code=sm_86|-|8.6"
  "torch_9.0+PTX|-gencode=arch=compute_90,code=sm_90 -gencode=arch=compute_90,code=compute_90|-|9.0+PTX"
  "torch_Hopper|-gencode=arch=compute_90,code=sm_90 -gencode=arch=compute_90,code=compute_90|-|Hopper"
  "torch_8.7|-gencode=arch=compute_87,code=sm_87|-|8.7"
  "torch_Ampere+Tegra+PTX|-gencode=arch=compute_87,code=sm_87 -gencode=arch=compute_87,code=compute_87|-|Ampere+Tegra+PTX"
  "torch_Blackwell+Tegra|-gencode=arch=compute_${thor},code=sm_${thor}|-|Blackwell+Tegra"
)

report="$out/report.tsv"
printf 'build\tarchitectures\truntime\tcudagate\tagree\n' >"$report"
disagreements=0
for entry in "${builds[@]}"; do
  IFS='|' read -r label flags cmake_arch torch_list <<<"$entry"
  if [ -n "$torch_list" ]; then
    arch_env="{name: TORCH_CUDA_ARCH_LIST, value: \"$torch_list\"}"
    cmake_arch=$torch_list
  else
    arch_env="{name: CUDAARCHS, value: \"$cmake_arch\"}"
  fi
  bin="$out/kernel_$label"
  if ! "$nvcc" $flags -o "$bin" "$here/kernel.cu" >"$out/nvcc_$label.log" 2>&1; then
    printf '%s\t%s\tnot-built\t-\t-\n' "$label" "$cmake_arch" >>"$report"
    echo "gpu: $label: nvcc cannot build it (see $out/nvcc_$label.log)"
    continue
  fi
  run_output=$("$bin" 2>&1)
  if [ "$run_output" = ran ]; then runtime=runs; else runtime=fails; fi

  cat >"$out/pod_$label.yaml" <<YAML
apiVersion: v1
kind: Pod
metadata: {name: kernel-$label, namespace: default}
spec:
  containers:
  - name: kernel
    image: localhost/kernel:$label
    env:
    - {name: CUDA_VERSION, value: "$cuda"}
    - $arch_env
    resources: {limits: {nvidia.com/gpu: 1}}
YAML
  "$cudagate" check -f "$out/pod_$label.yaml" --nodes "$out/nodes.json" --output json \
    >"$out/check_$label.json" 2>"$out/check_$label.err"
  rc=$?
  case $rc in
    0) verdict=runs ;;
    1) verdict=fails ;;
    *) verdict="error($rc)" ;;
  esac
  agree=yes
  if [ "$verdict" != "$runtime" ]; then agree=no; disagreements=$((disagreements + 1)); fi
  printf '%s\t%s\t%s\t%s\t%s\n' "$label" "$cmake_arch" "$runtime ($run_output)" "$verdict" "$agree" >>"$report"
done

if command -v column >/dev/null 2>&1; then column -t -s $'\t' "$report"; else cat "$report"; fi
if [ "$disagreements" -ne 0 ]; then
  echo "gpu: $disagreements build(s) where cudagate and the device disagree"
  exit 1
fi
echo "gpu: cudagate agrees with the device on every build"
