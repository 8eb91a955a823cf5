"""GPU tests: compile-only builds everywhere nvcc exists, runtime tests on a GPU."""


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs an NVIDIA GPU, cupy and nvcc (skipped otherwise)")
