"""The frozen toolchain settings: DaCe configuration and gt4py compile flags.

DaCe's configuration is process-global. orchestra never writes a
``.dace.conf``; every setting it depends on is listed here, with the reason,
and applied only inside :func:`dace_settings` which restores the previous
values on exit.

Floating-point flags are chosen so that an orchestrated build and the same
stencils run one by one through gt4py give bitwise-identical results: no
``-ffast-math`` family flag on either side and ``-ffp-contract=off`` on both
(FMA contraction would otherwise differ between the two compilations).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import os
import platform
import re
import shutil
import subprocess
from typing import Any, Iterator, Optional

from orchestra.errors import ConfigurationError
from orchestra.toolchain.vector_width import (  # noqa: F401 (re-exported: the host flags' public names)
    DEFAULT_VECTOR_WIDTH, VECTOR_WIDTH_VARIABLE, is_x86, vector_width, vector_width_args,
)
from orchestra.toolchain.sanitizer import SANITIZE_VARIABLE, sanitize_args  # noqa: F401 (re-exported)

#: Compiler flags shared by orchestrated builds and gt4py stencil builds that
#: affect numerical results.
FP_FLAGS = ("-ffp-contract=off",)

#: Flags gt4py 1.1.12 needs for the dace backends: DaCe 2.0 headers use C++20
#: (``std::bit_cast``) while gt4py compiles with ``-std=c++17``; the later flag wins.
GT4PY_EXTRA_FLAGS = ("-std=c++20", *FP_FLAGS)

#: Added to gt4py's C++ stencil builds after Python's own compiler flags (which
#: often hold ``-g``): no debug information. GCC emits the same machine code
#: either way; without it a stencil's extension compiles in about a quarter
#: less time (Python mode's first call is those compiles). Not added when
#: ``GT4PY_EXTRA_COMPILE_ARGS`` already chooses debug information (``-g``, ``-ggdb``, ...).
GT4PY_NO_DEBUG_INFO = "-g0"

#: nvcc flags gt4py needs for ``dace:gpu`` stencils run one by one: it compiles
#: them with ``-std=c++17`` too (nvcc keeps the last ``-std``).
GT4PY_EXTRA_CUDA_FLAGS = ("-std=c++20",)

@functools.cache
def compiler_identity() -> str:
    """First line of ``c++ --version`` (the compiler DaCe's CMake picks by default)."""
    for exe in (os.environ.get("CXX"), "c++", "g++"):
        if not exe:
            continue
        try:
            out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if out.returncode == 0 and out.stdout:
            return out.stdout.splitlines()[0].strip()
    return "unknown"


#: GCC only (``--param``): let the loops of a whole program vectorize. A
#: gt4py statement with horizontal regions is a nested SDFG, emitted as an
#: ``inline`` function called once per point with every array and stride as
#: an argument; GCC's default limit for inlining such a function (70
#: instructions) leaves most of them as calls, and a call in a loop stops
#: vectorization. A fused kernel also reads more arrays than GCC checks for
#: aliasing at run time by default (10 pairs), which stops it too. Neither
#: changes a result (no reassociation: ``-ffp-contract=off``, no fast-math);
#: on the dycore at 192 x 192 x 8 they vectorize 49 of the 52 bulk loops
#: instead of 30 and make the step 1.2x faster (docs/performance_log.md).
GCC_VECTORIZE_ARGS = (
    "--param", "max-inline-insns-single=2000",
    "--param", "vect-max-version-for-alias-checks=1000",
)


@functools.cache
def compiler_is_gcc() -> bool:
    """True if the C++ compiler DaCe's CMake picks (``$CXX``, else ``c++``) is GCC.

    GCC's ``--version`` names the Free Software Foundation; clang, Intel's and
    NVIDIA's compilers do not (clang-based ones also define ``__GNUC__``).
    """
    exe = os.environ.get("CXX") or "c++"
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "Free Software Foundation" in out.stdout and "clang" not in out.stdout.lower()


#: Flags for the orchestrated (whole-program) CPU build. DaCe's default adds
#: ``-freciprocal-math`` and ``-fno-signed-zeros`` (change results, break
#: parity) which are left out here. ``-march=native`` makes the library
#: specific to this CPU, so the host ISA enters the cache key (see
#: :func:`host_isa`).
BASE_CPU_ARGS = (
    "-std=c++20",
    "-fPIC",
    "-march=native",
    "-fno-math-errno",
    *FP_FLAGS,
    "-Wno-unused-parameter",
    "-Wno-unused-label",
    "-Wno-unused-variable",
    "-Wno-unused-but-set-variable",
)
CPU_ARGS = BASE_CPU_ARGS + (GCC_VECTORIZE_ARGS if compiler_is_gcc() else ())

#: Host flags of a GPU build: as for CPU builds, but without ``-march=native``
#: (nor the GCC vectorization parameters, which nvcc would have to pass on).
#: The host half of a GPU program (state set-up, kernel launches, callbacks) is
#: not where time goes, and a GPU build is usually compiled on a login node
#: for compute nodes with another CPU. So the host ISA stays out of its key.
GPU_HOST_ARGS = tuple(flag for flag in BASE_CPU_ARGS if flag != "-march=native")

#: nvcc flags of a GPU build (DaCe adds the host flags through ``-Xcompiler``).
#: ``-lineinfo`` maps kernels to source lines in profilers at no run-time cost.
CUDA_ARGS = ("-lineinfo",)

#: Fallback for ``DaceConfig.cuda_arch`` (e.g. in a login-node build script).
CUDA_ARCH_VARIABLE = "ORCHESTRA_CUDA_ARCH"

#: Where DaCe reads the host compiler's flags.
CPU_ARGS_PATH = ("compiler", "cpu", "args")

#: (config path, value, reason) for every DaCe setting orchestra depends on.
DACE_SETTINGS: tuple[tuple[tuple[str, ...], object, str], ...] = (
    (("compiler", "allow_view_arguments"), True,
     "gt4py storages and model state arrays are numpy views"),
    (("frontend", "dont_fuse_callbacks"), True,
     "keeps halo-exchange callbacks in program order"),
    (("cache",), "name",
     "build folders are named by program; orchestra's own cache keys them"),
    (("cache_distaware",), False,
     "otherwise DaCe appends _rank<N> to build folders under MPI"),
    (("compiler", "use_cache"), False,
     "orchestra decides when to reuse a build, never DaCe"),
    (("compiler", "build_type"), "Release", "optimized builds (-O3)"),
    (CPU_ARGS_PATH, " ".join(CPU_ARGS), "see CPU_ARGS (dace_settings adds vector_width_args)"),
    (("compiler", "cpu", "openmp_sections"), False,
     "no OpenMP sections between independent states (ordering of callbacks)"),
    (("optimizer", "autooptimize"), False, "orchestra runs its own pipeline"),
    (("optimizer", "automatic_simplification"), False,
     "simplification is a pipeline stage with a documented skip list"),
    (("debugprint",), False, "quiet builds"),
    (("frontend", "raise_nested_parsing_errors"), True,
     "a stencil that fails to parse is an error, not a silent callback"),
    (("compiler", "cuda", "syncdebug"), False, "set by the debug checks only"),
    (("instrumentation", "report_each_invocation"), False,
     "a kernel profile build (ORCHESTRA_PROFILE=kernels) writes one report when it ends, not one per call"),
)


def _set(path: tuple[str, ...], value: object) -> None:
    from dace.config import Config

    Config.set(*path, value=value)


@contextlib.contextmanager
def dace_settings(
    extra: tuple[tuple[tuple[str, ...], object], ...] = (), *, gpu: Optional["GpuTarget"] = None
) -> Iterator[None]:
    """Apply :data:`DACE_SETTINGS` (plus ``extra``), restoring the old values on exit.

    With ``gpu``, also that target's settings (:meth:`GpuTarget.settings`), and
    the CMake of this Python environment first on ``PATH`` (see :func:`cmake_bin_dir`).
    """
    from dace.config import Config

    from orchestra.frontend import source_rewrites
    from orchestra.toolchain.cheaper_helpers import cheaper_helpers

    changes = [(path, value) for path, value, _ in DACE_SETTINGS] + [(CPU_ARGS_PATH, " ".join(host_args("cpu")))]
    changes += list(extra)
    if gpu is not None:
        changes += list(gpu.dace_extra())
    saved = []
    for path, value in changes:
        try:
            saved.append((path, Config.get(*path)))
        except KeyError:  # a setting this DaCe version does not know
            continue
        _set(path, value)
    _forget_gpu_backend()
    old_path = os.environ.get("PATH")
    cmake_dir = cmake_bin_dir() if gpu is not None else None
    if cmake_dir is not None:
        os.environ["PATH"] = os.pathsep.join([cmake_dir, old_path] if old_path else [cmake_dir])
    try:
        # model source DaCe refuses, rewritten to what it means (orchestra.frontend); DaCe's helpers made cheaper
        with source_rewrites(), cheaper_helpers():
            yield
    finally:
        if cmake_dir is not None:
            if old_path is None:
                os.environ.pop("PATH", None)
            else:
                os.environ["PATH"] = old_path
        for path, value in reversed(saved):
            _set(path, value)
        _forget_gpu_backend()


def cmake_bin_dir() -> Optional[str]:
    """The folder of the ``cmake`` installed in this Python environment (a gt4py dependency).

    GPU builds need CMake >= 3.25.2 (C++20 for CUDA, which DaCe's headers need);
    Debian 12's system CMake is 3.25.1. DaCe runs ``cmake`` from ``PATH``, so a
    GPU build puts this one first, whether or not the environment is activated.
    """
    try:
        import cmake
    except ImportError:
        return None
    folder = getattr(cmake, "CMAKE_BIN_DIR", None)
    return str(folder) if folder and os.path.isfile(os.path.join(folder, "cmake")) else None


def _forget_gpu_backend() -> None:
    """DaCe caches ``compiler.cuda.backend`` (and the result of probing for it) per process."""
    from dace.codegen import common

    cache_clear = getattr(common.get_gpu_backend, "cache_clear", None)
    if cache_clear is not None:
        cache_clear()


_CUDA_ARCH_ITEM = re.compile(r"^\d{2,3}[af]?(-real|-virtual)?$")


@dataclasses.dataclass(frozen=True)
class GpuTarget:
    """What a ``dace:gpu`` build is compiled for; its canonical form enters the cache key.

    ``cuda_arch`` is a comma-separated list of CUDA architectures as CMake
    spells them (``"90"`` for H100/H200, ``"80"`` for A100, ``"80,90"`` for
    both). It is never probed from a device: a GPU build works on a machine
    without a GPU (``nvcc`` is enough).

    >>> GpuTarget.from_config("sm_90").cuda_arch
    '90'
    >>> GpuTarget.from_config("80; 90").cuda_arch
    '80,90'
    """

    cuda_arch: str

    @classmethod
    def from_config(cls, cuda_arch: Any) -> "GpuTarget":
        """Validate ``DaceConfig.cuda_arch`` (or ``$ORCHESTRA_CUDA_ARCH`` when it is unset)."""
        source = "DaceConfig.cuda_arch"
        if cuda_arch is None or str(cuda_arch).strip() == "":
            cuda_arch, source = os.environ.get(CUDA_ARCH_VARIABLE, ""), CUDA_ARCH_VARIABLE
        text = str(cuda_arch).strip()
        if not text:
            raise ConfigurationError(
                "orchestrating the dace:gpu backend needs the CUDA architecture of the target GPU: "
                "set DaceConfig(cuda_arch=\"90\") (H100/H200; \"80\" A100, \"70\" V100) or "
                f"{CUDA_ARCH_VARIABLE}=90. orchestra never probes a device, so that GPU builds "
                "work on machines without one (FV3_DACEMODE=Build on a login node)"
            )
        items = []
        for item in re.split(r"[,;\s]+", text):
            item = re.sub(r"^(sm_|compute_)", "", item.strip().lower())
            if not item:
                continue
            if not _CUDA_ARCH_ITEM.match(item):
                hint = " (\"native\" would probe the build machine's GPU)" if item == "native" else ""
                raise ConfigurationError(
                    f"{source}={cuda_arch!r}: {item!r} is not a CUDA architecture{hint}; "
                    "use numbers as CMake spells them, e.g. \"90\" or \"80,90\""
                )
            if item not in items:
                items.append(item)
        return cls(",".join(items))

    def settings(self) -> tuple[tuple[tuple[str, ...], object, str], ...]:
        """(config path, value, reason) of the DaCe settings of a GPU build."""
        return (
            (("compiler", "cuda", "backend"), "cuda",
             "NVIDIA; DaCe's 'auto' would probe for a GPU (nvidia-smi)"),
            (("compiler", "cuda", "cuda_arch"), self.cuda_arch,
             "from DaceConfig.cuda_arch; empty would mean 'native', probing the build machine"),
            (("compiler", "cuda", "args"), " ".join(CUDA_ARGS), "see CUDA_ARGS"),
            (("compiler", "cpu", "args"), " ".join(GPU_HOST_ARGS), "see GPU_HOST_ARGS"),
            (("compiler", "cuda", "max_concurrent_streams"), -1,
             "every kernel, copy and pooled allocation on the default stream: Python callbacks "
             "(halo exchanges with cupy, which uses the same stream) see their results in order"),
            (("compiler", "cuda", "default_block_size"), "64,8,1",
             "thread block of kernels without an explicit one: 64 along i (contiguous), 8 along j"),
            (("compiler", "cuda", "mempool_release_threshold"), -1,
             "the stream-ordered pool keeps freed memory for the next call"),
        )

    def dace_extra(self) -> tuple[tuple[tuple[str, ...], object], ...]:
        """The settings as ``extra`` for :func:`dace_settings`."""
        return tuple((path, value) for path, value, _ in self.settings())

    def as_key(self) -> dict[str, Any]:
        """Canonical form: architecture, DaCe settings, nvcc identity."""
        return {
            "cuda_arch": self.cuda_arch,
            "dace_settings": {".".join(path): value for path, value, _ in self.settings()},
            "nvcc": nvcc_identity(),
        }


def nvcc_path() -> Optional[str]:
    """The CUDA compiler CMake will use: ``$CUDACXX``, else ``nvcc`` on the PATH."""
    return os.environ.get("CUDACXX") or shutil.which("nvcc")


@functools.cache
def nvcc_identity() -> str:
    """The release line of ``nvcc --version`` (e.g. ``Cuda compilation tools, release 13.0, V13.0.88``)."""
    exe = nvcc_path()
    if not exe:
        return "absent"
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    lines = [line.strip() for line in out.stdout.splitlines() if "release" in line]
    return lines[0] if lines else "unknown"


def host_args(backend: str) -> tuple[str, ...]:
    """Host compiler flags of an orchestrated build for ``backend`` (CPU builds: with :func:`vector_width_args`
    and :func:`~orchestra.toolchain.sanitizer.sanitize_args`)."""
    return GPU_HOST_ARGS if "gpu" in backend else CPU_ARGS + vector_width_args() + sanitize_args()


def frozen_settings() -> dict[str, object]:
    """The settings as a plain dict, for the cache key and the manifest."""
    return {".".join(path): value for path, value, _ in DACE_SETTINGS}


def gt4py_cxx_flags(chosen: str) -> tuple[str, ...]:
    """The flags orchestra adds to gt4py's C++ builds, given the user's ``GT4PY_EXTRA_COMPILE_ARGS``."""
    debug_info = any(flag.startswith("-g") and flag != GT4PY_NO_DEBUG_INFO for flag in chosen.split())
    return GT4PY_EXTRA_FLAGS if debug_info else (*GT4PY_EXTRA_FLAGS, GT4PY_NO_DEBUG_INFO)


def prepare_gt4py() -> None:
    """Make gt4py's dace backends compile with this DaCe (C++20) and parity flags.

    Works whether or not gt4py was imported already: the environment variable
    covers a later import, the build settings a module already loaded. gt4py's
    stencil ids hash the C++ variable as gt4py's config read it at import; it
    is set to what a later import would read, so that a stencil has one id
    whichever of gt4py and orchestra a process imports first (processes that
    lower stencils for a build, and the cache key, rely on that). Every
    gt4py stencil build of the process then holds its stencil's lock
    (:mod:`orchestra.toolchain.gt4py_builds`: one MPI rank builds, the others wait).
    """
    import sys

    from orchestra.toolchain.gt4py_builds import lock_gt4py_builds

    lock_gt4py_builds()

    gt_config = sys.modules.get("gt4py.cartesian.config")
    for variable, language, flags in (
        ("GT4PY_EXTRA_COMPILE_ARGS", "cxx", gt4py_cxx_flags(os.environ.get("GT4PY_EXTRA_COMPILE_ARGS", ""))),
        ("GT4PY_CARTESIAN_EXTRA_CUDA_COMPILE_ARGS", "cuda", GT4PY_EXTRA_CUDA_FLAGS),
    ):
        current = os.environ.get(variable, "")
        missing = [flag for flag in flags if flag not in current.split()]
        if missing:
            os.environ[variable] = (current + " " + " ".join(missing)).strip()
        if gt_config is not None:
            configured = gt_config.build_settings["extra_compile_args"][language]
            configured.extend(flag for flag in flags if flag not in configured)
            if hasattr(gt_config, variable):  # the value gt4py's stencil ids hash (GT4PY_EXTRA_COMPILE_ARGS)
                setattr(gt_config, variable, os.environ[variable])
    if "gt4py.cartesian.backend.dace_backend" in sys.modules:
        _patch_gt4py_gpu_bindings()


def _patch_gt4py_gpu_bindings() -> None:
    """Let gt4py 1.1.12 compile ``dace:gpu`` stencils (run one by one) with DaCe 2.0.0a10.

    gt4py pastes DaCe's CUDA code into each stencil's bindings and drops every
    ``DACE_EXPORTED ...;`` declaration on the way; DaCe 2.0's CUDA code calls
    its helpers (``__dace_gpu_drain_error``) before defining them, so the
    bindings no longer compile ("identifier is undefined"). The patch declares
    such helpers again, right after the program's state struct.
    """
    from gt4py.cartesian.backend import dace_backend

    codegen = dace_backend.DaCeComputationCodegen
    original = codegen._postprocess_dace_code
    if getattr(original, "__orchestra_patched__", False):
        return

    def postprocess(code_objects: Any, is_gpu: bool) -> str:
        code = original(code_objects, is_gpu)
        return _declare_gpu_helpers(code) if is_gpu else code

    postprocess.__orchestra_patched__ = True  # type: ignore[attr-defined]
    codegen._postprocess_dace_code = staticmethod(postprocess)


_GPU_HELPER = re.compile(r"^(int|void) (__dace_gpu_\w+)\((\w+) \*__state\) \{", re.MULTILINE)
_STATE_STRUCT = re.compile(r"^struct \w+_t \{.*?^\};\n", re.MULTILINE | re.DOTALL)


def _declare_gpu_helpers(code: str) -> str:
    """Declare ``__dace_gpu_*(state*)`` helpers used before their definition (see above)."""
    struct = _STATE_STRUCT.search(code)
    if struct is None:
        return code
    declarations = [
        f"{ret} {name}({state} *__state);"
        for ret, name, state in _GPU_HELPER.findall(code)
        if code.find(f"{name}(") < code.find(f"{ret} {name}({state} *__state) {{")
        and f"{name}({state} *__state);" not in code
    ]
    if not declarations:
        return code
    return code[: struct.end()] + "\n".join(declarations) + "\n" + code[struct.end() :]


@functools.cache
def host_isa() -> str:
    """A digest of this CPU's model and feature flags (``-march=native`` targets them)."""
    model, flags = platform.machine(), ""
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name") and model == platform.machine():
                    model += " " + line.split(":", 1)[1].strip()
                elif line.startswith("flags"):
                    flags = " ".join(sorted(line.split(":", 1)[1].split()))
                    break
    except OSError:
        pass
    return f"{model} [{hashlib.sha256(flags.encode()).hexdigest()[:16]}]"
