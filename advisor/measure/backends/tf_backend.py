"""TensorFlow: device placement, a tf.data pipeline, MirroredStrategy for several devices."""

from __future__ import annotations

import contextlib
import os
from typing import Any

from advisor.errors import AdvisorError, InputError
from advisor.format.vocabulary import DeviceKind, DType
from advisor.measure import hardware
from advisor.measure.backends import Backend, DeviceInfo, matmul_gflops, quiet_stderr, select_keras_backend


def batches(tf, x, y, batch_size: int, seed: int):
    """The training data as a tf.data pipeline: cached, shuffled each epoch, batched, repeated, prefetched."""
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).cache()
    dataset = dataset.shuffle(len(x), seed=seed, reshuffle_each_iteration=True)
    return dataset.batch(batch_size).repeat().prefetch(tf.data.AUTOTUNE)


class KerasBackend(Backend):
    name = "tensorflow"

    def start(self, device: str, devices: int) -> None:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        select_keras_backend("tensorflow")
        if device == DeviceKind.CPU:
            os.environ["CUDA_VISIBLE_DEVICES"] = "-1"
        try:
            with quiet_stderr():  # TensorFlow's C++ start-up lines ignore TF_CPP_MIN_LOG_LEVEL
                import tensorflow as tf
        except ImportError:
            raise AdvisorError(
                "advisor measure needs TensorFlow: pip install 'advisor[measure]' (or pip install tensorflow)"
            ) from None
        with contextlib.suppress(Exception):
            import absl.logging

            absl.logging.set_verbosity(absl.logging.ERROR)
        tf.get_logger().setLevel("ERROR")
        if device == DeviceKind.CPU:
            with contextlib.suppress(Exception):
                tf.config.set_visible_devices([], "GPU")
        self.tf = tf
        with quiet_stderr():  # the first device query logs CUDA's start-up (cuInit) on machines without a GPU
            gpus = tf.config.list_physical_devices("GPU") if device != DeviceKind.CPU else []
        self.gpus = gpus
        if devices > 1 and not gpus:
            # No GPUs: split the CPU into logical devices (how several devices are tested without a GPU).
            cpus = tf.config.list_physical_devices("CPU")
            with contextlib.suppress(RuntimeError):
                tf.config.set_logical_device_configuration(
                    cpus[0], [tf.config.LogicalDeviceConfiguration() for _ in range(devices)]
                )

    def resolve_device(self, requested: str, host: dict[str, Any], devices: int) -> DeviceInfo:
        tf = self.tf
        gpus = self.gpus
        if requested == DeviceKind.GPU and not gpus:
            raise InputError(
                "device",
                "no GPU is visible to TensorFlow (check the driver, CUDA_VISIBLE_DEVICES and that "
                "TensorFlow was installed with GPU support, e.g. pip install 'tensorflow[and-cuda]')",
                "gpu",
            )
        if gpus:
            if devices > len(gpus):
                raise InputError("devices", f"only {len(gpus)} GPU(s) are visible", str(devices))
            facts: dict[str, Any] = {}
            details = {}
            with contextlib.suppress(Exception):
                details = tf.config.experimental.get_device_details(gpus[0])
            smi = hardware.nvidia_gpus()
            if smi:
                facts.update({k: v for k, v in smi[0].items() if k != "name"})
            name = details.get("device_name") or (smi[0]["name"] if smi else None) or "GPU"
            capability = details.get("compute_capability")
            if capability and "compute_capability" not in facts:
                facts["compute_capability"] = ".".join(str(part) for part in capability)
            return DeviceInfo(DeviceKind.GPU.value, name, "/GPU:0", facts, count=devices)
        return DeviceInfo(DeviceKind.CPU.value, host.get("cpu", "CPU"), "/CPU:0", {}, count=devices)

    def software_facts(self, device: DeviceInfo) -> dict[str, Any]:
        import keras

        tf = self.tf
        facts: dict[str, Any] = {
            "framework": "tensorflow",
            "framework_version": tf.__version__,
            "keras_version": keras.__version__,
            "keras_backend": keras.backend.backend(),
        }
        if device.kind == DeviceKind.GPU:
            with contextlib.suppress(Exception):
                build = tf.sysconfig.get_build_info()
                if build.get("cuda_version"):
                    facts["cuda"] = str(build["cuda_version"])
                if build.get("cudnn_version"):
                    facts["cudnn"] = str(build["cudnn_version"])
        return facts

    def matmul_peak_gflops(self, dtype: str, size: int, device: DeviceInfo) -> float:
        """Best dense matmul throughput of ``size`` x ``size`` matrices in ``dtype`` (GFLOP/s) on one device."""
        import keras

        with self.tf.device(device.framework_device):
            a = keras.random.normal((size, size), dtype=DType.FLOAT32.value, seed=1)
            b = keras.random.normal((size, size), dtype=DType.FLOAT32.value, seed=2)
            a, b = keras.ops.cast(a, dtype), keras.ops.cast(b, dtype)
            return matmul_gflops(lambda: keras.ops.matmul(a, b), self.synchronize, size)

    def placement(self, device: DeviceInfo):
        if device.count > 1:
            return contextlib.nullcontext()  # the strategy places the replicas
        return self.tf.device(device.framework_device)

    def distribution(self, device: DeviceInfo):
        if device.count == 1:
            return contextlib.nullcontext()
        kind = "GPU" if device.kind == DeviceKind.GPU else "CPU"
        names = [d.name for d in self.tf.config.list_logical_devices(kind)][: device.count]
        if len(names) < device.count:
            raise InputError("devices", f"only {len(names)} {kind} device(s) could be made", str(device.count))
        self.strategy = self.tf.distribute.MirroredStrategy(devices=names)
        return self.strategy.scope()

    def fit_arguments(self, x, y, batch_size: int, steps_per_epoch: int, seed: int) -> dict[str, Any]:
        """A tf.data pipeline iterated once across all epochs (``repeat`` + ``steps_per_epoch``).

        Shuffled each epoch like ``fit(x, y)``; batches never straddle an epoch boundary. Re-creating
        an iterator at each epoch (a plain ``fit(x, y)``) costs 3 to 5 s at the start of many epochs on
        a 2-core CPU.
        """
        return {"x": batches(self.tf, x, y, batch_size, seed), "steps_per_epoch": steps_per_epoch, "shuffle": False}

    def is_out_of_memory(self, error: BaseException) -> bool:
        return isinstance(error, self.tf.errors.ResourceExhaustedError) or super().is_out_of_memory(error)

    def failure_types(self) -> tuple[type[BaseException], ...]:
        return (self.tf.errors.OpError, ValueError, TypeError)

    def version(self) -> str:
        return self.tf.__version__
