"""What ORCHESTRA_TIMINGS costs per call of the orchestrated dycore (orchestra/observe/timings.py).

Builds (or loads) the dycore on one rank twice in one process, once with
timings off and once on (the same build: timings are not part of the key),
and times batches of steps of each, interleaved, so that the machine's load
falls on both alike:

    python scripts/time_timings.py --size 24 --rounds 20 --steps 50

Prints the median step time of each and their ratio (two models: their
arrays differ, so expect noise of a few per cent either way), and what the
added work costs alone: the clock per call (start, five laps, stop) and the
timing wrapper per callback call.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def _model(timings: bool, size: int, nz: int, cache_root: str | None):
    from bench_lib import dycore

    os.environ["ORCHESTRA_TIMINGS"] = "1" if timings else "0"
    model = dycore.build_model("orchestrated", size, nz, dycore.communicator(), cache_root)
    model.dycore()  # build or load
    return model


def _clock_cost(repeats: int) -> float:
    from orchestra.observe import timings
    from orchestra.observe.timings import ProgramClock

    clock = ProgramClock("clock cost")
    start = time.perf_counter()
    for _ in range(repeats):
        clock.start()
        for part in ("bind", "check", "marshal", "library", "return"):
            clock.lap(part)
        clock.stop(False)
    seconds = (time.perf_counter() - start) / repeats
    timings._CLOCKS.remove(clock)  # not a program: left out of the report at exit
    return seconds


def _callback_cost(repeats: int) -> float:
    """What timing one callback adds to it (a wrapped no-op against the plain one)."""
    from orchestra.observe import timings
    from orchestra.observe.timings import ProgramClock

    clock = ProgramClock("callback cost")
    timings._CLOCKS.remove(clock)

    def plain() -> None:
        return None

    timed = clock.timed_callback("plain", plain)
    clock.start()
    costs = []
    for function in (plain, timed):
        start = time.perf_counter()
        for _ in range(repeats):
            function()
        costs.append((time.perf_counter() - start) / repeats)
    return costs[1] - costs[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=24, help="cells per rank along x and y")
    parser.add_argument("--nz", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--steps", type=int, default=50, help="steps per batch")
    parser.add_argument("--cache-root", default=os.environ.get("ORCHESTRA_CACHE_DIR"))
    args = parser.parse_args(argv)

    models = {"off": _model(False, args.size, args.nz, args.cache_root),
              "on": _model(True, args.size, args.nz, args.cache_root)}
    batches: dict[str, list[float]] = {name: [] for name in models}
    for _ in range(args.rounds):
        for name, model in models.items():
            start = time.perf_counter()
            for _ in range(args.steps):
                model.dycore()
            batches[name].append((time.perf_counter() - start) / args.steps)
    off, on = statistics.median(batches["off"]), statistics.median(batches["on"])
    clock, callback = _clock_cost(20000), _callback_cost(200000)
    print(f"dycore {args.size}x{args.size}x{args.nz}, 1 rank, load {os.getloadavg()[0]:.1f}")
    print(f"step, timings off: {off * 1e3:.3f} ms; on: {on * 1e3:.3f} ms; on/off {on / off:.3f} "
          f"(+{(on - off) * 1e6:.1f} us)")
    print(f"the clock alone (start, 5 laps, stop): {clock * 1e6:.2f} us per call; timing a callback: "
          f"{callback * 1e6:.2f} us per callback call")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
