#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Checks a module written by finecast-export with Debian's torch: runs the Python example of
docs/export.md on it as written, then compares forward() and denoise() with the trainer's own
output for the same inputs and noise (a reference module written by tests/trainer/test_export.cpp).
Usage: export_check.py MODULE.pt REFERENCE.pt docs/export.md"""
import re
import sys

import torch

module_path, reference_path, doc_path = sys.argv[1:4]

# The example of docs/export.md, as written there (it reads `path`).
with open(doc_path, encoding="utf-8") as f:
    example = re.search(r"```python\n(.*?)```", f.read(), re.S).group(1)
scope = {"path": module_path}
exec(compile(example, doc_path, "exec"), scope)  # pylint: disable=exec-used
downscaler = scope["downscaler"]

for method in ("forward", "denoise", "normalise_context"):
    assert hasattr(downscaler, method), f"{module_path}: no method {method}"

ref = torch.jit.load(reference_path)
with torch.no_grad():
    fine = downscaler(ref.context, ref.noise, weights=ref.weights)
    sample_diff = (fine - ref.expected).abs().max().item()
    out = downscaler.denoise(ref.x_t, ref.t, downscaler.normalise_context(ref.context))
    denoise_diff = (out - ref.expected_denoise).abs().max().item()
print(f"torch {torch.__version__}: forward differs from finecast's sampler by {sample_diff:.2e}, "
      f"denoise from its network by {denoise_diff:.2e}")
if sample_diff > 1e-5 or denoise_diff > 1e-5:
    sys.exit(f"{module_path}: differs from finecast by more than 1e-5")
