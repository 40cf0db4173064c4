"""Tracking ``transformers.Trainer.train`` with a ``TrainerCallback`` over the PyTorch tracker.

The Trainer fetches the batches of a whole optimizer step (gradient accumulation included) before
``on_step_begin``: the gap since the previous ``on_step_end`` is the step's wait for data, unless logging, an
evaluation or a checkpoint ran in it (``on_log``, ``on_evaluate``, ``on_save``) or an epoch began: then the step is
left out. The step ends at ``on_step_end`` (after the optimizer's step and ``zero_grad``), the device synchronised.
The run's length is ``state.max_steps``. The Trainer calls no callback when training raises or is interrupted:
then nothing is written.
"""

from __future__ import annotations

from typing import Any

from advisor.track.session import Options, Session, TrackError
from advisor.track.torch_run import TorchTracker, library_version


def _tracker(options: Options) -> TorchTracker:
    """The tracker of a Trainer's run: its libraries' versions, and where the waiting for data is read."""
    tracker = TorchTracker(
        options, libraries=[v for v in (library_version("transformers"), library_version("accelerate")) if v]
    )
    tracker.wait_method = (
        "the gap between one step's end and the next step's begin (the Trainer fetches the step's batches there)"
    )
    return tracker


def make(options: Options) -> Any:
    """The callback (a ``transformers.TrainerCallback``)."""
    try:
        import transformers  # imported only when the callback is made
    except ImportError:
        raise TrackError(
            "advisor.track.huggingface: transformers is not installed (pip install transformers)"
        ) from None

    class AdvisorTrack(transformers.TrainerCallback):
        """advisor.track for the Hugging Face Trainer: add it to ``Trainer(callbacks=[...])``."""

        def __init__(self) -> None:
            self.tracker = _tracker(options)
            self.last_end: float | None = None

        @property
        def path(self):
            return self.tracker.path

        def on_train_begin(self, args, state, control, model=None, optimizer=None, **kwargs):
            if model is None:
                return
            self.tracker.start(model, optimizer)
            if state.max_steps and state.max_steps > 0:
                self.tracker.planned_steps = int(state.max_steps)

        def _gap(self, *args, **kwargs):
            session = self.tracker.session
            if session is not None:
                session.mark_unclean()

        on_log = on_evaluate = on_save = _gap

        def on_epoch_begin(self, args, state, control, **kwargs):
            self.last_end = None
            self._gap()

        def on_step_begin(self, args, state, control, **kwargs):
            session = self.tracker.session
            if session is None:
                return
            now = Session.now()
            start = self.last_end if self.last_end is not None else now
            self.tracker.begin_step(start)
            if not session.counting:
                session.add_wait(now - start)

        def on_step_end(self, args, state, control, **kwargs):
            if self.tracker.session is None:
                return
            self.tracker.end_step()
            self.last_end = Session.now()

        def on_train_end(self, args, state, control, **kwargs):
            self.tracker.stop()

    return AdvisorTrack()
