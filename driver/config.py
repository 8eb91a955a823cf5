"""Run configuration: YAML files in ``configs/``, validated, optionally updated from a namelist.

A configuration holds only what does not depend on orchestration: the mode
comes from ``FV3_DACEMODE``. Every problem is reported as one
:class:`ConfigError` line naming the file, the field, what is expected and
what was found. Example (``configs/c24_case2.yaml``)::

    resolution: 24          # cells along a tile edge (C24)
    layout: 1               # ranks along each tile edge: 6 * layout**2 ranks
    dt: 900                 # model time step (s)
    days: 5
    test_case: 2
    backend: dace:cpu
    output:
      directory: output/c24_case2

An FV3 namelist (``--namelist input.nml``) overrides the fields it shares:
``fv_core_nml``: ``npx`` (resolution + 1), ``npy``, ``npz`` (nz), ``layout``,
``n_split`` (n_substeps); ``coupler_nml``: ``dt_atmos`` (dt), ``days``,
``hours``; ``test_case_nml``: ``test_case``, ``alpha`` (radians); reading it
and its defects are :mod:`driver.namelist`'s.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any, Mapping, Optional, Union

from driver.config_files import ConfigError, describe, read_text
from driver.constants import SECONDS_PER_DAY
from driver.testcases import TEST_CASES

#: gt4py backends the driver accepts.
BACKENDS = ("numpy", "gt:cpu_kfirst", "gt:cpu_ifirst", "dace:cpu", "dace:cpu_kfirst", "dace:gpu", "gt:gpu")


@dataclasses.dataclass(frozen=True)
class OutputConfig:
    """Where and how often the run writes.

    Attributes:
        directory: output folder (created), relative to the working directory.
        netcdf_interval_hours: simulated hours between netCDF snapshots of
            the prognostic fields; 0 writes only the initial and final states.
        restart_interval_hours: simulated hours between restart files; 0: none.
        plot: draw the free-surface height on the sphere at the end (PNG).
        overwrite: write into ``directory`` even when it holds an earlier
            run's files (by default the run then writes to ``<directory>_run2``,
            ``_run3``, ...: nothing written earlier is replaced).
    """

    directory: str = "output"
    netcdf_interval_hours: float = 0.0
    restart_interval_hours: float = 0.0
    plot: bool = True
    overwrite: bool = False


@dataclasses.dataclass(frozen=True)
class RunConfig:
    """A validated run configuration (see the module docstring for the file format).

    Attributes:
        resolution: cells along a tile edge (C<resolution>).
        layout: ranks along each tile edge; the job needs 6 * layout**2 ranks.
        dt: model time step (s).
        days: simulated run length (days).
        test_case: Williamson et al. (1992) case number: 1, 2, 5 or 6.
        alpha_degrees: tilt of the flow for cases 1 and 2 (degrees).
        backend: gt4py backend.
        n_halo: ghost layers (at least 2).
        nz: number of stacked layers (the test cases split their depth equally).
        n_substeps: Runge-Kutta steps per model step.
        hyperdiffusion: add fourth-order hyperdiffusion (a compile-time branch).
        diffusion_coefficient: its dimensionless strength.
        scratch_intermediates: the dycore's intermediates (tendencies, fluxes, Laplacians, the
            state at the start of a step) are ``orchestra.Scratch``: the compiled step keeps them
            to itself (docs/orchestration.md#scratch-arrays); Python never reads them.
        output: see :class:`OutputConfig`.
        name: a label for output files (the config file's stem by default).
    """

    resolution: int
    layout: int
    dt: float
    days: float
    test_case: int
    backend: str
    alpha_degrees: float = 0.0
    n_halo: int = 3
    nz: int = 1
    n_substeps: int = 1
    hyperdiffusion: bool = True
    diffusion_coefficient: float = 0.002
    scratch_intermediates: bool = True
    output: OutputConfig = OutputConfig()
    name: str = "run"

    @property
    def total_ranks(self) -> int:
        """Ranks the run needs: 6 * layout**2."""
        return 6 * self.layout**2

    @property
    def n_steps(self) -> int:
        """Model steps in the run."""
        return round(self.days * SECONDS_PER_DAY / self.dt)

    @property
    def alpha(self) -> float:
        """The flow tilt in radians."""
        return math.radians(self.alpha_degrees)

    def steps_per(self, hours: float) -> int:
        """Model steps in ``hours`` simulated hours (0 for 0)."""
        return round(hours * 3600.0 / self.dt)

    def to_dict(self) -> dict[str, Any]:
        """The configuration as plain data (what the YAML file would hold)."""
        return dataclasses.asdict(self)


_REQUIRED = ("resolution", "layout", "dt", "days", "test_case", "backend")


class _Checker:
    """Type and range checks that raise one-line :class:`ConfigError` s naming ``source``."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, field: str, expected: str, value: Any) -> ConfigError:
        return ConfigError(f"{self.source}: field '{field}': expected {expected}, got {describe(value)}")

    def positive_int(self, field: str, value: Any, minimum: int = 1) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise self.fail(field, f"an integer >= {minimum}", value)
        return value

    def positive_float(self, field: str, value: Any, allow_zero: bool = False) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise self.fail(field, "a number", value)
        if value < 0 or (value == 0 and not allow_zero):
            raise self.fail(field, "a number >= 0" if allow_zero else "a number > 0", value)
        return float(value)

    def number(self, field: str, value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise self.fail(field, "a number", value)
        return float(value)

    def boolean(self, field: str, value: Any) -> bool:
        if not isinstance(value, bool):
            raise self.fail(field, "true or false", value)
        return value

    def string(self, field: str, value: Any) -> str:
        if not isinstance(value, str) or not value:
            raise self.fail(field, "a non-empty string", value)
        return value

    def choice(self, field: str, value: Any, choices: tuple) -> Any:
        if isinstance(value, bool) or value not in choices:
            raise self.fail(field, "one of " + ", ".join(str(c) for c in choices), value)
        return value

    def known_keys(self, section: str, data: Mapping[str, Any], known: tuple[str, ...]) -> None:
        for key in data:
            if key not in known:
                where = f"in '{section}' " if section else ""
                raise ConfigError(
                    f"{self.source}: unknown field {where}{key!r}; valid fields are: {', '.join(known)}"
                )


def _output_config(check: _Checker, data: Any) -> OutputConfig:
    if data is None:
        return OutputConfig()
    if not isinstance(data, Mapping):
        fields = ", ".join(f.name for f in dataclasses.fields(OutputConfig))
        raise check.fail("output", f"a mapping with fields {fields}", data)
    check.known_keys("output", data, tuple(f.name for f in dataclasses.fields(OutputConfig)))
    defaults = OutputConfig()
    return OutputConfig(
        directory=check.string("output.directory", data.get("directory", defaults.directory)),
        netcdf_interval_hours=check.positive_float(
            "output.netcdf_interval_hours", data.get("netcdf_interval_hours", 0.0), allow_zero=True
        ),
        restart_interval_hours=check.positive_float(
            "output.restart_interval_hours", data.get("restart_interval_hours", 0.0), allow_zero=True
        ),
        plot=check.boolean("output.plot", data.get("plot", True)),
        overwrite=check.boolean("output.overwrite", data.get("overwrite", False)),
    )


def config_from_dict(data: Any, source: str = "config", name: str = "run") -> RunConfig:
    """Validate plain data (e.g. parsed YAML) into a :class:`RunConfig`."""
    check = _Checker(source)
    if not isinstance(data, Mapping):
        raise ConfigError(f"{source}: expected a mapping of fields, got {describe(data)}")
    known = tuple(f.name for f in dataclasses.fields(RunConfig))
    check.known_keys("", data, known)
    for field in _REQUIRED:
        if field not in data:
            raise ConfigError(f"{source}: missing required field '{field}' (required: {', '.join(_REQUIRED)})")
    defaults = {f.name: f.default for f in dataclasses.fields(RunConfig) if f.default is not dataclasses.MISSING}
    defaults["name"] = name
    value = {**defaults, **data}
    config = RunConfig(
        resolution=check.positive_int("resolution", value["resolution"], minimum=2),
        layout=check.positive_int("layout", value["layout"]),
        dt=check.positive_float("dt", value["dt"]),
        days=check.positive_float("days", value["days"]),
        test_case=check.choice("test_case", value["test_case"], tuple(sorted(TEST_CASES))),
        backend=check.choice("backend", value["backend"], BACKENDS),
        alpha_degrees=check.number("alpha_degrees", value["alpha_degrees"]),
        n_halo=check.positive_int("n_halo", value["n_halo"], minimum=2),
        nz=check.positive_int("nz", value["nz"]),
        n_substeps=check.positive_int("n_substeps", value["n_substeps"]),
        hyperdiffusion=check.boolean("hyperdiffusion", value["hyperdiffusion"]),
        diffusion_coefficient=check.positive_float(
            "diffusion_coefficient", value["diffusion_coefficient"], allow_zero=True
        ),
        scratch_intermediates=check.boolean("scratch_intermediates", value["scratch_intermediates"]),
        output=_output_config(check, data.get("output")),
        name=check.string("name", value["name"]),
    )
    _check_consistency(check, config)
    return config


def _whole_steps(check: _Checker, field: str, seconds: float, dt: float, value: Any) -> None:
    steps = seconds / dt
    if abs(steps - round(steps)) > 1e-9 * max(1.0, steps):
        raise check.fail(field, f"a whole number of time steps (dt = {dt:g} s)", value)


def _check_consistency(check: _Checker, config: RunConfig) -> None:
    if config.resolution % config.layout:
        raise check.fail("layout", f"a divisor of resolution {config.resolution}", config.layout)
    cells = config.resolution // config.layout
    if config.n_halo > cells:
        raise check.fail("n_halo", f"at most the cells per rank along an edge ({cells})", config.n_halo)
    _whole_steps(check, "days", config.days * SECONDS_PER_DAY, config.dt, config.days)
    if config.n_steps < 1:
        raise check.fail("days", f"at least one time step of {config.dt:g} s", config.days)
    for field in ("netcdf_interval_hours", "restart_interval_hours"):
        hours = getattr(config.output, field)
        if hours:
            _whole_steps(check, f"output.{field}", hours * 3600.0, config.dt, hours)


def parse_overrides(items: list[str]) -> dict[str, Any]:
    """``["days=1", "output.plot=false"]`` to ``{"days": 1, "output": {"plot": False}}`` (YAML values)."""
    import yaml

    overrides: dict[str, Any] = {}
    for item in items:
        field, separator, text = item.partition("=")
        if not separator or not field:
            raise ConfigError(f"--set {item!r}: expected FIELD=VALUE, e.g. --set days=1")
        try:
            value = yaml.safe_load(text)
        except yaml.YAMLError:
            value = text
        if field.startswith("output."):
            overrides.setdefault("output", {})[field[len("output."):]] = value
        else:
            overrides[field] = value
    return overrides


def load_config(
    path: Union[str, Path], namelist: Optional[Union[str, Path]] = None, overrides: Optional[Mapping[str, Any]] = None
) -> RunConfig:
    """Read and validate a YAML configuration, then apply a namelist's shared fields and ``overrides``."""
    import yaml

    path = Path(path)
    text = read_text(path, "configuration")
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise ConfigError(f"{path}: not valid YAML: {' '.join(str(error).split())}") from error
    if data is None:
        raise ConfigError(f"{path}: the file is empty; required fields: {', '.join(_REQUIRED)}")
    source = str(path)
    if namelist is not None or overrides:
        if not isinstance(data, Mapping):
            raise ConfigError(f"{path}: expected a mapping of fields, got {describe(data)}")
        data = dict(data)
    if namelist is not None:
        from driver.namelist import namelist_fields  # it raises ConfigError too (driver.config_files)

        data.update(namelist_fields(Path(namelist)))
        source = f"{source} + {namelist}"
    if overrides:
        output = overrides.get("output")
        if isinstance(output, Mapping) and isinstance(data.get("output"), Mapping):
            overrides = {**overrides, "output": {**data["output"], **output}}
        data.update(overrides)
        source = f"{source} + --set"
    return config_from_dict(data, source=source, name=path.stem)
