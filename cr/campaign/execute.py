"""`python -m cr.campaign.execute`: one job in a process of its own (a worker's GPU jobs).

Reads {"job": CampaignJob.to_dict(), "ref": solution ref, "out_dir": a folder} on stdin,
writes the outcome as JSON on stdout, its raw latencies as side files in out_dir
(cr.campaign.wire.to_files); the environment (CUDA_VISIBLE_DEVICES) is what the worker
gave it.
"""
from __future__ import annotations

import json
import sys


def main() -> int:
    from .jobs import run_here
    from .spec import CampaignJob
    from .wire import to_files

    request = json.loads(sys.stdin.read())
    outcome = run_here(CampaignJob.from_dict(request["job"]), request["ref"], init=False)
    sys.stdout.write(json.dumps(to_files(outcome, request["out_dir"])))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
