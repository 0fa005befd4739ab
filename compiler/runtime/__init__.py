"""Runtime helpers for long and parallel runs."""
