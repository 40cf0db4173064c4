"""JAX: Keras on XLA; plain arrays fed to fit, the device from jax.devices()."""

from __future__ import annotations

import os
from typing import Any

from advisor.errors import InputError
from advisor.format.vocabulary import DeviceKind, DType
from advisor.measure import hardware
from advisor.measure.backends import Backend, DeviceInfo, matmul_gflops, quiet_stderr, select_keras_backend

GPU_PLATFORMS = ("gpu", "cuda", "rocm")


class KerasBackend(Backend):
    name = "jax"
    accelerator_words = ("GPU", "CUDA", "ROCM")

    def start(self, device: str, devices: int) -> None:
        select_keras_backend("jax")
        if device == DeviceKind.CPU:
            os.environ["JAX_PLATFORMS"] = "cpu"
        try:
            with quiet_stderr():
                import jax
        except ImportError:
            raise InputError("backend", "the jax package is not installed: pip install 'advisor[jax]'", "jax") from None
        self.jax = jax

    def resolve_device(self, requested: str, host: dict[str, Any], devices: int) -> DeviceInfo:
        jax = self.jax
        try:
            gpus = [d for d in jax.devices() if d.platform in GPU_PLATFORMS] if requested != DeviceKind.CPU else []
        except RuntimeError:
            gpus = []
        if requested == DeviceKind.GPU and not gpus:
            raise InputError(
                "device", "no GPU is visible to JAX (install a CUDA build, e.g. pip install 'jax[cuda12]')", "gpu"
            )
        if gpus:
            smi = hardware.nvidia_gpus()
            facts = {k: v for k, v in smi[0].items() if k != "name"} if smi else {}
            name = smi[0]["name"] if smi else getattr(gpus[0], "device_kind", "GPU")
            return DeviceInfo(DeviceKind.GPU.value, name, str(gpus[0]), facts)
        return DeviceInfo(DeviceKind.CPU.value, host.get("cpu", "CPU"), "cpu", {})

    def software_facts(self, device: DeviceInfo) -> dict[str, Any]:
        import keras

        return {
            "framework": "jax",
            "framework_version": self.jax.__version__,
            "keras_version": keras.__version__,
            "keras_backend": keras.backend.backend(),
        }

    def matmul_peak_gflops(self, dtype: str, size: int, device: DeviceInfo) -> float:
        jax = self.jax
        a = jax.random.normal(jax.random.key(1), (size, size), dtype=DType.FLOAT32.value).astype(dtype)
        b = jax.random.normal(jax.random.key(2), (size, size), dtype=DType.FLOAT32.value).astype(dtype)
        matmul = jax.jit(jax.numpy.matmul)
        return matmul_gflops(lambda: matmul(a, b), lambda product: product.block_until_ready(), size)

    def version(self) -> str:
        return self.jax.__version__
