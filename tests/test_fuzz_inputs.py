"""Fuzzing every file the CLI reads: no input may end in a traceback or put a control byte on screen.

For each input kind (a server log for `triage`, nvidia-smi output for `gpus
--parse`, a task board, a profile, a model's config.json, a server's SSE
stream) hypothesis generates 200 inputs (1,000 with GPUDECK_FUZZ=nightly): raw bytes, real samples with
splices of random and hostile bytes, and shuffled real lines. Each goes
through the real command in-process (`console.cli.main` with its streams
captured) or, for the stream, through the bench's HTTP/SSE parser. An
exception that escapes is a traceback; any control character in what a
person would read is a leak. The counts are printed (run with -s to see them)
and every failure is kept with its input, so one run reports them all.

A few inputs of each kind also go through the real CLI as a subprocess.
"""
from __future__ import annotations

import asyncio
import io
import json
import os
import sys
import traceback
from pathlib import Path
from types import SimpleNamespace

from hypothesis import given
from hypothesis import strategies as st

from tests.cli import gpudeck_here, gpudeck_sound
from tests.hostile_text import HOSTILE, unsafe_chars
from tests.fuzz_budget import EXAMPLES, fuzz_settings

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
MODEL_CONFIGS = FIXTURES / "shared" / "model-configs"   # the checkout's copy of ../shared's: a clone alone passes
HOSTILE_BYTES = [t.encode("utf-8", "surrogateescape") for t in HOSTILE] + [b"\xff\xfe", b"\x00", b"\r", b"\xc2\x9b"]



# ---- generated inputs -------------------------------------------------------------------------

def _splice(sample: bytes, edits: list[tuple[int, int, bytes]]) -> bytes:
    out = bytearray(sample)
    for pos, cut, insert in edits:
        at = pos % (len(out) + 1)
        out[at:at + cut] = insert
    return bytes(out)


def mutated(samples: list[bytes]) -> st.SearchStrategy[bytes]:
    """Raw bytes, real samples with splices, and real lines shuffled together with hostile ones."""
    lines = sorted({line for s in samples for line in s.splitlines(keepends=True)}) + \
        [h + b"\n" for h in HOSTILE_BYTES]
    insert = st.one_of(st.binary(max_size=24), st.sampled_from(HOSTILE_BYTES))
    return st.one_of(
        st.binary(max_size=600),
        st.builds(_splice, st.sampled_from(samples),
                  st.lists(st.tuples(st.integers(0, 1 << 20), st.integers(0, 40), insert), max_size=8)),
        st.lists(st.sampled_from(lines), max_size=60).map(b"".join),
    )


JSON_LEAF = st.one_of(st.none(), st.booleans(), st.integers(-(1 << 70), 1 << 70),
                      st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=20),
                      st.sampled_from(HOSTILE))
JSON_VALUE = st.recursive(JSON_LEAF, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                             st.dictionaries(st.text(max_size=10), inner,
                                                                             max_size=4)),
                          max_leaves=8)


# ---- running and counting ---------------------------------------------------------------------

