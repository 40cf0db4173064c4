"""PyTorch: Keras on torch; plain arrays fed to fit, the device from torch.cuda."""

from __future__ import annotations

import contextlib
import os
from typing import Any

from advisor.errors import InputError
from advisor.format.vocabulary import DeviceKind
from advisor.measure import hardware
from advisor.measure.backends import Backend, DeviceInfo, matmul_gflops, quiet_stderr, select_keras_backend


class KerasBackend(Backend):
    name = "torch"
    accelerator_words = ("CUDA", "GPU")

    def start(self, device: str, devices: int) -> None:
        select_keras_backend("torch")
        if device == DeviceKind.CPU:
            os.environ["CUDA_VISIBLE_DEVICES"] = "-1"
        try:
            with quiet_stderr():
                import torch
        except ImportError:
            raise InputError(
                "backend", "the torch package is not installed: pip install 'advisor[torch]'", "torch"
            ) from None
        self.torch = torch

    def resolve_device(self, requested: str, host: dict[str, Any], devices: int) -> DeviceInfo:
        torch = self.torch
        has_gpu = requested != DeviceKind.CPU and torch.cuda.is_available()
        if requested == DeviceKind.GPU and not has_gpu:
            raise InputError("device", "no GPU is visible to PyTorch (a CUDA build and driver are needed)", "gpu")
        if has_gpu:
            found = hardware.torch_gpu_facts(torch, torch.device("cuda", 0)) or {}
            facts: dict[str, Any] = {k: v for k, v in found.items() if k not in ("kind", "name", "count")}
            smi = hardware.nvidia_gpus() if found.get("platform") == "cuda" else []
            if smi:
                facts.update({k: v for k, v in smi[0].items() if k != "name"})
            return DeviceInfo(DeviceKind.GPU.value, found.get("name") or "GPU", "cuda:0", facts)
        return DeviceInfo(DeviceKind.CPU.value, host.get("cpu", "CPU"), "cpu", {})

    def software_facts(self, device: DeviceInfo) -> dict[str, Any]:
        import keras

        torch = self.torch
        facts: dict[str, Any] = {
            "framework": "torch",
            "framework_version": str(torch.__version__),
            "keras_version": keras.__version__,
            "keras_backend": keras.backend.backend(),
        }
        if device.kind == DeviceKind.GPU:
            with contextlib.suppress(Exception):
                if torch.version.cuda:
                    facts["cuda"] = str(torch.version.cuda)
                if torch.backends.cudnn.version():
                    facts["cudnn"] = str(torch.backends.cudnn.version())
                if getattr(torch.version, "hip", None):
                    facts["hip"] = str(torch.version.hip)
        return facts

    def matmul_peak_gflops(self, dtype: str, size: int, device: DeviceInfo) -> float:
        torch = self.torch
        where = torch.device(device.framework_device)
        kind = getattr(torch, dtype)
        generator = torch.Generator(device=where).manual_seed(1)
        a = torch.randn(size, size, generator=generator, device=where).to(kind)
        b = torch.randn(size, size, generator=generator, device=where).to(kind)

        def wait(_product) -> None:
            if where.type == "cuda":
                torch.cuda.synchronize()

        with torch.no_grad():
            return matmul_gflops(lambda: torch.matmul(a, b), wait, size)

    def is_out_of_memory(self, error: BaseException) -> bool:
        oom = getattr(self.torch.cuda, "OutOfMemoryError", ())
        return (bool(oom) and isinstance(error, oom)) or super().is_out_of_memory(error)

    def version(self) -> str:
        return str(self.torch.__version__)
