"""The peak memory a training run used, read where the device reports it (best effort, never fatal).

- a GPU: the framework's own counter, reset before the run: TensorFlow ``get_memory_info(...)["peak"]``, JAX
  ``memory_stats()["peak_bytes_in_use"]``, PyTorch ``torch.cuda.max_memory_allocated`` (``torch.xpu``'s on an Intel
  GPU, ``torch.hpu``'s on a Gaudi);
- a CPU: the process's peak resident memory (Linux ``VmHWM``, reset through ``/proc/self/clear_refs``) above its
  resident memory when the run started.

The framework is the backend's, already imported by the run; this module imports nothing heavy itself.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from advisor.format.vocabulary import DeviceKind
from advisor.measure.hardware import INTEL_DEVICES

# PyTorch's devices whose allocator keeps peak counters (``torch.<kind>.max_memory_allocated``): CUDA (and ROCm's
# HIP, which PyTorch calls cuda) and Intel's xpu and hpu
COUNTED_DEVICES = ("cuda", *INTEL_DEVICES)

GB = 1e9


def _status_kb(field: str) -> float | None:
    """A field of /proc/self/status in kB (VmRSS, VmHWM), or None where there is no /proc."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return float(line.split()[1])
    return None


class PeakMemory:
    """``with PeakMemory(backend, device) as peak: ...``; then ``peak.reading()``: {peak_gb, method} or None."""

    def __init__(self, backend_name: str, device_kind: str, framework_device: str) -> None:
        self.backend, self.kind, self.device = backend_name, device_kind, framework_device
        self.start_kb: float | None = None
        self.result: dict[str, Any] | None = None

    def __enter__(self) -> PeakMemory:
        with contextlib.suppress(Exception):  # a counter that cannot be reset is read as it is (its peak is higher)
            self._reset()
        self.start_kb = _status_kb("VmRSS")
        return self

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(Exception):
            self.result = self._read()

    def reading(self) -> dict[str, Any] | None:
        return self.result

    def _reset(self) -> None:
        if self.kind == DeviceKind.CPU:
            Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to the current resident memory
        elif self.backend == "tensorflow":
            import tensorflow as tf

            tf.config.experimental.reset_memory_stats(self._tf_device())
        elif self.backend == "torch":
            self._torch_device_module().reset_peak_memory_stats()

    def _read(self) -> dict[str, Any] | None:
        if self.kind == DeviceKind.CPU:
            peak, start = _status_kb("VmHWM"), self.start_kb
            if peak is None or start is None:
                return None
            return {
                "peak_gb": round(max(peak - start, 0.0) * 1024 / GB, 4),
                "method": "peak resident memory above the run's start (Linux VmHWM - VmRSS)",
            }
        if self.backend == "tensorflow":
            import tensorflow as tf

            peak = tf.config.experimental.get_memory_info(self._tf_device())["peak"]
            method = "tf.config.experimental.get_memory_info peak"
        elif self.backend == "jax":
            import jax

            peak = jax.devices()[0].memory_stats()["peak_bytes_in_use"]
            method = "jax memory_stats peak_bytes_in_use (not reset between runs)"
        elif self.backend == "torch":
            module = self._torch_device_module()
            peak = module.max_memory_allocated()
            method = f"{module.__name__}.max_memory_allocated"
        else:
            return None
        return {"peak_gb": round(float(peak) / GB, 4), "method": method}

    def _torch_device_module(self) -> Any:
        """PyTorch's module of the run's device (:func:`torch_counters`), ``torch.cuda`` where it names none."""
        import torch

        return torch_counters(torch, self.device) or torch.cuda

    def _tf_device(self) -> str:
        return self.device.lstrip("/").replace("device:", "") or "GPU:0"


def torch_counters(torch: Any, device: str) -> Any:
    """PyTorch's module holding the allocator's counters of ``device`` ("cuda:0", "xpu:0", "hpu:0"): ``torch.cuda``,
    ``torch.xpu`` or ``torch.hpu``; None for a device without them (the CPU, Apple's mps)."""
    kind = device.split(":")[0]
    return getattr(torch, kind, None) if kind in COUNTED_DEVICES else None
