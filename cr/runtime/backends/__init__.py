"""Backends shipped with reefkit. Each module imports its framework only inside load()."""
from .base import Backend, InputMismatch, check_inputs, check_options

__all__ = ["Backend", "InputMismatch", "check_inputs", "check_options"]
