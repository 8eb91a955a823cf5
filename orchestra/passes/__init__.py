"""SDFG passes of the optimization stage; each runs alone on an SDFG."""
