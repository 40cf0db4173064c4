"""Tracking a PyTorch model: the step clock on its device, one step's FLOPs and activations, its memory and facts.

:class:`TorchTracker` is what the three PyTorch adapters share (your own loop, Lightning, Hugging Face): it sees the
model's training forward passes through a forward pre-hook (their samples and tokens), synchronises the device at
each measurement point, counts the FLOPs of one real step with ``torch.utils.flop_counter.FlopCounterMode`` (by
kind and dtype) and the bytes autograd keeps for the backward pass (``saved_tensors_hooks``), and reads the peak
memory (``torch.cuda.max_memory_allocated``, ``torch.xpu``'s or ``torch.hpu``'s on an Intel device; a CPU: the
resident set above the start). :class:`Run` is the context manager of ``advisor.track.torch``.

torch is imported here only, by the adapters (the core never imports it: tests/test_imports.py).
"""

from __future__ import annotations

import contextlib
import math
import platform
import statistics
import sys
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from advisor.format.vocabulary import DeviceKind, DType, Precision
from advisor.measure import hardware
from advisor.measure.peak_memory import COUNTED_DEVICES, PeakMemory
from advisor.track.session import Counted, Options, RunFacts, Session, TrackError, device_kind, finish, say

# Modules whose work FlopCounterMode has no formula for (a fused recurrent kernel): named in not_counted.
UNCOUNTED_MODULES = ("LSTM", "GRU", "RNN")
PRECISION_OF_DTYPE = {precision.dtype.value: precision.value for precision in Precision}  # a matmul's dtype


_TORCH: Any = None


def _torch():
    """torch, imported when a run starts (never by the core), then kept: this is called on every step."""
    global _TORCH
    if _TORCH is None:
        try:
            import torch
        except ImportError:
            raise TrackError("advisor.track: PyTorch is not installed (pip install torch)") from None
        _TORCH = torch
    return _TORCH


def model_device(model) -> Any:
    """The one device the model's parameters are on; a clear line when they are on several or on none."""
    torch = _torch()
    devices = {p.device for p in model.parameters()}
    if not devices:
        raise TrackError("advisor.track: the model has no parameters: there is no training to track")
    if len(devices) > 1:
        names = ", ".join(sorted(str(d) for d in devices))
        raise TrackError(
            f"advisor.track: the model's parameters are on several devices ({names}): advisor.track "
            "times a model on one device (one process per GPU: track rank 0)"
        )
    device = next(iter(devices))
    if device.type == "meta":
        raise TrackError("advisor.track: the model's parameters are on the meta device (not materialised)")
    visible = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if device.type == "cuda" and (device.index or 0) >= visible:
        raise TrackError(f"advisor.track: the model is on {device}, which this process cannot see")
    return device


def synchronize(device) -> None:
    """Wait for the device's queued work (a GPU runs ahead of Python; a CPU does not)."""
    if device.type == "cpu":
        return
    torch = _torch()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()
    elif device.type == "xpu":
        torch.xpu.synchronize(device)
    elif device.type == "hpu":
        torch.hpu.synchronize()


def batch_shape(args: tuple, kwargs: dict) -> tuple[int, int | None] | None:
    """(samples, tokens) of a forward call's inputs: the leading size of its first tensor (``input_ids`` first);
    tokens where the inputs are integer sequences (token ids); None without a tensor."""
    torch = _torch()
    if not kwargs and args and isinstance(args[0], (tuple, list)) and args[0] and isinstance(args[0][0], torch.Tensor):
        first = args[0][0]  # the common batch, (inputs, targets): its inputs, without the walk below
        if first.dim() >= 1:
            sequence = first.dim() >= 2 and not first.is_floating_point() and not first.is_complex()
            return first.shape[0], first.shape[0] * first.shape[1] if sequence else None
    candidates = (kwargs.get("input_ids"), *args, *kwargs.values()) if kwargs else args
    for value in candidates:
        tensor = _first_tensor(torch, value)
        if tensor is not None and tensor.dim() >= 1:
            samples = int(tensor.shape[0])
            sequence = tensor.dim() >= 2 and not tensor.is_floating_point() and not tensor.is_complex()
            return samples, int(tensor.shape[0] * tensor.shape[1]) if sequence else None
    return None


def _first_tensor(torch, value: Any, depth: int = 0):
    if isinstance(value, torch.Tensor):
        return value
    if depth < 3 and isinstance(value, (list, tuple)):
        for item in value:
            found = _first_tensor(torch, item, depth + 1)
            if found is not None:
                return found
    if depth < 3 and isinstance(value, dict):
        for item in value.values():
            found = _first_tensor(torch, item, depth + 1)
            if found is not None:
                return found
    return None


