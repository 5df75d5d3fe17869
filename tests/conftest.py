"""Settings every test module shares."""

from __future__ import annotations

from hypothesis import settings

# No per-example time limit: a property test asserts behaviour, not speed (speed is
# measured in bench/), and a loaded CI machine must not turn a slow example into a
# failure. Tests that need fewer or more examples still say so with @settings.
settings.register_profile("cortex_memory", deadline=None)
settings.load_profile("cortex_memory")
