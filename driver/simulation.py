"""The run loop: time steps, output at intervals, progress, and the final summary."""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from pathlib import Path
from typing import Any, Optional, TextIO

import numpy as np

from orchestra import timing_report
from orchestra.observe.kernel_profile import kernel_report

from driver.diagnostics import ErrorNorms, Invariants, relative_change
from driver.model import Model
from driver.output import OutputWriter
from driver.progress import ProgressBar, format_duration, format_sim_time
from driver.restart import Restart


@dataclasses.dataclass(frozen=True)
class Summary:
    """What a finished run reports (identical on every rank)."""

    steps: int
    simulated_days: float
    setup_seconds: Optional[float]
    first_step_seconds: float
    seconds_per_step: Optional[float]
    build_seconds: Optional[float]
    load_seconds: Optional[float]
    initial: Invariants
    final: Invariants
    errors: Optional[ErrorNorms]
    files: tuple[str, ...]

    def lines(self) -> list[str]:
        """The summary as printed by rank 0."""
        def change(name: str) -> str:
            value = relative_change(getattr(self.final, name), getattr(self.initial, name))
            return "n/a" if value is None else f"{value:+.3e}"

        out = [f"simulated {self.simulated_days:g} days in {self.steps} steps"]
        if self.setup_seconds is not None:
            out.append(f"model set-up (grid, state, stencil builds) {format_duration(self.setup_seconds)}")
        out += [
            f"first step {format_duration(self.first_step_seconds)}"
            + (f" (orchestrated build {format_duration(self.build_seconds)})" if self.build_seconds else "")
            + (f" (library loaded in {self.load_seconds:.2f}s)" if self.load_seconds is not None else ""),
        ]
        if self.seconds_per_step is not None:
            out.append(f"time per step {self.seconds_per_step * 1e3:.1f} ms (dynamical core only, after the first)")
        out.append(
            f"relative change: mass {change('mass')}, energy {change('energy')}, "
            f"potential enstrophy {change('enstrophy')}"
        )
        if self.errors is not None:
            out.append(
                f"normalized height errors: l1 {self.errors.l1:.3e}  l2 {self.errors.l2:.3e}  "
                f"linf {self.errors.linf:.3e}"
            )
        out.extend(f"wrote {name}" for name in self.files)
        return out

    def to_json(self) -> str:
        """The summary as JSON."""
        return json.dumps(dataclasses.asdict(self), indent=2)


def _orchestration_seconds(obj: Any) -> tuple[Optional[float], Optional[float]]:
    program = obj.__dict__.get("__orchestra_programs__", {}).get("__call__")
    if program is None:
        return None, None
    return program.build_seconds, program.load_seconds


class Simulation:
    """Runs a :class:`~driver.model.Model` for ``config.n_steps`` steps, with output.

    ``restart`` (a checked restart file, :func:`driver.restart.load_restart`)
    continues an earlier run from its step; ``setup_seconds`` (building the
    model) is reported in the summary.
    """

    def __init__(
        self, model: Model, restart: Optional[Restart] = None, stream: Optional[TextIO] = None,
        setup_seconds: Optional[float] = None,
    ) -> None:
        self.model = model
        self.setup_seconds = setup_seconds
        self.config = model.config
        self.communicator = model.communicator
        self.stream = stream or sys.stdout
        self.output = OutputWriter(self.config, self.communicator, model.geometry)
        self.step = 0
        self.initial: Invariants
        if restart is None:
            self.initial = model.diagnostics.invariants(model.state)
        else:
            restart.fill(model.state, model.geometry)
            self.step, initial = restart.step, restart.initial_invariants
            self.initial = Invariants(**initial) if initial else model.diagnostics.invariants(model.state)
        model.update_halos()
        self.files: list[str] = []

    def _say(self, text: str) -> None:
        if self.communicator.rank == 0:
            self.stream.write(text + "\n")
            self.stream.flush()

    def _record(self, path: Optional[Path]) -> None:
        if path is not None:
            self.files.append(str(path))

    def _due(self, hours: float) -> bool:
        every = self.config.steps_per(hours) if hours else 0
        return every > 0 and self.step % every == 0

    def run(self) -> Summary:
        """Run to the end; write output; return (and print, on rank 0) the summary. Collective."""
        config, model = self.config, self.model
        total = config.n_steps
        self._say(
            f"C{config.resolution} test case {config.test_case}, {6 * config.layout**2} ranks, "
            f"dt {config.dt:g} s, {total} steps, backend {config.backend}, "
            f"orchestration {model.factory.dace_config.orchestration.value}"
        )
        if self.step == 0:
            self._record(self.output.snapshot(model.state, 0))
        progress = ProgressBar(self.step, total, config.dt, self.stream) if self.communicator.rank == 0 else None
        first_step_seconds, steady_seconds = 0.0, 0.0
        start_step = self.step
        while self.step < total:
            started = time.perf_counter()
            model.dycore()
            elapsed = time.perf_counter() - started
            self.step += 1
            if self.step == start_step + 1:
                first_step_seconds = elapsed
            else:
                steady_seconds += elapsed
            if self._due(config.output.netcdf_interval_hours) and self.step < total:
                self._record(self.output.snapshot(model.state, self.step))
            if self._due(config.output.restart_interval_hours):
                self._record(self.output.restart(model.state, self.step, dataclasses.asdict(self.initial)))
            if progress is not None:
                progress.update(self.step)
        steps_after_first = self.step - start_step - 1
        per_step = steady_seconds / steps_after_first if steps_after_first > 0 else None
        self._record(self.output.snapshot(model.state, self.step))
        if config.output.plot:
            title = (
                f"C{config.resolution} Williamson case {config.test_case}: "
                f"free surface at {format_sim_time(self.step * config.dt)}"
            )
            exact = model.exact_surface(self.step * config.dt)
            for path in self.output.plot(model.state, self.step, title, exact):
                self._record(path)
        summary = self._summarize(first_step_seconds, per_step)
        for line in summary.lines():
            self._say(line)
        if self.communicator.rank == 0:
            path = Path(config.output.directory) / f"{config.name}_summary.json"
            path.write_text(summary.to_json())
        if model.factory.dace_config.timings:  # ORCHESTRA_TIMINGS=1: where each step's time went
            timing_report(self.communicator, Path(config.output.directory) / f"{config.name}_timings.json")
        if model.factory.dace_config.profile == "kernels":  # ORCHESTRA_PROFILE=kernels: ends the programs
            kernel_report(self.communicator, Path(config.output.directory) / f"{config.name}_kernels.json")
        return summary

    def _summarize(self, first_step_seconds: float, per_step: Optional[float]) -> Summary:
        model = self.model
        final = model.diagnostics.invariants(model.state)
        exact = model.exact_surface(self.step * self.config.dt)
        errors = model.diagnostics.error_norms(model.state, exact) if exact is not None else None
        build, load = _orchestration_seconds(model.dycore)
        timings = self.communicator.allgather((first_step_seconds, per_step, build, load))
        def worst(index: int) -> Optional[float]:
            values = [t[index] for t in timings if t[index] is not None]
            return max(values) if values else None
        setup = [t for t in self.communicator.allgather(self.setup_seconds) if t is not None]
        return Summary(
            steps=self.step,
            simulated_days=self.step * self.config.dt / 86400.0,
            setup_seconds=max(setup) if setup else None,
            first_step_seconds=float(np.max([t[0] for t in timings])),
            seconds_per_step=worst(1),
            build_seconds=worst(2),
            load_seconds=worst(3),
            initial=self.initial,
            final=final,
            errors=errors,
            files=tuple(self.files),
        )
