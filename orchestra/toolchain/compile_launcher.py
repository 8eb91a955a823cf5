"""A C++ compile answered from a store of objects when the same input was compiled before.

CMake runs this file as the C++ compiler launcher of orchestra's builds
(``CMAKE_CXX_COMPILER_LAUNCHER``, see :mod:`orchestra.toolchain.object_cache`)::

    python -I compile_launcher.py --store DIR --limit-mb N --owners UID,... -- COMPILER ARGS...

It uses the standard library only (it starts once per compiled file). For a
plain compile (``-c SOURCE -o OBJECT``) it preprocesses the source with the
same flags and hashes what the compiler will see: the preprocessed text, the
flags that are not the preprocessor's, the source's file name, and what the
compiler driver says it will run (``-###``: its version, the programs it calls,
``-march=native`` spelled out for this CPU), with the size and time of each of
those programs. An object stored under that digest is copied to ``OBJECT``
after its content is checked against the digest in its name; otherwise the
compiler runs as asked and its object is stored. Anything else runs the
compiler unchanged and keeps nothing: linking, several sources, unusual flags,
objects that record the build's paths (debug information, profiling,
coverage), a store that is not this user's, root's or a trusted owner's, or
that everyone may write.

The dependency file that Ninja reads (``-MD -MT -MF``) is written by the
preprocessing run, so a reused object has one too. The store keeps at most
``--limit-mb`` megabytes: after an object is stored, the least recently used
ones go until three quarters of that remain.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
import subprocess
import sys
from typing import Optional

FORMAT = "orchestra compile launcher 1"
#: Written in the folder compiles run in: one line per compiled file, ``reused NAME`` or ``compiled NAME``.
RECORD_NAME = "orchestra_objects.txt"
_SOURCE_SUFFIXES = (".cpp", ".cc", ".cxx", ".c++", ".C")
#: The preprocessor's options: their effect is in the preprocessed text (value in the next argument or joined).
_PREPROCESSOR_VALUED = ("-I", "-D", "-U", "-isystem", "-iquote", "-idirafter", "-include", "-imacros", "-iprefix",
                        "-iwithprefix", "-iwithprefixbefore", "-isysroot", "-imultilib")
#: Other options whose value is the next argument (kept in the digest with it).
_VALUED = ("--param", "-Xassembler", "-Xlinker", "-target", "-arch", "-mllvm", "-Xclang")
_DEPENDENCY_VALUED = ("-MT", "-MF", "-MQ")
_DEPENDENCY_FLAGS = ("-MD", "-MMD", "-MP")
#: Flags under which the object records the build's paths: such a compile runs as asked, nothing kept.
_PATH_DEPENDENT = ("-g", "-fprofile", "-ftest-coverage", "--coverage", "-fdebug-prefix-map", "-ffile-prefix-map")
#: Flags this launcher does not answer for (another output than an object, or input from elsewhere).
_PASS_THROUGH = ("-E", "-S", "-M", "-MM", "-x", "-", "-save-temps", "-fsyntax-only", "-wrapper", "-Xpreprocessor")
#: The driver's temporary files (``/tmp/ccAbC123.s``), named anew by every run.
_TEMPORARY = re.compile(r"\S*/cc[A-Za-z0-9]{6}\.\w+")


class _Compile:
    """A plain compile of one C++ source into one object, as the launcher reads it."""

    def __init__(self, compiler: list[str], source: str, output: str, kept: list[str], preprocess: list[str]) -> None:
        self.compiler, self.source, self.output = compiler, source, output
        self.kept = kept  # flags that are not the preprocessor's, in order
        self.preprocess = preprocess  # the command that preprocesses (and writes the dependency file)
        # an object that names the build's folder would never be reused by a later build
        self.reusable = not any(flag.startswith(_PATH_DEPENDENT) and flag != "-g0" for flag in kept)


def _read(command: list[str]) -> Optional[_Compile]:
    """``command`` (compiler first) as a plain compile, or None when the launcher does not answer for it."""
    compiler, args = command[:1], command[1:]
    source = output = None
    compiling = False
    kept: list[str] = []
    preprocess: list[str] = []
    index = 0
    while index < len(args):
        arg = args[index]
        valued = arg in _PREPROCESSOR_VALUED or arg in _DEPENDENCY_VALUED or arg in _VALUED or arg == "-o"
        value = args[index + 1] if valued and index + 1 < len(args) else None
        if valued and value is None:
            return None
        if arg in _PASS_THROUGH or arg.startswith("@") or arg.startswith("-Wp,"):
            return None
        if arg == "-c":
            compiling = True
        elif arg == "-o":
            output = value
        elif arg in _PREPROCESSOR_VALUED or arg in _DEPENDENCY_VALUED:
            preprocess += [arg, value]
        elif arg.startswith(("-I", "-D", "-U")) or arg in _DEPENDENCY_FLAGS:
            preprocess.append(arg)
        elif arg in _VALUED:
            kept += [arg, value]
            preprocess += [arg, value]
        elif not arg.startswith("-"):
            if source is not None or not arg.endswith(_SOURCE_SUFFIXES):
                return None
            source = arg
        else:
            kept.append(arg)
            preprocess.append(arg)
        index += 2 if valued else 1
    if not compiling or source is None or output is None:
        return None
    if any(flag in preprocess for flag in _DEPENDENCY_FLAGS) and "-MF" not in preprocess:
        return None  # the dependency file would be named after the object: not written by preprocessing
    return _Compile(compiler, source, output, kept, compiler + preprocess + ["-E", "-P", source])


def _programs_digest(compile_: _Compile) -> Optional[bytes]:
    """What the driver will run for these flags (``-###``), with each program's size and time; None if unreadable."""
    probe = compile_.compiler + compile_.kept + ["-###", "-c", os.path.basename(compile_.source), "-o", "probe.o"]
    try:
        said = subprocess.run(probe, capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.SubprocessError):
        return None
    if said.returncode != 0:
        return None
    lines = [_TEMPORARY.sub("TEMPORARY", line) for line in said.stderr.splitlines() if not line.startswith("COLLECT_")]
    parts = ["\n".join(lines)]
    for line in lines:
        if line.startswith(" "):  # a command the driver runs: its program, quoted by the driver
            program = line.split()[0].strip('"')
            path = program if os.path.isabs(program) else shutil.which(program)
            if path is None:
                return None
            info = os.stat(path)
            parts.append(f"{os.path.realpath(path)} {info.st_size} {info.st_mtime_ns}")
    return "\n".join(parts).encode()


def _digest(compile_: _Compile) -> Optional[str]:
    """The digest of everything the object depends on; None when it cannot be read (then it is not stored)."""
    programs = _programs_digest(compile_)
    if programs is None:
        return None
    digest = hashlib.sha256()
    for part in (FORMAT, "\0".join(compile_.compiler + compile_.kept), os.path.basename(compile_.source)):
        digest.update(part.encode() + b"\0")
    digest.update(programs + b"\0")
    try:
        with subprocess.Popen(compile_.preprocess, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL) as process:
            for chunk in iter(lambda: process.stdout.read(1 << 20), b""):
                digest.update(chunk)
    except OSError:
        return None
    return digest.hexdigest() if process.returncode == 0 else None


def _trusted(path: str, owners: set[int]) -> bool:
    """Owned by a trusted user and not writable by everyone."""
    try:
        info = os.stat(path)
    except OSError:
        return False
    return info.st_uid in owners and not info.st_mode & stat.S_IWOTH


def _file_digest(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for chunk in iter(lambda: stream.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _stored(store: str, key: str, owners: set[int]) -> Optional[str]:
    """The stored object of ``key`` whose content matches the digest in its name (others removed), or None.

    The store itself is trusted (:func:`launch` asks before preprocessing); here its sub-folder and the file.
    """
    folder = os.path.join(store, key[:2])
    if not _trusted(folder, owners):
        return None
    for name in sorted(os.listdir(folder)):
        if not (name.startswith(key + ".") and name.endswith(".o")):  # not another writer's partial file
            continue
        path = os.path.join(folder, name)
        if _trusted(path, owners) and name == f"{key}.{_file_digest(path)[:16]}.o":
            return path
        _remove(path)  # damaged, or not ours to trust
    return None


def _store(store: str, key: str, output: str, limit_mb: int) -> None:
    """Keep ``output`` under ``key``, atomically; then trim the store to three quarters of ``limit_mb``."""
    folder = os.path.join(store, key[:2])
    os.makedirs(folder, exist_ok=True)
    target = os.path.join(folder, f"{key}.{_file_digest(output)[:16]}.o")
    partial = f"{target}.{os.getpid()}.partial"
    try:
        shutil.copyfile(output, partial)
        os.replace(partial, target)
    finally:
        _remove(partial)  # gone after the rename; left by a failed copy otherwise
    _trim(store, limit_mb * 1024 * 1024)


def _trim(store: str, limit: int) -> None:
    entries = []
    for folder in os.scandir(store):
        if folder.is_dir(follow_symlinks=False) and len(folder.name) == 2:
            for entry in os.scandir(folder.path):
                if entry.name.endswith(".o"):
                    try:
                        info = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    entries.append((info.st_mtime_ns, info.st_size, entry.path))
    total = sum(size for _, size, _ in entries)
    if total <= limit:
        return
    for _, size, path in sorted(entries):
        if total <= limit * 3 // 4:
            break
        _remove(path)
        total -= size


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass


def _reuse(stored: str, output: str) -> bool:
    """Copy the stored object to ``output`` (atomically) and mark it used; False if it vanished meanwhile."""
    partial = f"{output}.{os.getpid()}.partial"
    try:
        shutil.copyfile(stored, partial)
        os.replace(partial, output)
    except OSError:
        _remove(partial)
        return False
    try:
        os.utime(stored)
    except OSError:
        pass
    return True


def _record(outcome: str, source: str) -> None:
    """One line in the working folder's :data:`RECORD_NAME` (the build folder, where Ninja runs compiles)."""
    try:
        with open(RECORD_NAME, "a") as record:
            record.write(f"{outcome} {os.path.basename(source)}\n")
    except OSError:
        pass


def launch(store: str, limit_mb: int, owners: set[int], command: list[str]) -> int:
    """Run ``command`` (a compiler and its arguments), answered from ``store`` where it can be; its exit status."""
    try:
        compile_ = _read(command)
        key = _digest(compile_) if compile_ is not None and compile_.reusable and _trusted(store, owners) else None
        stored = _stored(store, key, owners) if key is not None else None
    except Exception:  # a defect here must not cost the compile: it runs as asked, nothing kept
        compile_ = key = stored = None
    if stored is not None and _reuse(stored, compile_.output):
        _record("reused", compile_.source)
        return 0
    status = subprocess.call(command)
    if status == 0 and compile_ is not None:
        _record("compiled", compile_.source)
        if key is not None:
            try:
                _store(store, key, compile_.output, limit_mb)
            except OSError:  # a full or read-only store costs only the reuse
                pass
    return status


def main(argv: list[str]) -> int:
    try:
        split = argv.index("--")
        options, command = argv[:split], argv[split + 1:]
        values = dict(zip(options[0::2], options[1::2]))
        store, limit_mb = values["--store"], int(values["--limit-mb"])
        owners = {int(uid) for uid in values["--owners"].split(",") if uid}
    except (ValueError, KeyError):
        sys.stderr.write("usage: compile_launcher.py --store DIR --limit-mb N --owners UID,... -- COMPILER ARGS...\n")
        return 2
    if not command:
        sys.stderr.write("compile_launcher.py: no compiler command after --\n")
        return 2
    return launch(store, limit_mb, owners, command)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
