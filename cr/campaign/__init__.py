"""Campaigns: a matrix of solutions x settings x platform targets, run by an executor found
by name in the entry-point group cr.executors: `local` (one job at a time on this machine)
and `dask` (across machines on a Dask cluster) ship with reefkit.

    spec          the campaign component -> CampaignJobs with content-hash ids
    coordinator   what to run, storing each job's results once, the journal, the summary
    journal       the append-only record of what happened to each job
    executors     the executor contract (Executor, Option) and its registry
    runner        run_campaign and friends: an executor chosen, driven over a Run
    local         the local executor
    dask_executor the Dask executor: dispatch, retries, workers that leave
    cluster       the `cr scheduler` and `cr worker` processes, and the Dask job function
    -- what every executor reuses:
    jobs          running one job on this machine: init + the declared actions
    placement     which machine can run which job; what a machine offers, what a job needs
    wire          the job's payload and the outcome's wire form (latencies as bytes)
    worker        a worker's side: archive check and cache, GPU slots, running a payload
    execute       one job in a process of its own (GPU jobs)

Nothing imports Dask until the Dask executor, the scheduler or a worker runs.
"""
