"""The runtime: what runs inside the measured process (DESIGN.md "Action", "Backend", "Scenario").

Device side (imports only the standard library, numpy and the chosen framework):

    registry.py    backends registered under the entry-point group ``cr.backends``; validation
    backends/      the Backend contract (base.py) and the shipped backends: null, onnxruntime
    inputs.py      input providers: batches built and pre-loaded outside the timed region
    stats.py       latency statistics (percentiles, IQR, noise flag, throughput, peak RSS)
    scenarios.py   the timed loops: single-stream, multi-stream, offline, server
    harness.py     Settings + benchmark(): warm-up, a scenario, statistics, validity
    model.py       where a model's file is (meta ``file`` or an installed package's ``source``)
    child.py       the child process: reads a job, runs its action entry, writes the result
    actions/       action entries run by the child (``benchmark``)

Host side (``cr.runtime.host``, never imported by the child): job launching with
timeout/crash handling, the benchmark orchestration and the result record.

Nothing here is imported by ``cr --help``; numpy and frameworks are imported only by the
modules that need them, when they run.
"""
