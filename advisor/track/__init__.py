"""advisor.track: a profile of your own training job, recorded where it runs.

Four adapters, one profile format (workload kind ``tracked``)::

    import advisor.track

    # your own PyTorch loop
    with advisor.track.torch(model, name="my-job", epochs=3) as run:
        for epoch in range(3):
            for x, y in run.batches(loader):         # the wait for each batch is timed apart
                loss = loss_fn(model(x), y)
                loss.backward(); optimizer.step(); optimizer.zero_grad()
                run.step()                             # one optimizer step

    trainer = lightning.Trainer(callbacks=[advisor.track.lightning(name="my-job")])
    trainer = transformers.Trainer(..., callbacks=[advisor.track.huggingface(name="my-job")])
    model.fit(x, y, batch_size=64, callbacks=[advisor.track.keras(batch_size=64, name="my-job")])

Each times the optimizer steps after a warm-up (``warmup_steps``, 3) with the device synchronised at every
measurement point, leaves out the steps next to an evaluation, a checkpoint or an epoch's end, counts the FLOPs of
one real step by kind and what it keeps for the backward pass, reads the peak memory, and writes
``out/<id>.yaml`` (``out``: ``profiles``) when the training ends. ``estimate``, ``compare``, ``recommend`` and the
app then answer for that job on every GPU of the catalog. The options are :class:`advisor.track.session.Options`'
fields; ``enabled=False`` makes a tracker that does nothing.

The frameworks are imported when an adapter is made, never by ``import advisor.track``.
"""

from __future__ import annotations

from typing import Any

from advisor.track.session import Options, TrackError

__all__ = ["Options", "TrackError", "huggingface", "keras", "lightning", "torch"]


def torch(model: Any, optimizer: Any = None, **options: Any):
    """A context manager around your PyTorch loop over ``model``: ``run.batches(loader)``, ``run.step()``,
    ``run.pause()``; the profile is written when the block ends (on Ctrl-C: of the steps done). ``optimizer``
    names the optimizer in the profile (its states size the memory)."""
    from advisor.track.torch_run import Run  # imports torch: only when a run is made

    return Run(model, Options(**options), optimizer)


def lightning(**options: Any):
    """A Lightning ``Callback`` (``lightning.pytorch`` or ``pytorch_lightning``) that tracks ``Trainer.fit``."""
    from advisor.track.lightning_callback import make  # imports lightning: only when the callback is made

    return make(Options(**options))


def huggingface(**options: Any):
    """A Hugging Face ``TrainerCallback`` that tracks ``Trainer.train``."""
    from advisor.track.huggingface_callback import make  # imports transformers: only when the callback is made

    return make(Options(**options))


def keras(batch_size: int, **options: Any):
    """A Keras 3 callback for ``model.fit(..., callbacks=[...])``; ``batch_size`` is the one given to fit (Keras
    does not tell its callbacks). It honours ``steps_per_execution`` and is ``async_safe``."""
    from advisor.track.keras_callback import make  # imports keras: only when the callback is made

    return make(batch_size, Options(**options))
