"""Images with GPU code for the scan tests: libraries compiled here by
NVIDIA's nvcc (its PyPI wheels under build/cuda-tools, or the folder
CUDAGATE_CUDA_TOOLS names; scripts/install-deps.sh --cuda-tools installs
them), laid out in tar layers and OCI image layouts that skopeo pushes
(registry_support.push).
"""

import hashlib
import io
import json
import os
import subprocess
import tarfile
import unittest

import registry_support as rs

OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"

KERNEL = "__global__ void scale(float* x, float a) { x[threadIdx.x] *= a; }\n"


def cuda_tools(source):
    return os.environ.get("CUDAGATE_CUDA_TOOLS") or os.path.join(source, "build", "cuda-tools")


def nvcc(source):
    return os.path.join(cuda_tools(source), "nvidia", "cu13", "bin", "nvcc")


def need_nvcc(source):
    """Skips the calling test class where nvcc is not installed, and fails
    it under CI, where scripts/install-deps.sh --cuda-tools must have run."""
    if os.path.exists(nvcc(source)):
        return
    if os.environ.get("CI") == "true":
        raise AssertionError(f"nvcc not found under {cuda_tools(source)}")
    raise unittest.SkipTest(f"nvcc not found under {cuda_tools(source)}: "
                            "run scripts/install-deps.sh --cuda-tools")


def compile_library(source, directory, name, gencode):
    """A shared library of one kernel compiled for `gencode` (nvcc's
    -gencode arguments); its bytes."""
    cu = os.path.join(directory, name + ".cu")
    with open(cu, "w") as f:
        f.write(KERNEL)
    out = os.path.join(directory, name + ".so")
    run = subprocess.run([nvcc(source), "-ccbin", "g++", *gencode, "-shared", "-Xcompiler",
                          "-fPIC", cu, "-o", out], capture_output=True, text=True, timeout=300)
    if run.returncode != 0:
        raise AssertionError(f"nvcc failed: {run.stderr}")
    with open(out, "rb") as f:
        return f.read()


def tar_of(members):
    """A tar of (path, bytes) members."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path, content in members:
            info = tarfile.TarInfo(path)
            info.size = len(content)
            info.mtime = 0
            info.mode = 0o755
            tar.addfile(info, io.BytesIO(content))
    return raw.getvalue()


def zstd_compress(data):
    return subprocess.run(["zstd", "-q", "-c", "-3"], input=data, capture_output=True,
                          check=True, timeout=60).stdout


def blob(layout, data):
    """`data` stored in the OCI layout `layout`: its descriptor's digest and size."""
    digest, size = rs.stored_blob(layout, data)
    return {"digest": digest, "size": size}


def image_manifest(layout, architecture, layers, env=("CUDA_VERSION=12.4.1",)):
    """An image manifest of `layers` ((media type suffix, tar bytes, stored
    bytes)) for linux/`architecture` with config Env `env`; its
    descriptor."""
    config = {"architecture": architecture, "os": "linux",
              "rootfs": {"type": "layers",
                         "diff_ids": ["sha256:" + hashlib.sha256(t).hexdigest()
                                      for _, t, _ in layers]},
              "config": {"Env": list(env)}}
    manifest = {
        "schemaVersion": 2, "mediaType": OCI_MANIFEST,
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                   **blob(layout, json.dumps(config).encode())},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1." + kind,
                    **blob(layout, stored)} for kind, _, stored in layers],
    }
    descriptor = {"mediaType": OCI_MANIFEST, **blob(layout, json.dumps(manifest).encode())}
    descriptor["platform"] = {"architecture": architecture, "os": "linux"}
    return descriptor


def write_layout(layout, tag, manifests):
    """An OCI layout whose index.json names an index of `manifests` as `tag`."""
    os.makedirs(layout, exist_ok=True)
    with open(os.path.join(layout, "oci-layout"), "w") as f:
        json.dump({"imageLayoutVersion": "1.0.0"}, f)
    index = {"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": manifests}
    top = {"mediaType": OCI_INDEX, **blob(layout, json.dumps(index).encode()),
           "annotations": {"org.opencontainers.image.ref.name": tag}}
    with open(os.path.join(layout, "index.json"), "w") as f:
        json.dump({"schemaVersion": 2, "manifests": [top]}, f)


SITE = "usr/local/lib/python3.12/site-packages"


def pip_torch_members(source, directory, torch_gencode, extension_gencode):
    """The files of a `pip install torch` image, as the wheels lay them out:
    torch/version.py, torch/lib/libtorch_cuda.so compiled for
    `torch_gencode`, NVIDIA's runtime wheel (its dist-info folder names the
    release), and flash-attn's extension compiled for `extension_gencode`.
    No variable of the image says any of it."""
    torch = compile_library(source, directory, "libtorch_cuda", torch_gencode)
    extension = compile_library(source, directory, "flash_attn_2_cuda", extension_gencode)
    return [
        (f"{SITE}/torch/version.py",
         b"__version__ = '2.7.0+cu128'\ndebug = False\ncuda = '12.8'\nhip = None\n"),
        (f"{SITE}/torch/lib/libtorch_cuda.so", torch),
        (f"{SITE}/nvidia/cuda_runtime/lib/libcudart.so.12", b"runtime"),
        (f"{SITE}/nvidia_cuda_runtime_cu12-12.8.90.dist-info/METADATA",
         b"Name: nvidia-cuda-runtime-cu12\nVersion: 12.8.90\n"),
        (f"{SITE}/flash_attn_2_cuda.cpython-312-x86_64-linux-gnu.so", extension),
    ]
