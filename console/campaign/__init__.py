"""Campaigns: many launch configs against one sweep, driven unattended by a detached process.

- `spec`     the campaign file (configs, grid, sweep, SLOs, policy)
- `grid`     derived launch scripts: a base script with some flags changed
- `lock`     one campaign per machine and port, keyed by the host's identity
- `driver`   which process is the driver: pid, start time and the token written at spawn
- `runner`   the loop: launch, wait, sweep, stop, check the GPUs, save
- `control`  create, spawn, stop, resume, and the view the Campaign tab draws
- `compare`  the answer: per config and level the mean and CI, crashes, a winner only beyond the noise
- `stats`    means and 95% CIs from repeats and per-request samples; differences between configs
- `order`    repeats visited in rotated rounds (A B C, C A B, ...) so drift hits every config alike
- `samples`  the per-request samples a level keeps, read from the load generator's requests file
- `conditions` the host's load, GPU clocks and temperatures when each cell was measured
- `pareto`   the throughput / interactivity frontier across configs; `svg` draws it for the report
- `flag_names` every name a server accepts for one flag (`-c` is `--ctx-size`)
- `cut_runs` a sweep the driver's death cut short is marked interrupted
"""
