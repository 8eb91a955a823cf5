"""A progress line for rank 0: step, simulated time, wall time, estimated time left."""

from __future__ import annotations

import sys
import time
from typing import Optional, TextIO


def format_duration(seconds: float) -> str:
    """``1h02m03s``, ``4m05s`` or ``6.1s``."""
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m{secs:02d}s" if hours else f"{minutes}m{secs:02d}s"


def format_sim_time(seconds: float) -> str:
    """Simulated time as ``2d 03:00``."""
    days, rest = divmod(int(round(seconds)), 86400)
    hours, rest = divmod(rest, 3600)
    return f"{days}d {hours:02d}:{rest // 60:02d}"


class ProgressBar:
    """Redraws one line on a terminal; elsewhere prints a line every ``percent_step`` %.

    The estimate of the time left ignores the first step (it may include the
    orchestrated build or load).
    """

    def __init__(
        self, first_step: int, total_steps: int, dt: float, stream: Optional[TextIO] = None,
        width: int = 30, percent_step: int = 10,
    ) -> None:
        self.first_step = first_step
        self.total_steps = total_steps
        self.dt = dt
        self.stream = stream or sys.stdout
        self.width = width
        self.percent_step = percent_step
        self.interactive = self.stream.isatty()
        self._start = time.perf_counter()
        self._steady_start: Optional[float] = None
        self._last_percent = -1
        self._last_draw = -1.0

    def update(self, step: int) -> None:
        """Report that ``step`` steps are done."""
        now = time.perf_counter()
        done = step - self.first_step
        if done == 1:
            self._steady_start = now
        wall = now - self._start
        remaining = self.total_steps - step
        if self._steady_start is not None and done > 1:
            eta = format_duration((now - self._steady_start) / (done - 1) * remaining)
        else:
            eta = "?"
        fraction = step / self.total_steps if self.total_steps else 1.0
        filled = int(self.width * fraction)
        line = (
            f"[{'#' * filled}{'.' * (self.width - filled)}] step {step}/{self.total_steps}  "
            f"t = {format_sim_time(step * self.dt)}  wall {format_duration(wall)}  ETA {eta}"
        )
        if self.interactive:
            if now - self._last_draw >= 0.2 or step == self.total_steps:
                self._last_draw = now
                self.stream.write("\r" + line + ("\n" if step == self.total_steps else ""))
                self.stream.flush()
            return
        percent = int(100 * fraction) // self.percent_step * self.percent_step
        if percent > self._last_percent or step == self.total_steps:
            self._last_percent = percent
            self.stream.write(line + "\n")
            self.stream.flush()
