"""Campaigns: many launch configs against one sweep, driven unattended by a detached process.

- `spec`     the campaign file (configs, grid, sweep, SLOs, policy)
- `grid`     derived launch scripts: a base script with some flags changed
- `state`    the campaign's saved state, its lock and its driver's liveness
- `runner`   the loop: launch, wait, sweep, stop, check the GPUs, save
- `control`  create, spawn, stop, resume, and the view the Campaign tab draws
- `compare`  the answer: best numbers per config, crashes, the winner or a tie under the SLOs
"""
