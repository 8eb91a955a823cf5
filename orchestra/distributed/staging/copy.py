"""Copying a build into the node-local area, verified against the shared manifest.

The files staged are the ones a load reads: the library, DaCe's stub
library, the signature SDFG (the full program SDFG only when a build has no
signature) and DaCe's ``FOLDER_MODE`` note. Each is read once from the shared
folder, hashed while it is read, written to a temporary folder in the area,
and the folder is renamed into place only when every sha256 matched the
manifest: a half-copied or mismatching build is never seen under its name.
The manifest is staged too (so the ranks of the node need not read the
shared one); a staged copy is reused only if its manifest is the shared
manifest, byte for byte, and every file matches it.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Optional

from orchestra.cache.durable import sha256_file
from orchestra.cache.layout import MANIFEST_NAME, library_path_in
from orchestra.cache.manifest import Manifest

_CHUNK = 1 << 20

#: DaCe's note of how the build folder is laid out (read by its loader; not checksummed).
FOLDER_MODE = "FOLDER_MODE"
_FOLDER_MODES = ("development", "production")


class StagingError(Exception):
    """The shared entry cannot be staged: ``reason`` says why, in lookup's words."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def files_to_stage(manifest: Manifest) -> dict[str, str]:
    """The files a load reads, by path relative to the entry, with their sha256."""
    files = {manifest.library: manifest.checksum}
    for name, digest in manifest.files.items():
        if name == "program.sdfgz" and "signature.sdfgz" in manifest.files:
            continue  # the load reads the small signature, not the whole program
        files[name] = digest
    return files


def damage_of(folder: Path, manifest: Manifest) -> Optional[str]:
    """Why the staged copy ``folder`` is not the build ``manifest`` describes; None if every file matches."""
    try:
        staged_manifest = (folder / MANIFEST_NAME).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return f"{MANIFEST_NAME} unreadable"
    if staged_manifest != manifest.to_json():
        return f"{MANIFEST_NAME} differs from the shared build's"
    for name, expected in sorted(files_to_stage(manifest).items()):
        path = library_path_in(folder, name)
        if not path.is_file():
            return f"{name} missing"
        if sha256_file(path) != expected:
            return f"{name} differs from the shared build (sha256)"
    mode = folder / FOLDER_MODE
    if mode.exists() and _folder_mode(mode) is None:
        return f"{FOLDER_MODE} unreadable"
    return None


def copy_verified(shared: Path, files: dict[str, str], target: Path, library: str) -> None:
    """Copy ``files`` from ``shared`` into the empty folder ``target``, each checked against its sha256.

    ``library`` names the library among ``files`` (for the message).

    Raises :class:`StagingError` on a missing or mismatching file (the shared build is damaged).
    """
    for name, expected in sorted(files.items()):
        source, destination = library_path_in(shared, name), library_path_in(target, name)
        destination.parent.mkdir(parents=True, exist_ok=True)
        try:
            digest = _copy_hashing(source, destination)
        except FileNotFoundError as error:
            raise StagingError(f"{name} missing") from error
        if digest != expected:
            what = "library" if name == library else name
            raise StagingError(f"{what} checksum mismatch: file corrupted or truncated")
        os.chmod(destination, 0o700 if name.endswith(".so") else 0o600)
    mode = _folder_mode(shared / FOLDER_MODE)
    if mode is not None:
        (target / FOLDER_MODE).write_text(mode + "\n", encoding="ascii")


def _copy_hashing(source: Path, destination: Path) -> str:
    digest = hashlib.sha256()
    with open(source, "rb") as reader, open(destination, "wb") as writer:
        while chunk := reader.read(_CHUNK):
            digest.update(chunk)
            writer.write(chunk)
    return digest.hexdigest()


def _folder_mode(path: Path) -> Optional[str]:
    """The folder mode written in ``path`` if it is one DaCe knows; None if absent or unknown."""
    try:
        text = path.read_text(encoding="ascii", errors="replace").strip()
    except OSError:
        return None
    return text if text in _FOLDER_MODES else None
