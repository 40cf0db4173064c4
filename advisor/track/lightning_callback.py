"""Tracking ``lightning.Trainer.fit`` (or ``pytorch_lightning``'s) with a ``Callback`` over the PyTorch tracker.

A step starts when the last batch of the step before ended (the gap is the loop fetching the next batch and moving
it to the device: the wait for data) and ends at the end of the batch on which the optimizer stepped (seen by
``on_before_optimizer_step``; with ``accumulate_grad_batches`` the micro-batches before it are part of the step).
Steps next to the sanity check, a validation, a checkpoint or an epoch's start are left out. The run's length is
``trainer.estimated_stepping_batches``. Ctrl-C (Lightning's ``on_exception``) writes a profile of the steps done.
"""

from __future__ import annotations

import sys
from typing import Any

from advisor.track.session import Options, Session
from advisor.track.torch_run import TorchTracker, batch_shape, library_version, synchronize


def _callback_base() -> type:
    """The Callback class of the Lightning the user imported (``pytorch_lightning`` alone, else ``lightning``)."""
    if "pytorch_lightning" in sys.modules and "lightning" not in sys.modules:
        import pytorch_lightning  # the user's flavour of Lightning

        return pytorch_lightning.Callback
    from advisor.track.torch_run import TrackError

    try:
        import lightning.pytorch  # imported only when the callback is made
    except ImportError:
        raise TrackError("advisor.track.lightning: Lightning is not installed (pip install lightning)") from None
    return lightning.pytorch.Callback


def _tracker(options: Options) -> TorchTracker:
    """The tracker of a Lightning run: the wait for data is the gap between batches, the batch hook counts them."""
    tracker = TorchTracker(
        options, libraries=[v for v in (library_version("lightning"), library_version("pytorch_lightning")) if v]
    )
    tracker.wait_method = (
        "the gap between one batch's end and the next batch's start (Lightning fetches the batch "
        "and moves it to the device there)"
    )
    tracker.batches_from_forward = False  # training_step may not call forward: the batch hook counts
    return tracker


def _start(tracker: TorchTracker, trainer: Any, pl_module: Any) -> None:
    """Track the trainer's module with its first optimizer; the run's length is the trainer's planned steps."""
    optimizers = getattr(trainer, "optimizers", None) or [None]
    tracker.start(pl_module, optimizers[0])
    planned = getattr(trainer, "estimated_stepping_batches", None)
    if isinstance(planned, int) and planned > 0:
        tracker.planned_steps = planned


def _batch_starts(tracker: TorchTracker, last_end: float | None, batch: Any) -> None:
    """A training batch starts: its step begins (timed from the last batch's end: the fetch is the wait), the
    wait is added, the batch counted."""
    session = tracker.session
    if session is None:
        return
    now = Session.now()
    start = last_end if last_end is not None else now
    if not session.in_step:
        tracker.begin_step(start)
        if session.counting:
            start = now
    session.add_wait(now - start)
    tracker.training_forwards += 1
    tracker.add_batch(batch_shape((batch,), {}))


def make(options: Options) -> Any:
    """The callback (a subclass of the user's Lightning ``Callback``)."""
    base = _callback_base()

    class AdvisorTrack(base):  # type: ignore[misc, valid-type]
        """advisor.track for Lightning: add it to ``Trainer(callbacks=[...])``."""

        def __init__(self) -> None:
            super().__init__()
            self.tracker = _tracker(options)
            self.last_end: float | None = None
            self.stepped = False

        @property
        def path(self):
            return self.tracker.path

        def on_train_start(self, trainer, pl_module) -> None:
            _start(self.tracker, trainer, pl_module)

        def _gap(self) -> None:
            if self.tracker.session is not None:
                self.tracker.session.mark_unclean()

        def on_train_epoch_start(self, trainer, pl_module) -> None:
            self.last_end = None  # the first batch of an epoch starts its own clock
            self._gap()

        def on_validation_start(self, trainer, pl_module) -> None:
            self._gap()

        def on_save_checkpoint(self, trainer, pl_module, checkpoint) -> None:
            self._gap()

        def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
            _batch_starts(self.tracker, self.last_end, batch)

        def on_before_optimizer_step(self, trainer, pl_module, optimizer) -> None:
            self.stepped = True

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
            if self.tracker.session is None:
                return
            if self.stepped:
                self.tracker.end_step()
                self.stepped = False
            else:  # a micro-batch of an accumulating step: the gap to the next one is timed from the device's idle
                synchronize(self.tracker.device)
            self.last_end = Session.now()

        def on_train_end(self, trainer, pl_module) -> None:
            self.tracker.stop()

        def on_exception(self, trainer, pl_module, exception) -> None:
            self.tracker.stop(exception)

    return AdvisorTrack()
