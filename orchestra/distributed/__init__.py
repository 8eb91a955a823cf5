"""Builds over MPI ranks: who builds which code path, how the others wait, and how a build reaches every node.

The contract: obtaining a program is collective and never hangs. Ranks are
grouped into code-path classes; one rank per class builds, the others wait
without spinning and load (:mod:`~orchestra.distributed.coordinator`); every
rank checks that the build it loads matches its own key, and ranks of one
class must agree on their inputs before anything is built
(:mod:`~orchestra.distributed.key_agreement`). A failure on any rank raises on
every rank with that rank's message. Every byte goes through
:mod:`~orchestra.distributed.metered`; OpenMP threads are a rank's share of its
node (:mod:`~orchestra.distributed.threads`); one rank per node stages a build
into node-local storage for the others (:mod:`~orchestra.distributed.staging`).
"""
