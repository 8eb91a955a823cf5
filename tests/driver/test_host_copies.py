"""driver.host_copies on host arrays and on abstract device arrays (cupy arrays: tests/gpu)."""

import numpy as np

from driver.host_copies import set_from_host, to_host
from orchestra.pipeline.abstract_arrays import AbstractArray


def test_host_arrays_are_read_in_place_and_written_through_the_index():
    field = np.zeros((4, 5, 2))
    assert to_host(field) is field  # no copy on the host
    set_from_host(field, (slice(1, 3), slice(0, 5)), np.arange(10.0).reshape(2, 5)[..., None])
    assert np.array_equal(field[1:3, :, 1], np.arange(10.0).reshape(2, 5))
    assert not field[0].any() and not field[3].any()


def test_a_gpu_build_job_writes_initial_conditions_into_abstract_arrays_without_reading_them():
    field = AbstractArray((4, 5, 2), np.float64)
    set_from_host(field, ..., np.ones((4, 5, 2)))  # dropped: there is nothing to write to
    assert field.shape == (4, 5, 2)
