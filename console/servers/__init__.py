"""Inference servers on a host: launch configs, detached lifecycle, logs, crash records.

- `records`  what gpudeck remembers about each launch (for re-attach after a restart)
- `configs`  the launch scripts a profile names or its scripts_dir holds
- `lifecycle` launch detached, poll state, readiness, clean kill, adopt
- `logtail`  follow a log by byte offset through the Host, resuming after drops
- `procs`    inference processes, ports and GPU memory already in use on the host
- `crashes`  crash records saved under the profile
"""
