"""The call path of a loaded program: what every call checks, binds and costs.

The contract: every call of an orchestrated program computes what ``Python``
mode computes with the same arguments, or raises one error naming the
argument and the fix. On every call:

* :mod:`~orchestra.calls.arguments` binds the arguments (defaults explicit, an
  ``int`` given to a ``float`` parameter is that float) and says which values
  select a program (compile-time arguments by value, arrays by kind);
* :mod:`~orchestra.calls.fast_path` re-marshals only when a data pointer,
  shape or stride changed, and refuses arrays that share memory or do not fit
  the build (a few microseconds per call); an array replaced by one of the
  same layout (time levels swapped) is only repointed (:mod:`~orchestra.calls.repoint`);
* :mod:`~orchestra.calls.mid_call_changes` compares, after a call with
  callbacks, the values a callback could have changed;
* :mod:`~orchestra.calls.callbacks` is ``dace_inhibitor``: what stays in Python.
"""
