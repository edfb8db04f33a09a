"""Campaigns: a matrix of solutions x settings x platform targets, run one job at a time on
this machine (cr.campaign.local) or across machines on a Dask cluster (cr.campaign.dask_executor).

    spec         the campaign component -> jobs with content-hash ids
    jobs         running one job here: platform check, init + declared actions
    coordinator  what to run, storing each job's results once, the journal, the summary
    journal      the append-only record of what happened to each job
    local        the local executor
    dask_executor the Dask executor: placement, dispatch, retries
    cluster      the `cr scheduler` and `cr worker` processes and the worker's job function
    execute      one job in a process of its own (GPU jobs)

Nothing imports Dask until the Dask executor, the scheduler or a worker runs.
"""
