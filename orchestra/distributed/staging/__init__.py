"""Node-local staging: one reader per node takes a build from the shared cache.

Without staging, every rank of a job opens, checksums and ``dlopen``-s its
build in the shared cache folder: at thousands of ranks, tens of thousands of
opens and gigabytes read from one folder of a parallel file system at the
same moment. With staging (the default for MPI jobs), the load step of
:func:`orchestra.pipeline.obtain.load_entry` goes through
:func:`load_through_node`:

1. the ranks of one node (an MPI shared-memory split, :mod:`.nodes`) share
   their keys; for each key the node needs, its lowest rank is the node's
   *reader* of that key;
2. the reader, under a per-key lock in the node-local area (:mod:`.area`),
   checks the shared entry the way a lookup does (``COMPLETE`` marker,
   manifest, files present, trusted), then copies the files a load reads into
   the node-local area, hashing them as it reads: each file is read once from
   the shared folder and its sha256 compared with the manifest before the copy
   is renamed into place (:mod:`.copy`). A staged copy left on the node by an
   earlier job is used only if every file's sha256 matches the shared
   manifest; a damaged one is logged and replaced;
3. every rank of the node checks that the staged folder is trusted (owned by
   this user, nobody else may write it, no symbolic links) and loads it;
4. once every rank of the node has loaded (the libraries stay mapped), the
   reader removes the staged copy and its lock: nothing is left in
   node-local storage, whatever happens to the job afterwards.

Shared-file-system operations per job are thus proportional to nodes times
builds, not to ranks. Failures keep orchestra's rule: a reader that fails
reports to the ranks of its node, and the load step raises the same error on
every rank of the job (:meth:`orchestra.distributed.coordinator.BuildCoordinator.collectively`).

Settings (environment, read at load time):

* ``ORCHESTRA_NODE_LOCAL_DIR``: where the node-local area lives (default
  ``/dev/shm`` when writable, else ``$TMPDIR`` or ``/tmp``); orchestra uses
  the folder ``orchestra-<uid>`` in it. ``none`` turns staging off: every rank
  loads from the shared cache, as a single process always does.
* ``ORCHESTRA_RANKS_PER_NODE``: for tests and experiments, split each real
  node further into groups of that many consecutive ranks (pretend nodes).
"""

from orchestra.distributed.staging.area import NODE_LOCAL_DIR_VARIABLE, StagingArea, staging_area_from_environment
from orchestra.distributed.staging.load import load_through_node
from orchestra.distributed.staging.nodes import RANKS_PER_NODE_VARIABLE, node_communicator

__all__ = [
    "NODE_LOCAL_DIR_VARIABLE",
    "RANKS_PER_NODE_VARIABLE",
    "StagingArea",
    "load_through_node",
    "node_communicator",
    "staging_area_from_environment",
]