class StepCounter:
    """The counters of one step: FLOPs by kind and dtype (FlopCounterMode), the bytes autograd saved for the
    backward pass (saved_tensors_hooks), parameters left out. Entered when the step starts, left when it ends."""

    def __init__(self, model) -> None:
        torch = _torch()
        from torch.utils.flop_counter import FlopCounterMode

        self.by_kind: dict[str, float] = {"matmul": 0.0, "attention": 0.0}
        self.by_dtype: dict[str, float] = {}
        self.operations = 0  # dispatched operations that launch a kernel (views and allocations left out)
        self.failed: set[str] = set()
        counter = self

        class _Counting(FlopCounterMode):
            def _count_flops(self, func_packet, out, args, kwargs):
                if _launches_kernel(func_packet):
                    counter.operations += 1
                if func_packet not in self.flop_registry:
                    return out
                try:
                    flops = float(self.flop_registry[func_packet](*args, **kwargs, out_val=out))
                except Exception:  # a formula that cannot read this call: named, never fatal to the training
                    counter.failed.add(str(func_packet))
                    return out
                name = str(getattr(func_packet, "__name__", func_packet)).split(".")[-1]
                counter.by_kind["attention" if "attention" in name else "matmul"] += flops
                tensor = _first_tensor(torch, list(args))
                dtype = str(tensor.dtype).removeprefix("torch.") if tensor is not None else DType.FLOAT32.value
                counter.by_dtype[dtype] = counter.by_dtype.get(dtype, 0.0) + flops
                return out

        self.flops = _Counting(display=False, custom_mapping=_cpu_attention(torch))
        self.parameters = {p.untyped_storage().data_ptr() for p in model.parameters()}
        self.storages: set[int] = set()
        self.saved_bytes = 0.0
        self.saved_values = 0.0
        self.saved = torch.autograd.graph.saved_tensors_hooks(self._pack, lambda tensor: tensor)
        self.model = model
        self.output_values = 0.0  # the model's outputs over the step's forwards (a language model's logits)
        self.output_hook = None
        self.entered = False

    def _output(self, module, args, output) -> None:
        """The model's output: a Hugging Face model's logits, else its first tensor."""
        torch = _torch()
        tensor = getattr(output, "logits", None)
        tensor = tensor if isinstance(tensor, torch.Tensor) else _first_tensor(torch, output)
        if tensor is not None and tensor.dim() > 0:
            self.output_values += float(tensor.numel())

    def _pack(self, tensor):
        with contextlib.suppress(Exception):  # a tensor without storage (a subclass, a nested tensor): not counted
            storage = tensor.untyped_storage()
            pointer = storage.data_ptr()
            if pointer not in self.parameters and pointer not in self.storages:
                self.storages.add(pointer)
                self.saved_bytes += storage.nbytes()
                self.saved_values += storage.nbytes() / max(tensor.element_size(), 1)
        return tensor

    def __enter__(self) -> StepCounter:
        self.flops.__enter__()
        self.saved.__enter__()
        self.output_hook = self.model.register_forward_hook(self._output)
        self.entered = True
        return self

    def __exit__(self, *exc: object) -> None:
        if self.entered:
            self.entered = False
            if self.output_hook is not None:
                self.output_hook.remove()
                self.output_hook = None
            self.saved.__exit__(None, None, None)
            self.flops.__exit__(None, None, None)

    def precision(self) -> str | None:
        if not self.by_dtype:
            return None
        dtype = max(self.by_dtype, key=self.by_dtype.__getitem__)
        return PRECISION_OF_DTYPE.get(dtype)


# Operations that launch no kernel although they are dispatched: allocations (the caching allocator's) and the
# metadata of a tensor. Views are told by their schema (every overload of a view op aliases its input).
NO_KERNEL_OPERATIONS = frozenset(
    {
        "empty",
        "empty_like",
        "empty_strided",
        "new_empty",
        "new_empty_strided",
        "lift_fresh",
        "_local_scalar_dense",
        "set_",
        "_unsafe_view",
    }
)
_LAUNCHES: dict[Any, bool] = {}


def _launches_kernel(packet) -> bool:
    """Whether an operation (an OpOverloadPacket) launches a kernel on a GPU: not a view, not an allocation."""
    found = _LAUNCHES.get(packet)
    if found is None:
        name = str(getattr(packet, "__name__", packet)).split(".")[-1]
        overloads = [getattr(packet, overload, None) for overload in packet.overloads()]
        view = any(getattr(overload, "is_view", False) for overload in overloads)
        found = _LAUNCHES[packet] = not view and name not in NO_KERNEL_OPERATIONS
    return found


