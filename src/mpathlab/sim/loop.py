"""The event loop's core, as SimPy's Environment: the clock, the event heap, and scheduling.

An event is a (time, seq, kind, obj) tuple; seq keeps the events of one instant in the order they
were scheduled, so a run is the same run every time. Parts of the simulator (tags, CPUs, daemons)
plug in through call_at() as EV_CALL events.
"""
from __future__ import annotations

import heapq
from typing import Callable, Iterator, List, Optional

# one numbering with the compiled core (declared in .boundary). EV_CALL: obj = (fn, arg), a part
# plugged into the loop (blockqueue, host, a daemon's timer) asked to be called
from .boundary import (EV_ACTIVATED, EV_ARRIVE, EV_CALL, EV_DONE, EV_ERRDONE, EV_FAULT,  # noqa: F401
                       EV_KICK, EV_MESSAGE, EV_NOPATH_TIMEOUT, EV_REQUEUE, EV_RETRY, EV_SUBMIT)


class EventLoop:
    """now, the heap and its sequence counter (the Simulation sets them up: now, _base, _heap, _seq,
    _state_changes)."""

    now: int
    _base: int
    _heap: list
    _seq: Iterator[int]
    _state_changes: int
    daemons: List


    def _ktime(self) -> int:
        return self._base + self.now

    def _push(self, t: int, kind: int, obj) -> None:
        heapq.heappush(self._heap, (t, next(self._seq), kind, obj))

    def redirect_events(self, sink: Optional[Callable[[int, int, object], None]]) -> None:
        """Hand the events the simulation schedules from now on to SINK(t, kind, obj) instead of its heap
        (None: back to the heap).  The compiled core's bridge (.fast) takes the target's events this way."""
        if sink is None:
            self.__dict__.pop("_push", None)
        else:
            setattr(self, "_push", sink)    # an instance attribute shadows the method

    def call_at(self, t: int, fn, arg) -> None:
        self._push(t, EV_CALL, (fn, arg))

    def schedule(self, t: int, kind: int, obj) -> None:
        """Add an event of KIND (EV_*) for OBJ at time T."""
        self._push(t, kind, obj)

    def edit_events(self, edit: Callable[[int, object], Optional[tuple]]) -> None:
        """Rewrite the pending events: EDIT(kind, obj) returns None to keep an event, () to drop it, or
        (kind, obj) to replace it at the same time and in the same order."""
        keep = []
        for ev in self._heap:
            t, seq, kind, obj = ev
            new = edit(kind, obj)
            if new is None:
                keep.append(ev)
            elif new:
                keep.append((t, seq) + tuple(new))
        self._heap[:] = keep
        heapq.heapify(self._heap)

    @property
    def pending_state_changes(self) -> int:
        """Scheduled events that can bring a path back (faults, messages, activations, timers)."""
        return self._state_changes

    # a user-space daemon (mtools.daemon's multipathd) runs on timers in simulated time, sends dm messages
    # and takes path devices down and up; it never touches the I/O flow itself
    def add_daemon(self, daemon) -> None:
        """Hook in a daemon: ``daemon.attach(sim)`` is called now and may schedule
        timers with daemon_timer().  Simulations with a daemon run on the Python engine."""
        self.daemons.append(daemon)
        daemon.attach(self)

    def daemon_timer(self, at_ns: int, fn: Callable[[], None], keeps_alive: bool = False) -> None:
        """Run fn() at simulated time at_ns.  keeps_alive: the call may bring a path
        back or change queueing, so a run with no usable path must not be cut short
        as stalled while it is pending."""
        if keeps_alive:
            self._state_changes += 1
        self.call_at(max(at_ns, self.now), self._daemon_call, (fn, keeps_alive))

    def _daemon_call(self, call) -> None:
        fn, keeps_alive = call
        if keeps_alive:
            self._state_changes -= 1
        fn()
