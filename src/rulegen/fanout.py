"""Run one function over many independent items on every core, results in input order.

Why: a fleet's specs load and render independently, and the work is pure Python, so it only
speeds up in separate processes. Workers are forked, so they inherit the shared context
(catalog, resolved specs) instead of pickling it; only each item's result crosses back.
Small batches stay in-process, where forking would cost more than it saves.
"""

from __future__ import annotations

import gc
import multiprocessing as mp
import os
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

from rulegen.errors import RulegenError

Context = TypeVar("Context")
Item = TypeVar("Item")
Result = TypeVar("Result")

# Items per worker below which a batch runs in-process.
MIN_ITEMS_PER_WORKER = 4

# Items a worker takes at a time, at most (each chunk is one round trip to the worker).
MAX_CHUNK = 2

# Allocations between two youngest-generation collections in a worker (CPython's default: 700).
GC_THRESHOLD = 20_000

_JOB: tuple[Callable[[Any, Any], Any], Any] | None = None


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask, not the whole machine's)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


def fan_out(
    work: Callable[[Context, Item], Result],
    context: Context,
    items: Sequence[Item],
    jobs: int | None = None,
    done: Callable[[], None] | None = None,
) -> list[Result]:
    """``[work(context, item) for item in items]``, in up to ``jobs`` processes (default: every
    usable CPU) when the batch is large enough; ``done`` is called in this process as each
    result comes back, in order (a progress count)."""
    workers = min(jobs or usable_cpus(), len(items) // MIN_ITEMS_PER_WORKER)
    # fork is the only start method that shares the context for free, and only Linux's is
    # safe with the libraries loaded here (macOS defaults to spawn for that reason)
    if workers < 2 or not sys.platform.startswith("linux"):
        return [_counted(work(context, item), done) for item in items]
    # small chunks: at the end of a batch one worker may idle while another finishes its
    # last chunk (a chunk of services of the example spec takes about 70 ms each)
    chunk = max(1, min(MAX_CHUNK, len(items) // (workers * 4)))
    try:
        with ProcessPoolExecutor(
            workers, mp_context=mp.get_context("fork"), initializer=_adopt,
            initargs=((work, context),),
        ) as pool:  # fmt: skip
            return [_counted(r, done) for r in pool.map(_run, items, chunksize=chunk)]
    except BrokenProcessPool:
        raise WorkerDied(
            "a worker process died (killed, or out of memory); nothing written. "
            "Rerun with --jobs 1 to build in one process"
        ) from None


def _counted(result: Result, done: Callable[[], None] | None) -> Result:
    if done is not None:
        done()
    return result


class WorkerDied(RulegenError):
    """A worker process ended without a result (a signal, the OOM killer)."""


def _adopt(job: tuple[Callable[[Any, Any], Any], Any]) -> None:
    global _JOB
    _JOB = job
    # What the worker inherited lives as long as it does: keep the cyclic collector off it,
    # and let it run less often (rendering allocates many short-lived objects, few cycles).
    gc.freeze()
    gc.set_threshold(GC_THRESHOLD, 20, 20)


def _run(item: Any) -> Any:
    assert _JOB is not None, "fan_out worker without a job"
    work, context = _JOB
    return work(context, item)
