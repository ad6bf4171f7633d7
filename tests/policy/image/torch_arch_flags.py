#!/usr/bin/env python3
"""Runs PyTorch's own TORCH_CUDA_ARCH_LIST parser on a list of arch lists.

    torch_arch_flags.py INPUT.json OUTPUT.json

INPUT is a JSON array of TORCH_CUDA_ARCH_LIST values. For each one this sets
the variable and calls torch.utils.cpp_extension._get_cuda_arch_flags(), the
function that builds extensions, and records the -gencode flags it returns
or the error it raises. OUTPUT is a JSON object:

    {"torch": "1.13.0", "cuda": null,
     "named": ["Kepler+Tesla", ...],      # the names the function replaces
     "supported": ["3.5", "3.7", ...],    # the entries it accepts (without +PTX)
     "results": [{"flags": [...]} | {"error": "..."}, ...]}

"named" and "supported" are read from the function's source, so that a
caller can tell a list this PyTorch does not know (a newer name or target)
from one it refuses. Exits 77 when torch cannot be imported.
"""
import ast
import inspect
import json
import logging
import os
import sys
import textwrap


def literal_assignments(function):
    """The literal lists the function assigns to named_arches and supported_arches."""
    named, supported = [], []
    tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    for node in ast.walk(tree):
        if not isinstance(node, ast.Assign) or len(node.targets) != 1:
            continue
        target = node.targets[0]
        if not isinstance(target, ast.Name):
            continue
        if target.id == "named_arches" and isinstance(node.value, ast.Call) and node.value.args:
            named = [name for name, _ in ast.literal_eval(node.value.args[0])]
        elif target.id == "supported_arches":
            supported = list(ast.literal_eval(node.value))
    return named, supported


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        logging.disable(logging.WARNING)  # "No CUDA runtime is found" on import
        import torch
        from torch.utils import cpp_extension
    except Exception as error:  # any import failure means: no usable torch here
        print(f"torch is not importable: {error}", file=sys.stderr)
        return 77
    with open(sys.argv[1], encoding="utf-8") as f:
        lists = json.load(f)
    named, supported = literal_assignments(cpp_extension._get_cuda_arch_flags)
    results = []
    for value in lists:
        os.environ["TORCH_CUDA_ARCH_LIST"] = value
        try:
            results.append({"flags": sorted(cpp_extension._get_cuda_arch_flags())})
        except Exception as error:  # ValueError for unknown arches, IndexError with no GPU
            results.append({"error": f"{type(error).__name__}: {error}"})
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        json.dump({"torch": torch.__version__, "cuda": torch.version.cuda, "named": named,
                   "supported": supported, "results": results}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
