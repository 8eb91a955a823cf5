"""The build cache's exceptions: one base class, one subclass per way to fail.

Every message names the object involved (a folder, a lock file, a key) and,
where there is one, the fix.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence


class CacheError(Exception):
    """Base class of every error raised by :mod:`orchestra.cache`."""


class CorruptEntry(CacheError):
    """A cache file exists but cannot be read back (unreadable, truncated, invalid).

    ``path`` is the offending file. Callers treat a corrupt entry as a miss;
    ``orchestra cache clean`` removes it.
    """

    def __init__(self, path: Path | str, detail: str) -> None:
        self.path = Path(path)
        self.detail = detail
        super().__init__(f"{self.path}: {detail}")


class CacheLockTimeout(CacheError, TimeoutError):
    """Waiting for another job's build lock took longer than allowed."""

    def __init__(self, lock_path: Path | str, timeout_s: float, holder: str = "") -> None:
        self.lock_path = Path(lock_path)
        self.timeout_s = timeout_s
        self.holder = holder
        held_by = f" (held by {holder})" if holder else ""
        super().__init__(
            f"timed out after {timeout_s:g} s waiting for build lock {self.lock_path}{held_by}; "
            "another job is building this program: wait for it, or raise the timeout"
        )


class CacheMiss(CacheError):
    """No usable build exists for a key.

    ``reason`` says why the lookup failed (no build, interrupted build,
    corrupted library); ``differences`` lists how the closest available build
    differs from what this run needs, as "expected vs found" lines.
    """

    def __init__(
        self,
        program: str,
        key: str,
        reason: str,
        differences: Sequence[str] = (),
        closest_key: str | None = None,
    ) -> None:
        self.program = program
        self.key = key
        self.reason = reason
        self.differences = list(differences)
        self.closest_key = closest_key
        super().__init__(self._message())

    def _message(self) -> str:
        text = f"no usable build of {self.program} (key {self.key[:12]}): {self.reason}"
        if self.closest_key is not None:
            count = len(self.differences)
            text += (
                f"; the closest build {self.closest_key[:12]} differs in {count} input"
                f"{'' if count == 1 else 's'} (this run vs the build): "
                + "; ".join(self.differences)
            )
        return text
