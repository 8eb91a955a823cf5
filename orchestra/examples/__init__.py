"""Small example models orchestra is tested and benchmarked with, each runnable as a module.

``python -m orchestra.examples.diffusion`` runs a model with everything an
orchestrated program meets (a sub-step loop, callbacks, a nested component,
horizontal regions, a vertical sweep) in the mode ``FV3_DACEMODE`` names.
"""
