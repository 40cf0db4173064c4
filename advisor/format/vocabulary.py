"""The advisor's words, each list written once: precisions, goals, sources, device kinds, bounds.

Every other module (the schema's choices, argparse's, the app's labels, the analysis, the measurement) takes
them from here; ``tests/test_vocabulary.py`` greps the package for a stray literal. A member is a ``str`` (a
``StrEnum``), so it compares equal to the word in a YAML file or a DataFrame and prints as it.
"""

from __future__ import annotations

import enum
from enum import StrEnum

import yaml


class Precision(StrEnum):
    """A result's precision: the Keras dtype policy it trained under."""

    FLOAT32 = "float32"
    MIXED_FLOAT16 = "mixed_float16"
    MIXED_BFLOAT16 = "mixed_bfloat16"

    @property
    def dtype(self) -> DType:
        """The dtype the layers compute in."""
        return DType(self.value.removeprefix("mixed_"))

    @property
    def group(self) -> PrecisionGroup:
        """float32 or mixed (the calibration fits one efficiency per group)."""
        return PrecisionGroup.FLOAT32 if self is Precision.FLOAT32 else PrecisionGroup.MIXED

    @property
    def short(self) -> str:
        """The app's narrow label: 'mixed fp16'."""
        return {"float32": "float32", "float16": "mixed fp16", "bfloat16": "mixed bf16"}[self.dtype.value]

    @staticmethod
    def mixed_for(device_kind: str) -> Precision:
        """The mixed policy that helps the device: float16 tensor cores on GPUs, bfloat16 on CPUs."""
        return Precision.MIXED_FLOAT16 if device_kind == DeviceKind.GPU else Precision.MIXED_BFLOAT16


class DType(StrEnum):
    """A tensor's floating-point type."""

    FLOAT32 = "float32"
    FLOAT16 = "float16"
    BFLOAT16 = "bfloat16"


class PrecisionGroup(StrEnum):
    FLOAT32 = "float32"
    MIXED = "mixed"  # either mixed policy: mixed_float16 on GPUs, mixed_bfloat16 on CPUs


class PrecisionFilter(StrEnum):
    """Which results a comparison keeps: the best of both precisions, float32 alone, or mixed alone."""

    ANY = "any"
    FLOAT32 = "float32"
    MIXED = "mixed"

    @property
    def label(self) -> str:
        """The app's choice."""
        return {"any": "Best of both", "float32": "float32", "mixed": "mixed"}[self.value]


MIXED_WORD = PrecisionGroup.MIXED.value  # `measure --precision mixed`: the device's mixed policy


class Goal(StrEnum):
    VALUE = "value"
    SPEED = "speed"
    COST = "cost"

    @property
    def label(self) -> str:
        """The app's choice."""
        return {"value": "Best value ($ per speedup)", "speed": "Fastest within budget", "cost": "Lowest cost per run"}[
            self.value
        ]

    @property
    def help(self) -> str:
        """What the goal picks (the CLI's help and the app's tooltip)."""
        return {
            "value": "the lowest dollars per 1x of speedup",
            "speed": "the fastest within the budget",
            "cost": "the lowest cost per run (owning or renting)",
        }[self.value]


class Source(StrEnum):
    """Where a time comes from."""

    MEASURED = "measured"  # by `advisor measure`
    QUOTED = "quoted"  # from a published source
    ESTIMATED = "estimated"  # by the performance model, or a --quick total


class DeviceKind(StrEnum):
    CPU = "cpu"
    GPU = "gpu"


class Platform(StrEnum):
    """The software platform a GPU trained on: NVIDIA's CUDA, AMD's ROCm (HIP), Apple's Metal (MPS), Intel's oneAPI
    for its Arc GPUs (PyTorch's ``xpu`` device) or Intel's Gaudi software for its Gaudi accelerators (``hpu``)."""

    CUDA = "cuda"
    ROCM = "rocm"
    MPS = "mps"
    XPU = "xpu"
    HPU = "hpu"


# Each platform's software as a reader knows it, and the vendor whose GPUs run it.
PLATFORM_SOFTWARE = {
    Platform.CUDA: "CUDA",
    Platform.ROCM: "ROCm",
    Platform.MPS: "Metal",
    Platform.XPU: "oneAPI",
    Platform.HPU: "Gaudi software",
}
PLATFORM_VENDORS = {
    Platform.CUDA: "NVIDIA",
    Platform.ROCM: "AMD",
    Platform.MPS: "Apple",
    Platform.XPU: "Intel",
    Platform.HPU: "Intel",
}


class Bound(StrEnum):
    """What limits an estimated training step."""

    ARITHMETIC = "arithmetic"
    MEMORY = "memory"
    STEP = "per-step"


def words(kind: type[StrEnum]) -> tuple[str, ...]:
    """The plain strings of a vocabulary, in order (for argparse choices and JSON Schema enums)."""
    return tuple(member.value for member in kind)


# A member written to YAML is its word (PyYAML's safe dumper knows only plain str).
yaml.SafeDumper.add_multi_representer(enum.Enum, lambda dumper, member: dumper.represent_str(str(member.value)))


class PriceBasis(StrEnum):
    """Whose price a result's is: the GPU catalog's (dated, with its kind), the profile's own, or the one the user
    typed."""

    CATALOG = "catalog"
    PROFILE = "profile"
    YOURS = "yours"


class Job(StrEnum):
    """What a profile timed: training (a workload's results by precision) or inference (a model's generation)."""

    TRAINING = "training"
    INFERENCE = "inference"


class WorkloadKind(StrEnum):
    """What a profile's workload is: the post's LSTM sized, your own Keras model (its layers), a published
    benchmark (described by its phases), your own job tracked where it runs (advisor.track)."""

    LSTM = "lstm"
    MODEL = "model"
    PUBLISHED = "published"
    TRACKED = "tracked"


class ModelFamily(StrEnum):
    """The kind of model a workload trains: the families the cross-validation holds out in turn (a family never
    seen is what a buyer's own model may be)."""

    RECURRENT = "recurrent"  # recurrent sequence models (LSTM, GRU): the post's LSTM
    VISION = "vision"  # convolutional vision: classification, detection, segmentation
    LANGUAGE = "language"  # transformer language models: BERT, Transformer-XL, every language-model job
    SPEECH = "speech"  # speech synthesis and recognition (Tacotron 2, WaveGlow)
    RECOMMENDATION = "recommendation"  # embeddings and small dense layers (NCF)


class PaybackCounts(StrEnum):
    """What an option's payback counts: the time saved and the energy, the time alone (the power is unknown), or
    nothing (an hour is worth $0 and the power is unknown). :data:`advisor.render.prose.PAYBACK_COUNTS_WORDS` says
    them in words (the JSON's and the CSV's ``payback_counts``)."""

    TIME_AND_ENERGY = "time_and_energy"
    TIME_ALONE = "time_alone"
    NOTHING = "nothing"


class CostKind(StrEnum):
    """A line of the cost comparison: keeping the current hardware, buying the best, renting the cheapest."""

    KEEP = "keep"
    BUY = "buy"
    RENT = "rent"
