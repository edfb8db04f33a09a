"""Platform detection: what machine this is (or was, for files captured from one).

    from cr.platform import current, detect
    here = current()                      # this host, detected once per process
    pi = detect("captures/rpi4")          # a machine captured as files (no tool runs)
    here.fingerprint                      # 16 hex digits over the stable facts
    here.markers()                        # PEP 508 environment, for recipe/solution markers
    "cuda" in here.capabilities()

This package imports only the standard library (and cr.errors, cr.events); detection on
this host takes milliseconds unless nvidia-smi is there to ask.
"""
from .detect import DEFAULT_TIMEOUT, capture, current, detect
from .model import Accelerator, Android, Cpu, Jetson, Platform

__all__ = ["DEFAULT_TIMEOUT", "Accelerator", "Android", "Cpu", "Jetson", "Platform", "capture", "current", "detect"]
