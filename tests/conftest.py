"""Suite-wide settings: hypothesis profiles (select with HYPOTHESIS_PROFILE=<name>).

- "default": deterministic examples, no per-example deadline (a first compile takes ~0.2 s of clang).
- "fuzz-long": random examples for the long differential fuzz (see docs/robustness.md).
"""

from hypothesis import HealthCheck, settings

settings.register_profile("default", deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("fuzz-long", deadline=None, derandomize=False, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile("default")
