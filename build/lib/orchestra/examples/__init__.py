"""Small example models orchestra is tested and benchmarked with."""
