"""Host side of the runtime: runs in `cr` itself, never in the measured child.

    launch.py     run_job(): the child process, its timeout, crash and exit handling
    record.py     the result record (DESIGN.md "Result" contract) and writing it
    benchmark.py  benchmark(): component + backend + params -> job -> child -> record
"""
from .benchmark import benchmark

__all__ = ["benchmark"]