def _cpu_attention(torch) -> dict:
    """FLOP formulas for the CPU's fused attention, which FlopCounterMode's registry lacks: the same work as the
    GPU's flash attention, whose formulas take the same leading arguments (query, key, value)."""
    from torch.utils.flop_counter import flop_registry

    aten, mapping = torch.ops.aten, {}
    for cpu, gpu in (
        ("_scaled_dot_product_flash_attention_for_cpu", "_scaled_dot_product_flash_attention"),
        ("_scaled_dot_product_flash_attention_for_cpu_backward", "_scaled_dot_product_flash_attention_backward"),
    ):
        if hasattr(aten, cpu) and getattr(aten, gpu, None) in flop_registry:
            formula = flop_registry[getattr(aten, gpu)]
            mapping[getattr(aten, cpu)] = getattr(formula, "__wrapped__", formula)  # FlopCounterMode wraps it
    return mapping


class TorchTracker:
    """The shared machinery of the PyTorch adapters over one model (see the module's docstring)."""

    def __init__(self, options: Options, framework_label: str = "", libraries: list[str] | None = None) -> None:
        options.check()
        self.options = options
        self.framework_label = framework_label
        self.libraries = libraries or []
        self.session: Session | None = None
        self.model = None
        self.device = None
        self.optimizer_name = "unknown"
        self.counter: StepCounter | None = None
        self.training_forwards = 0
        self.hook = None
        self.memory: PeakMemory | None = None
        self.planned_steps: int | None = None
        self.steps_per_epoch: int | None = None
        self.path: Path | None = None
        self.problem: str | None = None
        self.wait_method = "the time to fetch each batch from the loader (run.batches)"
        self.not_counted: list[str] = []
        self.batches_from_forward = True  # the forward pre-hook counts the samples (Lightning: its batch hook does)
        self.drop_hook_when_counted = False  # run.batches() in use: the hook goes once the counted step is done

    # ------------------------------------------------------------------ the run

    def start(self, model, optimizer=None) -> None:
        """Begin tracking ``model`` (checked: one visible device, some parameters)."""
        if not self.options.enabled:
            return
        self.model, self.device = model, model_device(model)
        if optimizer is not None:
            inner = getattr(optimizer, "optimizer", None)  # accelerate's and Lightning's wrappers keep the real one
            self.optimizer_name = type(inner if inner is not None else optimizer).__name__.lower()
        self.not_counted = sorted(
            {
                f"{name} ({type(m).__name__})"
                for name, m in model.named_modules()
                if type(m).__name__ in UNCOUNTED_MODULES
            }
        )
        self.hook = model.register_forward_pre_hook(self._forward, with_kwargs=True)
        kind = DeviceKind.GPU.value if self.device.type in COUNTED_DEVICES else DeviceKind.CPU.value
        self.memory = PeakMemory("torch", kind, str(self.device))
        self.memory.__enter__()
        self.session = Session(self.options)

    def _forward(self, module, args, kwargs):
        torch = _torch()
        if self.session is None or not module.training or not torch.is_grad_enabled():
            return None
        if not self.batches_from_forward:
            self.training_forwards += 1
            counted = self.session.counted is not None or not self.options.count_flops
            if self.drop_hook_when_counted and counted and self.hook is not None:
                self.hook.remove()  # the batches come through run.batches(): no hook on the steady steps (it
                self.hook = None  # takes PyTorch's module call off its fast path)
            return None
        self.training_forwards += 1
        self.add_batch(batch_shape(args, kwargs))
        return None

    def add_batch(self, shape: tuple[int, int | None] | None) -> None:
        """A training micro-batch of ``shape`` (samples, tokens) runs (its step starts now if none is under way)."""
        if self.session is None:
            return
        if not self.session.in_step:  # a loop that fetches its own batches: the step starts with its forward
            self.begin_step(Session.now())
        if shape is not None:
            self.session.add_batch(*shape)

    def begin_step(self, at: float) -> None:
        """The step starts at ``at`` (its first batch requested); the counted step starts its counters."""
        session = self.session
        if session is None or session.in_step:
            return
        if session.should_count():
            synchronize(self.device)
            session.begin(Session.now())
            session.counting = True
            self.counter = StepCounter(self.model)
            self.counter.__enter__()
            return
        session.begin(at)

    def end_step(self) -> None:
        """The optimizer step is done: wait for the device, then stop the clock."""
        session = self.session
        if session is None:
            return
        synchronize(self.device)
        now = Session.now()
        counting = session.counting
        record = session.end(now)
        if counting and self.counter is not None:
            self.counter.__exit__(None, None, None)
            if record is not None:
                self._keep_count(record.samples, record.micro_batches)
            self.counter = None

    def _keep_count(self, samples: int, micro_batches: int) -> None:
        counter = self.counter
        if counter is None or self.session is None:
            return
        self.session.counted = Counted(
            flops_by_kind=dict(counter.by_kind),
            samples=samples,
            micro_batches=micro_batches,
            activation_bytes=counter.saved_bytes / max(micro_batches, 1),
            activation_values=counter.saved_values / max(micro_batches, 1),
            precision=counter.precision(),
            output_values=counter.output_values / max(micro_batches, 1) or None,
            operations=counter.operations or None,
            method="torch.utils.flop_counter.FlopCounterMode on a real training step (forward, backward and the "
            "optimizer's step); activations: the tensors saved for the backward pass",
            not_counted=self.not_counted + sorted(f"{op} (its FLOP formula failed)" for op in counter.failed),
        )

    def stop(self, error: BaseException | None = None) -> Path | None:
        """End the run: write its profile (on a KeyboardInterrupt, of the steps done), or nothing after an error
        or misuse (one line says why)."""
        if self.session is None:
            return None
        if self.counter is not None:
            self.counter.__exit__(None, None, None)
            self.counter = None
        if self.hook is not None:
            self.hook.remove()
            self.hook = None
        if self.memory is not None:
            with contextlib.suppress(Exception):
                synchronize(self.device)
            self.memory.__exit__(None, None, None)
        session, self.session = self.session, None
        if error is not None and not isinstance(error, KeyboardInterrupt):
            session.close()
            self.problem = f"the training raised {type(error).__name__}: no profile written"
            say(self.problem)
            return None
        if self.training_forwards == 0 and session.records:
            session.close()
            self.problem = (
                "no profile written: no training forward pass was seen (the model ran under "
                "torch.no_grad() or in eval mode, or outside the tracked block)"
            )
            say(self.problem)
            return None
        session.interrupted = isinstance(error, KeyboardInterrupt)
        try:
            self.path = finish(session, self.facts())
        except Exception as failure:  # collecting must never break the user's training: said, not raised
            self.path = None
            say(f"no profile written: {type(failure).__name__}: {failure}")
        if self.path is None:
            self.problem = "no profile written"
        return self.path

    # ------------------------------------------------------------------ facts

    def facts(self) -> RunFacts:
        model, device = self.model, self.device
        parameters = list(model.parameters())
        counted = self.session.counted if self.session is not None else None
        precision = (
            counted.precision
            if counted and counted.precision
            else PRECISION_OF_DTYPE.get(str(parameters[0].dtype).removeprefix("torch."), Precision.FLOAT32.value)
        )
        identity = [(name, tuple(p.shape), str(p.dtype), p.requires_grad) for name, p in model.named_parameters()]
        facts = RunFacts(
            device=self._device_facts(),
            software=self._software(),
            precision=precision,
            model_class=type(model).__name__,
            parameters=sum(p.numel() for p in parameters),
            trainable_parameters=sum(p.numel() for p in parameters if p.requires_grad),
            optimizer=self.optimizer_name,
            identity=identity,
            planned_steps=self.planned_steps,
            steps_per_epoch=self.steps_per_epoch,
            memory=self.memory.reading() if self.memory is not None else None,
            checks={"device": str(device), "synchronised": _sync_words(device)},
            wait_method=self.wait_method,
        )
        weights_dtype = str(parameters[0].dtype).removeprefix("torch.")
        if weights_dtype != DType.FLOAT32 and precision != Precision.FLOAT32:
            facts.notes.append(
                f"The weights are {weights_dtype} (not float32 with autocast): counted as mixed precision."
            )
        if self.not_counted:
            facts.warnings.append(
                f"FlopCounterMode has no formula for {', '.join(self.not_counted)}: their FLOPs "
                "are not in the count (estimates on other GPUs take them as free)"
            )
        return facts

    def _device_facts(self) -> dict[str, Any]:
        torch, device = _torch(), self.device
        facts = hardware.torch_gpu_facts(torch, device)
        if facts is not None:
            if facts.get("platform") == "cuda":
                index = device.index if device.index is not None else torch.cuda.current_device()
                smi = hardware.nvidia_gpus()
                if smi and index < len(smi) and smi[index].get("driver"):
                    facts["driver"] = smi[index]["driver"]
            return facts
        host = hardware.host_facts()
        return {"kind": device_kind(False), "name": host.get("cpu", platform.processor() or "CPU"), "count": 1}

    def _software(self) -> dict[str, Any]:
        torch = _torch()
        software: dict[str, Any] = {
            "framework": "torch",
            "framework_version": str(torch.__version__),
            "python": platform.python_version(),
        }
        if self.device is not None and self.device.type == "cuda":
            with contextlib.suppress(Exception):
                if torch.version.cuda:
                    software["cuda"] = str(torch.version.cuda)
                if getattr(torch.version, "hip", None):
                    software["hip"] = str(torch.version.hip)
                if torch.backends.cudnn.version():
                    software["cudnn"] = str(torch.backends.cudnn.version())
        if self.libraries:
            software["libraries"] = self.libraries
        return software


