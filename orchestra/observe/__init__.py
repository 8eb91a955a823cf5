"""Seeing what a run did: timings, the kernel profile, the first-call line, record and replay.

The contract: observation never changes what a program computes, and costs
nothing unless switched on. ``ORCHESTRA_TIMINGS=1`` times every call
(:mod:`~orchestra.observe.timings`); ``ORCHESTRA_PROFILE=kernels`` builds an
instrumented variant and reports each stencil's time and traffic at exit
(:mod:`~orchestra.observe.kernel_profile`); each job's first call says in one
line what it built and found (:mod:`~orchestra.observe.first_call_report`);
``ORCHESTRA_RECORD`` saves one call to replay it without the model
(:mod:`~orchestra.observe.replay`).
"""
