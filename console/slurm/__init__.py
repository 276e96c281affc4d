"""Slurm: a partition read as a fleet, a launch run as an sbatch job, a stop as `scancel`.

gpudeck builds no scheduler: every action is a Slurm command run on the
profile's host (the login node, local or over SSH), always under `timeout`
(`sinfo` hangs while `slurmctld` is down).

  run.py       one Slurm command on the login node, bounded in time and in output
  hostlist.py  `n[1-3,7]` expanded to node names
  nodes.py     `scontrol show node -o -d` + `squeue` parsed into node rows
  jobs.py      `scontrol show job -o` parsed; sbatch, scancel
  job_ids.py   the one rule for a job id (sbatch's, scontrol's, a record's)
  ending.py    a job's end (state, exit code, who cancelled) as process evidence
  accounting.py  a forgotten job's end from `sacct`, where the cluster keeps accounting
  launch.py    a launch script as a job: submit, follow, stop
  ownership.py  whether the job under a record's id is still that launch's (name, user, launch id)
  unanswered.py  a live job Slurm did not answer about: unknown, never taken for ended
  ranks.py     per-rank logs of a multi-node job, readiness and crash per rank
"""