def _sync_words(device) -> str:
    if device.type in ("cuda", "mps", "xpu"):
        return f"torch.{device.type}.synchronize at the start and end of every timed step"
    return "not needed (a CPU runs the step before Python goes on)"


class Run(TorchTracker):
    """``with advisor.track.torch(model, ...) as run:`` around your loop; ``run.batches(loader)`` times the wait for
    each batch, ``run.step()`` marks an optimizer step, ``run.pause()`` leaves a block (an evaluation) out. The
    profile is written when the block ends; ``run.path`` is where (None, and ``run.problem`` says why, otherwise)."""

    def __init__(self, model, options: Options, optimizer=None) -> None:
        super().__init__(options)
        self._model, self._optimizer = model, optimizer
        self._loader_length: int | None = None

    def __enter__(self) -> Run:
        self.start(self._model, self._optimizer)
        return self

    def __exit__(self, kind, error, traceback) -> bool:
        if self.steps_per_epoch is None and self._loader_length and self.session is not None:
            micro = max(1, round(statistics.median([r.micro_batches for r in self.session.records] or [1])))
            self.steps_per_epoch = math.ceil(self._loader_length / micro)
        self.stop(error)
        return False  # an error in the loop is the loop's: it goes on up

    def batches(self, loader: Iterable) -> Iterator:
        """The loader's batches, each one's wait timed apart from the step (the step starts when its first batch
        is asked for)."""
        if self.session is None:
            yield from loader
            return
        with contextlib.suppress(TypeError):
            self._loader_length = len(loader)  # type: ignore[arg-type]
        self.batches_from_forward, self.drop_hook_when_counted = False, True  # the samples: from each batch
        iterator = iter(loader)
        now = time.perf_counter  # the steady path below runs every batch: few calls, no wrappers
        on_device = self.device is not None and self.device.type != "cpu"
        while True:
            session = self.session
            if session is None:  # the block has ended: the rest of the loader, untimed
                yield from iterator
                return
            if session.in_step and on_device:
                synchronize(self.device)  # a micro-batch after the first: the wait is timed from the device's idle
            asked = now()
            if not session.in_step:
                self.begin_step(asked)
                if session.counting:
                    asked = now()
            try:
                batch = next(iterator)
            except StopIteration:
                session.cancel()  # the loader is done: no step started; the next one crosses an epoch's end
                return
            session.wait += now() - asked
            if not self.batches_from_forward:
                shape = batch_shape((batch,), {})
                if shape is not None:
                    session.samples += shape[0]
                    session.micro_batches += 1
                    if shape[1] is not None:
                        session.tokens = (session.tokens or 0) + shape[1]
                else:  # a batch without a tensor (indices, file names): the forward pass's inputs tell the samples
                    self.batches_from_forward, self.drop_hook_when_counted = True, False
            yield batch

    def step(self) -> None:
        """Mark the end of one optimizer step (after ``optimizer.step()``)."""
        session = self.session
        if session is None:
            return
        if not session.in_step:
            say("run.step() before any batch or forward pass of the step: ignored (call it after optimizer.step())")
            return
        if session.counting or self.device.type != "cpu":
            self.end_step()
        else:  # the steady path on a CPU: nothing to wait for
            session.end(time.perf_counter())

    @contextlib.contextmanager
    def pause(self) -> Iterator[None]:
        """Leave a block out of the step's time (an evaluation or a checkpoint inside the loop)."""
        session = self.session
        if session is None:
            yield
            return
        synchronize(self.device)
        start = time.perf_counter()
        try:
            yield
        finally:
            synchronize(self.device)
            if session.in_step:
                session.add_pause(time.perf_counter() - start)
            else:
                session.mark_unclean()


def library_version(module: str) -> str | None:
    """``name version`` of an imported library (Lightning, transformers), for the profile's software."""
    found = sys.modules.get(module)
    version = getattr(found, "__version__", None)
    return f"{module} {version}" if version else None
