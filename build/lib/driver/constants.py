"""Physical constants of the shallow-water test cases (Williamson et al. 1992, table 1)."""

#: Earth radius (m).
RADIUS = 6.37122e6

#: Gravitational acceleration (m s-2).
GRAVITY = 9.80616

#: Earth's angular velocity (s-1).
OMEGA = 7.292e-5

#: Seconds per day.
SECONDS_PER_DAY = 86400.0