class Tally:
    """Inputs tried, tracebacks, control-byte leaks; the first few failures kept with their input."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.inputs = 0
        self.tracebacks: list[tuple[bytes, str]] = []
        self.leaks: list[tuple[bytes, str]] = []

    def check(self, data, run) -> None:
        self.inputs += 1
        try:
            shown = run(data)
        except Exception:  # noqa: BLE001 - counting every escape is the point
            self.tracebacks.append((data, traceback.format_exc(limit=-4)))
            return
        if unsafe_chars(shown):
            self.leaks.append((data, shown))

    def kinds(self) -> dict[str, int]:
        """Distinct failures (the traceback's last line) with how often each came up."""
        counts: dict[str, int] = {}
        for _, text in self.tracebacks:
            last = text.strip().splitlines()[-1][:160]
            counts[last] = counts.get(last, 0) + 1
        return counts

    def report(self) -> None:
        line = (f"fuzz {self.name}: {self.inputs} inputs, {len(self.tracebacks)} tracebacks, "
                f"{len(self.leaks)} with control bytes on screen")
        for kind, count in self.kinds().items():
            line += f"\n    {count} x {kind}"
        print(line)
        with open(os.environ.get("GPUDECK_FUZZ_REPORT", os.devnull), "a") as fh:
            fh.write(line + "\n")
        assert self.inputs >= EXAMPLES
        assert not self.tracebacks, f"{self.name}: input {self.tracebacks[0][0]!r}\n{self.tracebacks[0][1]}"
        assert not self.leaks, f"{self.name}: input {self.leaks[0][0]!r} showed {self.leaks[0][1]!r}"


def fuzz(name: str, strategy, run, examples: int = EXAMPLES) -> Tally:
    tally = Tally(name)

    @fuzz_settings(examples)
    @given(strategy)
    def body(data):
        tally.check(data, run)

    body()
    tally.report()
    return tally


# ---- the inputs -------------------------------------------------------------------------------

def _samples(folder: Path, limit: int = 4000) -> list[bytes]:
    return [p.read_bytes()[:limit] for p in sorted(folder.iterdir()) if p.is_file() and p.suffix != ".py"]


def test_fuzz_triage(tmp_path):
    from console.commands import triage as command

    path = tmp_path / "server.log"

    def run(data: bytes) -> str:
        path.write_bytes(data)
        # the command's own formatting, with no stream cleaning under it
        out = io.StringIO()
        saved, sys.stdout = sys.stdout, out
        try:
            command.handle(SimpleNamespace(logfile=str(path), json=False))
        finally:
            sys.stdout = saved
        code, cli_out, cli_err = gpudeck_here("triage", str(path))
        shown = cli_out + cli_err
        assert code == 0, shown
        json.loads(gpudeck_here("triage", str(path), "--json")[1])
        return out.getvalue() + shown

    fuzz("triage", mutated(_samples(FIXTURES / "logs")), run)


def _smi_csv() -> st.SearchStrategy[bytes]:
    """CSV rows of gpudeck's query shape (and a header now and then) with any value in any field."""
    field = st.one_of(st.sampled_from(["0", "1", "99", "-1", "1e309", "nan", "inf", "[N/A]", "[Not Supported]",
                                       "P0", "0x0000000000000004", "NVIDIA H100 80GB HBM3", "18544 MiB", "64 %",
                                       "GPU-cc000000-0000-4000-8000-000000000000", "00000000:31:00.0", ""]),
                      st.integers(-(1 << 66), 1 << 66).map(str), st.floats().map(str), st.text(max_size=8),
                      st.sampled_from(HOSTILE))
    row = st.lists(field, min_size=1, max_size=18).map(", ".join)
    header = st.just("index, name, pci.bus_id, utilization.gpu [%], memory.used [MiB], memory.total [MiB], "
                     "temperature.gpu, power.draw [W], power.limit [W], pstate")
    return st.lists(row | header, max_size=12).map(lambda rows: "\n".join(rows).encode("utf-8", "surrogateescape"))


def test_fuzz_gpus_parse(tmp_path):
    import time

    from console.gpus import parse_text
    from console.gpus.text import table

    path = tmp_path / "smi.txt"

    def run(data: bytes) -> str:
        path.write_bytes(data)
        shown = ""
        if b"\0" not in data:
            snap = parse_text(data.decode("utf-8", errors="replace"))
            json.dumps(snap.to_json())
            shown = table(snap, time.time())  # the formatter itself, with no stream cleaning under it
        code, out, err = gpudeck_here("gpus", "--parse", str(path))
        cli_shown = out + err
        assert code in (0, 1), cli_shown
        return shown + cli_shown

    fuzz("gpus --parse", mutated(_samples(FIXTURES / "nvidia-smi")) | _smi_csv(), run)


def _task_toml_samples() -> list[bytes]:
    import tomli_w

    task = {"id": 1, "text": "Rerun 256/512 with EP8", "status": "in_progress", "priority": "high",
            "order": 1.0, "created": "2026-11-30T08:07:06+00:00", "updated": "2026-11-30T08:07:06+00:00",
            "notes": "n", "crash": "c.json", "run": "r.json", "config": "ep8"}
    board = {"version": 1, "next_id": 3, "efficiency_threshold_pct": 10.0, "dismissed": ["k"],
             "suggestions": [{"key": "k2", "text": "Investigate crash", "kind": "crash", "priority": "high"}],
             "tasks": [task, dict(task, id=2, status="pending", priority="low", text="Try flashinfer")]}
    return [tomli_w.dumps(board).encode()]


def _toml_docs(keys: list[str]) -> st.SearchStrategy[bytes]:
    """TOML documents with the schema's keys holding any value (including hostile text)."""
    import tomli_w

    def dump(doc):
        try:
            return tomli_w.dumps(doc).encode()
        except (TypeError, ValueError):
            return b""

    value = st.one_of(JSON_LEAF.filter(lambda v: v is not None and v == v),
                      st.lists(st.integers(-5, 5) | st.text(max_size=8), max_size=3))
    table = st.dictionaries(st.sampled_from(keys) | st.text(max_size=6), value, max_size=8)
    return st.dictionaries(st.sampled_from(keys), value | table | st.lists(table, max_size=3), max_size=8).map(dump)


def test_fuzz_tasks_toml(gpudeck_home):
    from console.store.tasks import tasks_file

    path = tasks_file("local")
    keys = ["version", "next_id", "efficiency_threshold_pct", "dismissed", "suggestions", "tasks", "id", "text",
            "status", "priority", "order", "created", "updated", "notes", "crash", "run", "config", "source",
            "conflict_of", "key", "kind"]

    def run(data: bytes) -> str:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        shown = ""
        for argv in (["tasks", "list", "--all"], ["tasks", "export"], ["tasks", "suggestions"]):
            code, out, err = gpudeck_here(*argv)
            text = out + err
            assert code in (0, 1), text
            shown += text
        code, out, err = gpudeck_here("tasks", "add", "fuzz")
        text = out + err
        if code != 0:
            assert path.read_bytes() == data, "a board it refused was changed"
        return shown + text

    fuzz("tasks TOML", st.one_of(mutated(_task_toml_samples()), _toml_docs(keys)), run)


def test_fuzz_profile_toml(gpudeck_home):
    from profiles import paths

    path = paths.profile_file("fuzzed")
    sample = (b'transport = "ssh"\ndescription = "8x H100"\n[ssh]\nhost = "gpu1"\nuser = "op"\nport = 22\n'
              b'[gpu]\nname = "H100 SXM"\ncount = 8\nsample_interval_ms = 1000\n'
              b'[server]\nscripts_dir = "~/scripts"\nurl = "http://127.0.0.1:30000"\nkill_grace_s = 20\n'
              b'[model]\nname = "GLM-5"\nquant = "nvfp4"\n[ui]\nsimulated = false\n')
    keys = ["transport", "description", "ssh", "host", "user", "port", "config_file", "connect_timeout_s", "gpu",
            "name", "count", "sample_interval_ms", "smi_command", "server", "scripts_dir", "configs", "log_dir",
            "url", "kill_grace_s", "model", "config", "quant", "ui", "simulated", "bench"]

    def run(data: bytes) -> str:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        shown = ""
        for argv in (["profiles", "list"], ["profiles", "show", "fuzzed"]):
            code, out, err = gpudeck_here(*argv)
            text = out + err
            assert code in (0, 1), text
            shown += text
        return shown

    fuzz("profile TOML", st.one_of(mutated([sample]), _toml_docs(keys)), run)


def _config_docs() -> st.SearchStrategy[bytes]:
    """Real config.json files with values swapped for anything, keys dropped, or nested oddities."""
    docs = [json.loads(p.read_text()) for p in sorted(MODEL_CONFIGS.glob("*.json")) if "quant" not in p.name]
    assert docs, f"no model configs in {MODEL_CONFIGS}"

    def edit(doc: dict, changes: list[tuple[int, object]], drops: list[int]) -> bytes:
        doc = json.loads(json.dumps(doc))
        keys = list(doc)
        for index, value in changes:
            doc[keys[index % len(keys)]] = value
        for index in drops:
            doc.pop(keys[index % len(keys)], None)
        return json.dumps(doc).encode()

    return st.builds(edit, st.sampled_from(docs), st.lists(st.tuples(st.integers(0, 200), JSON_VALUE), max_size=4),
                     st.lists(st.integers(0, 200), max_size=3))


def test_fuzz_model_config(tmp_path):
    path = tmp_path / "config.json"
    samples = [p.read_bytes() for p in sorted(MODEL_CONFIGS.glob("*.json"))[:3]]

    def run(data: bytes) -> str:
        path.write_bytes(data)
        code, out, err = gpudeck_here("roofline", "--model-config", str(path), "--gpu", "H100 SXM", "--count", "8",
                                      "--batch", "1,64")
        shown = out + err
        assert code in (0, 1, 2), shown
        return shown

    fuzz("roofline config.json", st.one_of(_config_docs(), mutated(samples)), run)


def _sse_samples() -> list[bytes]:
    chunk = lambda text: f"data: {json.dumps({'choices': [{'text': text}]})}\n\n".encode()  # noqa: E731
    body = b"".join(chunk(t) for t in ("Hello", " world", "!")) + \
        b'data: {"choices":[],"usage":{"completion_tokens":3,"prompt_tokens":5}}\n\ndata: [DONE]\n\n'
    chunked = b"".join(f"{len(part):x}\r\n".encode() + part + b"\r\n" for part in body.split(b"\n\n") if part) + \
        b"0\r\n\r\n"
    return [
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n" + chunked,
        b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n" % len(body) + body,
        b"HTTP/1.1 200 OK\r\nconnection: close\r\n\r\n" + body,
        b'HTTP/1.1 500 Internal Server Error\r\ncontent-length: 40\r\n\r\n{"error":{"message":"\x1b]52;c;aGk=\x07"}}',
        b'HTTP/1.1 200 OK\r\n\r\ndata: {"error": {"message": "[bold red]x"}}\n\n',
    ]


def _responses() -> st.SearchStrategy[bytes]:
    """Responses built from parts: any status line, framing headers with odd values, any body framing."""
    value = st.sampled_from([b"12", b"0", b"-5", b"abc", b"chunked", b"gzip, chunked", b"close", b"",
                             b"99999999999999999999", b" 7 "]) | st.binary(max_size=8)
    header = st.tuples(st.sampled_from([b"content-length", b"Transfer-Encoding", b"connection", b"x-odd"]), value)
    size = st.sampled_from([b"5", b"-5", b"zz", b"0", b"ffffffff", b"3;ext=1", b""]) | st.binary(max_size=4)
    chunk = st.tuples(size, st.binary(max_size=12) | st.sampled_from(HOSTILE_BYTES)).map(
        lambda c: c[0] + b"\r\n" + c[1] + b"\r\n")
    body = st.one_of(mutated(_sse_samples()), st.lists(chunk, max_size=5).map(b"".join))
    status = st.sampled_from([b"HTTP/1.1 200 OK", b"HTTP/1.1 500 Internal Server Error", b"HTTP/1.1 abc",
                              b"HTTP/1.1", b"garbage"]) | st.binary(max_size=12)
    return st.builds(lambda s, hs, b: s + b"\r\n" + b"".join(k + b": " + v + b"\r\n" for k, v in hs) + b"\r\n" + b,
                     status, st.lists(header, max_size=3), body)


def test_fuzz_sse_stream():
    """The bench's HTTP/1.1 + SSE parser, fed generated bytes in generated pieces."""
    from console.bench.client import Live, StreamClient, _SSE
    from console.bench.http1 import ResponseError, StreamingResponse
    from console.bench.metrics import RequestRecord
    from console.commands.bench import format_table

    loop = asyncio.new_event_loop()

    def run(case) -> str:
        data, cuts = case
        done = loop.create_future()
        record = RequestRecord(index=0)
        live = Live()
        sse = _SSE(record.chunk_times, live, 0.0)
        proto = StreamingResponse(b"", sse.feed, done)
        pos = 0
        for cut in sorted(c % (len(data) + 1) for c in cuts) + [len(data)]:
            if done.done():
                break
            proto.data_received(data[pos:cut])
            pos = cut
        if not done.done():
            proto.eof_received()
        if not done.done():
            proto.connection_lost(None)
        assert done.done(), "the parser left the request open after the connection ended"
        exc = done.exception()
        if exc is not None:
            assert isinstance(exc, ResponseError), repr(exc)
            record.error = str(exc)
        elif done.result() != 200:
            text = proto.error_body.decode("utf-8", "replace").strip().replace("\n", " ")
            record.error = f"HTTP {done.result()}: {text[:160]}"
        else:
            StreamClient._finish(SimpleNamespace(live=live), record, sse.tail)
        # what a person reads: the bench table's error column
        level = {"concurrency": 1, "status": "failed" if record.error else "ok", "completed": int(record.ok),
                 "failed": int(not record.ok), "output_throughput": None, "ttft_ms": {"median": None, "p99": None},
                 "tpot_ms": {"median": None, "p99": None}, "itl_ms": {"p99": None},
                 "errors": [record.error] if record.error else [], "server_died": None}
        return format_table({"run_id": "r", "url": "u", "model": "m", "workload": {"input_len": 1, "output_len": 1},
                             "levels": [level], "path": "p"})

    try:
        fuzz("SSE stream", st.tuples(mutated(_sse_samples()) | _responses(),
                                     st.lists(st.integers(0, 1 << 16), max_size=6)), run)
    finally:
        loop.close()


# ---- a small sample through the real CLI --------------------------------------------------------


def test_fuzz_sample_through_the_real_cli(tmp_path, gpudeck_home):
    from console.store.tasks import tasks_file

    path = tmp_path / "input"
    board = tasks_file("local")
    board.parent.mkdir(parents=True, exist_ok=True)
    cases = [
        ("triage", mutated(_samples(FIXTURES / "logs")), lambda: ["triage", str(path)]),
        ("gpus", mutated(_samples(FIXTURES / "nvidia-smi")), lambda: ["gpus", "--parse", str(path)]),
        ("roofline", _config_docs(),
         lambda: ["roofline", "--model-config", str(path), "--gpu", "H100 SXM", "--count", "8"]),
        ("tasks", mutated(_task_toml_samples()), None),
    ]
    for name, strategy, argv in cases:
        tally = Tally(f"{name} (subprocess)")

        def run(data: bytes, argv=argv) -> str:
            if argv is None:
                board.write_bytes(data)
                proc = gpudeck_sound("tasks", "list", "--all", home=gpudeck_home, status=None)
            else:
                path.write_bytes(data)
                proc = gpudeck_sound(*argv(), home=gpudeck_home, status=None)
            shown = proc.stdout + proc.stderr
            assert proc.returncode in (0, 1, 2), shown
            return shown

        @fuzz_settings(8)
        @given(strategy)
        def body(data):
            tally.check(data, run)

        body()
        print(f"fuzz {tally.name}: {tally.inputs} inputs, {len(tally.tracebacks)} tracebacks, "
              f"{len(tally.leaks)} with control bytes on screen")
        assert not tally.tracebacks, f"{name}: input {tally.tracebacks[0][0]!r}\n{tally.tracebacks[0][1]}"
        assert not tally.leaks, f"{name}: input {tally.leaks[0][0]!r} showed {tally.leaks[0][1]!r}"


def test_roofline_fuzz_findings_are_one_line_errors(tmp_path):
    """What the config.json fuzzing found, kept: each gave a traceback before."""
    path = tmp_path / "config.json"
    cases = [("Kimi-K2-Instruct", "q_lora_rank", [[], {}]),              # a list multiplied into a size
             ("Mixtral-8x7B-v0.1", "num_experts_per_tok", 10 ** 30),      # overflows the expert maths
             ("gpt-oss-20b", "num_local_experts", [{"a": 1}]),           # int() of a list
             ("DeepSeek-V3", "quantization_config", {"quant_method": "fp8", "weight_block_size": [1, "a"]}),
             ("DeepSeek-V3", "quantization_config", {"quant_method": "gptq", "group_size": "ab"})]
    for model, key, value in cases:
        doc = json.loads((MODEL_CONFIGS / f"{model}.json").read_text())
        doc[key] = value
        path.write_text(json.dumps(doc))
        code, out, err = gpudeck_here("roofline", "--model-config", str(path), "--gpu", "H100 SXM", "--count", "8")
        shown = out + err
        assert code == 1 and shown.count("\n") == 1 and shown.startswith("gpudeck: "), (model, key, shown)


# ---- Prometheus answers (issue 23) --------------------------------------------------------------

def _prom_series() -> st.SearchStrategy:
    """One result of an instant query: a real DCGM, `up` or scrape-time series, or one with any part swapped."""
    names = ["DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_GPU_TEMP",
             "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_XID_ERRORS", "up", "vllm:num_requests_running",
             "vllm:kv_cache_usage_perc", "sglang:token_usage"]
    text = st.one_of(st.sampled_from(["node-a", "node-b", "10.0.0.1:9400", "0", "1", "dcgm", "GPU-1"]),
                     st.sampled_from(HOSTILE), st.text(max_size=12))
    labels = st.fixed_dictionaries({"__name__": st.sampled_from(names), "instance": text, "Hostname": text,
                                    "gpu": st.sampled_from(["0", "1", "x"]), "job": st.just("dcgm")},
                                   optional={"gpudeck_scrape_ts": st.just("1"), "gpudeck_rate": st.just("vllm"),
                                             "UUID": text, "modelName": text, "pod": text, "GPU_I_ID": text,
                                             "model_name": text})
    number = st.one_of(st.sampled_from(["0", "1", "55", "-1", "1e308", "NaN", "+Inf", "-Inf", "abc", ""]),
                       st.floats().map(str), st.integers(-(1 << 70), 1 << 70).map(str))
    good = st.builds(lambda m, v: {"metric": m, "value": [1764600000.0, v]}, labels, number)
    swapped = st.builds(lambda s, key, value: {**s, key: value}, good, st.sampled_from(["metric", "value"]),
                        JSON_VALUE)
    return st.one_of(good, good, swapped, JSON_VALUE)


def _prom_answers() -> st.SearchStrategy[tuple[bytes, bytes]]:
    """(answer to every query, answer to the targets API): shaped ones, odd ones and bytes."""
    def doc(data) -> bytes:
        return json.dumps({"status": "success", "data": data}).encode()

    vector = st.lists(_prom_series(), max_size=12).map(lambda r: doc({"resultType": "vector", "result": r}))
    matrix = st.lists(JSON_VALUE, max_size=4).map(lambda r: doc({"resultType": "matrix", "result": r}))
    target = st.one_of(st.builds(lambda lab, i: {"labels": lab, "scrapeInterval": i},
                                 st.dictionaries(st.sampled_from(["instance", "job"]), JSON_VALUE | st.text(),
                                                 max_size=2),
                                 st.sampled_from(["1s", "15s", "1m30s", "", "9" * 400 + "s"]) | JSON_VALUE),
                       JSON_VALUE)
    targets = st.lists(target, max_size=4).map(lambda t: doc({"activeTargets": t}))
    other = st.one_of(JSON_VALUE.map(lambda v: json.dumps(v).encode()), JSON_VALUE.map(doc),
                      st.sampled_from([b"[" * 5000, b"", b"\xff\xfe", b'{"status": "error", "error": "\x1b[2J"}']))
    samples = [doc({"resultType": "vector", "result": [{"metric": {"__name__": "up", "instance": "a:1"},
                                                        "value": [1.0, "1"]}]})]
    answer = st.one_of(vector, vector, matrix, other, mutated(samples))
    return st.tuples(answer, st.one_of(targets, other))


def test_fuzz_prometheus_answers():
    """Every answer shape through the fleet's reader, the CLI table and --json: no traceback, no control byte."""
    import httpx

    from console.gpus.fleet_table import host_lines
    from console.gpus.prometheus import PrometheusError, PrometheusFleet, PromSettings
    from widgets.fleet_servers import server_cells

    loop = asyncio.new_event_loop()
    current: dict[str, bytes] = {}

    def handler(request: httpx.Request) -> httpx.Response:
        body = current["targets"] if request.url.path.endswith("/targets") else current["answer"]
        return httpx.Response(200, content=body, headers={"content-type": "application/json"})

    transport = httpx.MockTransport(handler)

    def run(case) -> str:
        current["answer"], current["targets"] = case

        async def go() -> str:
            fleet = PrometheusFleet(PromSettings(url="http://prometheus.test"), transport=transport)
            try:
                sample = await fleet.sample()
                json.dumps(sample.to_json(), allow_nan=True)
                shown = "\n".join(host_lines(sample))
                # the fleet view's server rows, as its widget makes them
                shown += "".join("\n" + " ".join(c.plain for c in server_cells(s)) for s in sample.servers)
                try:
                    await fleet.history("DCGM_FI_DEV_GPU_UTIL")
                except PrometheusError as exc:
                    shown += f"\n{exc}"
                return shown
            finally:
                await fleet.close()

        return loop.run_until_complete(go())

    try:
        fuzz("Prometheus answers", _prom_answers(), run)
    finally:
        loop.close()
