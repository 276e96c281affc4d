"""A simulated sglang server and an `nvidia-smi` stand-in, always labelled SIMULATED.

The simulator serves the OpenAI-compatible API with tokens timed from the
roofline (times an efficiency factor), batches continuously, writes an
sglang-style log, exports sglang's Prometheus metrics and can die with a
configured fault. It is gpudeck's demo and a test double for what a CPU box
cannot produce; it never replaces the real-server tests.

Pieces, one idea each:
  config.py      SimConfig: every knob of `gpudeck sim serve`
  hardware.py    how the simulated GPUs introduce themselves to nvidia-smi
  timing.py      step_time_s(batch): roofline ideal / efficiency
  tokens.py      a toy reversible tokenizer and the words the "model" writes
  engine.py      the continuous-batching step loop
  sglang_log.py  the log, in sglang's own line formats
  faults.py      tracebacks of the injectable faults
  metrics.py     the Prometheus registry with sglang's metric names
  state.py       the state file the nvidia-smi stand-in reads
  server.py      the aiohttp app and process lifecycle
  nvidia_smi.py  the stand-in's output (query CSV, -L, the default table)
  shim.py        an executable `nvidia-smi` that calls the stand-in
"""
