"""Campaigns: many launch configs against one sweep, driven unattended by a detached process.

- `spec`     the campaign file (configs, grid, sweep, SLOs, policy)
- `grid`     derived launch scripts: a base script with some flags changed
- `files`    reading a file without trusting what sits at the path (regular, under a cap)
- `state`    the campaign's saved state: its one typed reader, ids and the paths built from them
- `lock`     one campaign per machine and port, keyed by the host's identity
- `driver`   which process is the driver: pid, start time and the token written at spawn
- `runner`   the loop: launch, wait, sweep, stop, check the GPUs, save
- `control`  create, spawn, stop, resume, and the view the Campaign tab draws
- `compare`  the answer: best numbers per config, crashes, the winner or a tie under the SLOs
"""
