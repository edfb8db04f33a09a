"""Campaigns: a matrix of solutions x settings x platform targets, run by an executor found
by name in the entry-point group cr.executors: `local` (one job at a time on this machine)
and `dask` (across machines on a cr cluster: `cr scheduler`, `cr worker`) ship with reefkit.

    spec          the campaign component -> CampaignJobs with content-hash ids
    coordinator   what to run, storing each job's results once, the journal, the summary
    journal       the append-only record of what happened to each job
    executors     the executor contract (Executor, Option) and its registry
    runner        run_campaign and friends: an executor chosen, driven over a Run
    local         the local executor
    dask_executor the cluster executor (named dask): dispatch, retries, workers that leave
    cluster       the `cr scheduler` and `cr worker` processes: queue, slots, who ran what
    link          the cluster's wire: JSON headers and bytes over TCP or mutual TLS, never pickle
    -- what every executor reuses:
    jobs          running one job on this machine: init + the declared actions
    placement     which machine can run which job; what a machine offers, what a job needs
    wire          the job's payload and the outcome's wire form (latencies as bytes)
    worker        a worker's side: archive check and cache, GPU slots, running a payload
    execute       one job in a process of its own (GPU jobs)

Nothing here imports Dask: the cluster speaks cr's own wire (docs/security.md).
"""
