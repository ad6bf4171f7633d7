#!/usr/bin/env python3
"""Checks the matrix's torchBuilds against the PyTorch installed here.

The pytorch/pytorch images install PyTorch's own release wheels, so the
wheel installed on a GPU machine is a sample of what such an image carries.
This script reads that wheel's version, CUDA variant and compiled
architectures (torch.cuda.get_arch_list(), which lists the SASS targets as
sm_XY and a PTX target as compute_XY), asks `cudagate check` about the image
pytorch/pytorch:<version>-cuda<X.Y>-cudnn9-runtime on a node with this
machine's driver and compute capability, and fails when cudagate infers
another CUDA version or architecture list, or when its verdict differs from
whether a tensor operation ran on the device.

  tests/gpu/torch_build.py PATH/TO/cudagate [OUTDIR]

Exits 77 (skipped) without an NVIDIA GPU or without PyTorch built for CUDA.
"""

import json
import os
import re
import subprocess
import sys
import tempfile

SKIPPED = 77


def arch_list_of(torch_archs):
    """TORCH_CUDA_ARCH_LIST spelling of get_arch_list()'s entries.

    sm_90a -> 9.0a; compute_120 marks 12.0 as +PTX (cpp_extension's spelling).
    """
    sass, ptx = [], set()
    for entry in torch_archs:
        m = re.fullmatch(r"(sm|compute)_(\d+)(\d)([a-z]?)", entry)
        if not m:
            raise ValueError(f"get_arch_list() entry {entry!r} is not sm_XY or compute_XY")
        kind, major, minor, suffix = m.groups()
        name = f"{major}.{minor}{suffix}"
        if kind == "sm":
            sass.append(name)
        else:
            ptx.add(name)
    out = [f"{a}+PTX" if a in ptx else a for a in sass]
    out += [f"{a}+PTX" for a in sorted(ptx) if a not in sass]
    return ";".join(out)


def main():
    if len(sys.argv) < 2:
        print("usage: torch_build.py PATH/TO/cudagate [OUTDIR]", file=sys.stderr)
        return 2
    cudagate = sys.argv[1]
    out = sys.argv[2] if len(sys.argv) > 2 else tempfile.mkdtemp()
    os.makedirs(out, exist_ok=True)
    try:
        smi = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version,compute_cap", "--format=csv,noheader"],
            capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        print("torch: no NVIDIA GPU here; skipped")
        return SKIPPED
    driver, cc = [f.strip() for f in smi.stdout.splitlines()[0].split(",")]
    try:
        import torch  # pylint: disable=import-outside-toplevel
    except ImportError:
        print("torch: no PyTorch here; skipped")
        return SKIPPED
    if not torch.version.cuda or not torch.cuda.is_available():
        print(f"torch: PyTorch {torch.__version__} has no CUDA device here; skipped")
        return SKIPPED

    version = torch.__version__.split("+")[0]
    cuda = ".".join(torch.version.cuda.split(".")[:2])
    archs = arch_list_of(torch.cuda.get_arch_list())
    try:
        ran = (torch.ones(4, device="cuda") * 2).sum().item() == 8.0
        runtime = "runs" if ran else "fails"
        runtime_detail = "ran"
    except RuntimeError as err:
        runtime, runtime_detail = "fails", str(err).splitlines()[0]

    image = f"pytorch/pytorch:{version}-cuda{cuda}-cudnn9-runtime"
    print(f"torch: {torch.__version__} (CUDA {torch.version.cuda}), get_arch_list {archs}; "
          f"device: driver {driver}, compute capability {cc}, {runtime_detail}")

    nodes = {"apiVersion": "v1", "kind": "NodeList", "items": [{
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": "gpu-under-test", "labels": {
            "cudagate.io/driver-version": driver,
            "cudagate.io/compute-capability": cc}},
        "status": {"allocatable": {"nvidia.com/gpu": "1"}}}]}
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "torch", "namespace": "default"},
           "spec": {"containers": [{"name": "torch", "image": image,
                                    "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}
    nodes_path, pod_path = os.path.join(out, "torch_nodes.json"), os.path.join(out, "torch_pod.json")
    with open(nodes_path, "w", encoding="utf-8") as f:
        json.dump(nodes, f)
    with open(pod_path, "w", encoding="utf-8") as f:
        json.dump(pod, f)
    check = subprocess.run([cudagate, "check", "-f", pod_path, "--nodes", nodes_path,
                            "--output", "json"], capture_output=True, text=True, check=False)
    with open(os.path.join(out, "torch_check.json"), "w", encoding="utf-8") as f:
        f.write(check.stdout + check.stderr)
    if check.returncode not in (0, 1):
        print(f"torch: cudagate check failed ({check.returncode}): {check.stderr.strip()}")
        return 1
    container = json.loads(check.stdout)["containers"][0]
    verdict = "runs" if check.returncode == 0 else "fails"

    failures = []
    if container["cuda"]["value"] != cuda:
        failures.append(f"CUDA: wheel {cuda}, cudagate {container['cuda']['value']}")
    if container["archs"]["value"] != archs:
        failures.append(f"arch list: wheel {archs}, cudagate {container['archs']['value']}")
    if verdict != runtime:
        failures.append(f"verdict: device {runtime}, cudagate {verdict}")
    print(f"torch: cudagate on {image}: CUDA {container['cuda']['value']} "
          f"({container['cuda']['source']}), archs {container['archs']['value']} "
          f"({container['archs']['source']}), {verdict}")
    for failure in failures:
        print(f"torch: disagreement: {failure}")
    if failures:
        return 1
    print("torch: cudagate's torchBuilds agree with the installed wheel")
    return 0


if __name__ == "__main__":
    sys.exit(main())
