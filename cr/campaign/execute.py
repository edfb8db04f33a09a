"""`python -m cr.campaign.execute`: one job in a process of its own (a worker's GPU jobs).

Reads {"job": Job.to_dict(), "ref": solution ref} on stdin, writes the outcome as JSON on
stdout; the environment (CUDA_VISIBLE_DEVICES) is what the worker gave it.
"""
from __future__ import annotations

import json
import sys


def main() -> int:
    from .jobs import run_here
    from .spec import Job

    request = json.loads(sys.stdin.read())
    outcome = run_here(Job.from_dict(request["job"]), request["ref"], init=False)
    sys.stdout.write(json.dumps(outcome))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
