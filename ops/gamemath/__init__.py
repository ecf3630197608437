"""Game math by enumeration and the monitor's statistical tests (floats allowed: probabilities, not money)."""
