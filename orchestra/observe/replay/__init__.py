"""Record one call of an orchestrated program and replay it standalone.

The contract:

- **Recording** (:mod:`orchestra.observe.replay.record`): with ``ORCHESTRA_RECORD=DIR``
  (``DaceConfig.record``), the ``ORCHESTRA_RECORD_CALL``-th call (default 2,
  counting from 1: the first call after the build or load) of each top-level
  orchestrated program saves into ``DIR/<program>/`` (``DIR/<program>/rank<R>/``
  when the config has a communicator): every library argument before and
  after the call, and for each callback invocation the arrays it changed and
  its return value, plus a manifest naming the build (cache key, entry
  folder, library) with a sha256 of every data file. A recording is written
  into a temporary sibling folder and renamed at the end: a folder under the
  final name is always complete. Recording does not change what the call
  computes. Off, the cost is one attribute test per call.
- **Format** (:mod:`orchestra.observe.replay.recording`): the manifest and its checks;
  no DaCe, no gt4py.
- **Replay** (:mod:`orchestra.observe.replay.replay`, ``orchestra replay DIR``): loads
  the build from the cache (checksums and trust checked), allocates the
  recorded arrays, replaces each callback by a replayer of its recorded
  effects, calls the library (``--repeat N`` times, timed) and with
  ``--check`` compares every array with the recorded ``after`` bit for bit.
  A missing, partial or damaged recording is a :class:`RecordingError` with
  one line saying what is wrong and how to fix it.
"""
