"""A server's log is hostile input (issue 39: args no flag can hold, lines over 1 MiB).

Real parts: a log file on disk appended while it is followed, by `gpudeck server
logs -f` (its own process) and by the runtime's ServerMonitor, on this machine and
over a real sshd. A value that is no number reads `unreadable` and is named; a line
over LINE_LIMIT comes cut, with a marker; following goes on either way, so a fatal
line later is seen.
"""
from __future__ import annotations

import asyncio
import queue
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from console.servers.launch import effective_from_log
from console.servers.monitor import ServerMonitor
from console.session import HostSession
from console.store import launches
from profiles import store
from tests.realparts import ROOT

LINE_LIMIT = 1 << 20       # console.hosts.base.LINE_LIMIT: the longest line a stream hands on whole
UNREADABLE = "unreadable"  # console.servers.launch.table.UNREADABLE
WAIT_S = 60.0  # a guard against a hang on a busy machine, not a measure: each wait ends on its event
LOGS = Path(__file__).parent / "fixtures" / "logs"
LONG = b"x" * (2 * LINE_LIMIT + 123)   # one line of 2 MiB and a bit, with no newline in it
BIG = "9" * 5000


def cascade() -> list[str]:
    """A real sglang log: its args (line 1), ready (line 5), an illegal address later (line 15)."""
    return (LOGS / "sglang-illegal-address-cascade.log").read_text().splitlines(keepends=True)


# ---- item 2: args no flag can hold --------------------------------------------------------------

@pytest.mark.parametrize("value", ["1e999", "'inf'", "float('inf')", BIG, "-" + BIG, "'nan'"],
                         ids=["1e999", "inf", "call", "5000-digits", "minus-5000-digits", "nan"])
def test_a_vllm_args_line_with_a_value_no_flag_can_hold_reads_unreadable(value):
    line = f"INFO 05-11 10:00:01 [cli_args.py:325] non-default args: {{'model': 'm', 'tensor_parallel_size': {value}}}"
    found = effective_from_log([line])
    assert found is not None and found.flags["model"] == "m"
    if value == "float('inf')":   # a call is text, as written
        assert found.flags["tp"] == "float('inf')" and found.unreadable == []
    else:
        assert found.flags["tp"] == UNREADABLE and found.unreadable == ["tensor_parallel_size"]


def test_an_sglang_and_a_llama_cpp_log_with_numbers_too_wide_name_them():
    sglang = effective_from_log(["server_args=ServerArgs(model_path='m', tp_size=1e999, mem_fraction_static=1e400, "
                                 "port=30000, enable_ep_moe=True)"])
    assert (sglang.flags["tp"], sglang.flags["ep"], sglang.flags["mem_fraction"]) == (UNREADABLE,) * 3
    assert sglang.flags["port"] == 30000 and sorted(sglang.unreadable) == ["mem_fraction_static", "tp_size"]
    llama = effective_from_log(["load_model: loading model 'm.gguf'",
                                f"load_model: initializing, n_slots = {BIG}, n_ctx_slot = 1024",
                                f"main: server is listening on http://127.0.0.1:{BIG} - starting the main loop"])
    assert llama.flags["model"] == "m.gguf"
    assert (llama.flags["max_running"], llama.flags["context_length"], llama.flags["port"]) == (UNREADABLE,) * 3
    assert sorted(llama.unreadable) == ["context_length", "max_running", "port"]


# ---- the monitor follows a real log being appended ----------------------------------------------

class Appended:
    """A launch whose log the test appends to, watched by a ServerMonitor on a real host."""

    def __init__(self, profile, tmp_path: Path) -> None:
        self.log = tmp_path / "server.log"
        self.log.write_text("")
        self.sleeper = subprocess.Popen(["sleep", "300"], start_new_session=True)
        self.record = launches.LaunchRecord(id="hostile-1", config="hostile", script=None, log=str(self.log),
                                            exit_file=None, pid=self.sleeper.pid, pgid=self.sleeper.pid,
                                            state="loading")
        launches.save(profile.name, self.record)
        self.session = HostSession.open(profile)
        self.lines: list[str] = []
        self.changed = asyncio.Event()
        self.monitor = ServerMonitor(self.session, self.record, on_lines=self._lines,
                                     on_state=lambda r: self.changed.set(), poll_s=0.2)
        self.task = asyncio.create_task(self.monitor.run())

    def _lines(self, batch: list[str]) -> None:
        self.lines.extend(batch)
        self.changed.set()

    def write(self, data: bytes) -> None:
        with self.log.open("ab") as fh:
            fh.write(data)

    async def until(self, predicate, what: str) -> None:
        async def wait():
            while not predicate():
                self.changed.clear()
                if self.task.done():
                    self.task.result()   # the monitor's own end says why
                    pytest.fail(f"the monitor ended before {what}", pytrace=False)
                await asyncio.wait({asyncio.ensure_future(self.changed.wait()), self.task},
                                   return_when=asyncio.FIRST_COMPLETED)
        try:
            await asyncio.wait_for(wait(), WAIT_S)
        except asyncio.TimeoutError:
            pytest.fail(f"timed out waiting for {what}", pytrace=False)

    async def close(self) -> None:
        self.sleeper.kill()
        self.sleeper.wait()
        await asyncio.wait_for(self.task, WAIT_S)
        await self.session.host.close()


def _profile(request, where: str):
    return store.load("local") if where == "local" else request.getfixturevalue("ssh_profile")


@pytest.mark.parametrize("where", ["local", "ssh"])
async def test_the_monitor_reads_past_bad_args_and_a_long_line_to_the_fatal_line(request, tmp_path, where):
    """Args with `tp_size=1e999`, then a 2 MiB line, then the server readies and hits an illegal
    address: the flags say `unreadable`, the long line comes cut, ready and the crash are seen."""
    lines = cascade()
    assert lines[0].startswith("[2025-06-02 13:58:01] server_args=ServerArgs(") and "tp_size=8" in lines[0]
    watched = Appended(_profile(request, where), tmp_path)
    try:
        watched.write(lines[0].replace("tp_size=8", "tp_size=1e999").encode() + LONG + b"\n")
        await watched.until(lambda: watched.monitor.effective is not None and len(watched.lines) >= 2,
                            "the args and the long line")
        assert watched.monitor.effective["tp"] == UNREADABLE and watched.monitor.effective["port"] == 30000
        assert watched.record.effective["tp"] == UNREADABLE   # saved with the launch
        cut = watched.lines[1]
        assert cut.endswith(f" … [line cut: {len(LONG):,} bytes, the first {LINE_LIMIT:,} shown]")
        assert cut.startswith("x" * 100) and len(cut) < LINE_LIMIT + 100

        watched.write("".join(lines[1:]).encode())
        await watched.until(lambda: watched.record.crash_class is not None, "the illegal address")
        await watched.until(lambda: len(watched.lines) == len(lines) + 1, "every line handed on")
        assert watched.record.ready_at is not None
        assert watched.record.crash_class == "cuda-illegal-address"
        assert len(watched.lines) == len(lines) + 1 and watched.lines[2] == lines[1].rstrip("\n")
        assert watched.monitor.tail.offset == watched.log.stat().st_size
        assert watched.monitor.unreadable_lines == 0 and watched.monitor.tail_failures == 0
    finally:
        await watched.close()


async def test_a_line_a_reader_cannot_take_is_skipped_and_following_goes_on(tmp_path, monkeypatch):
    """Whatever a reader of lines raises on one line, the next lines are still read and handed on."""
    from console.servers.triage import Triage

    real = Triage.feed

    def feed(self, line):
        if "poison" in line:
            raise RuntimeError("a reader's own bug")
        return real(self, line)

    monkeypatch.setattr(Triage, "feed", feed)
    lines = cascade()
    watched = Appended(store.load("local"), tmp_path)
    try:
        watched.write(b"poison\n" + "".join(lines).encode())
        await watched.until(lambda: watched.record.crash_class is not None, "the illegal address")
        assert watched.record.crash_class == "cuda-illegal-address"
        assert watched.monitor.unreadable_lines == 1
        assert watched.monitor.last_log_problem == "a log line could not be read (RuntimeError)"
    finally:
        await watched.close()


async def test_a_tail_that_fails_is_followed_again_from_its_offset(tmp_path, monkeypatch):
    """The tail itself raises once, after the first line (any bug in reading a stream): the monitor
    follows again from where it was, and every line comes once, up to the fatal one."""
    from console.servers.logtail import LogTail

    real = LogTail.lines
    failed = []

    async def lines(self, follow=True):
        async for line in real(self, follow):
            yield line
            if not failed:
                failed.append(line)
                raise RuntimeError("a stream's own bug")

    monkeypatch.setattr(LogTail, "lines", lines)
    log_lines = cascade()
    watched = Appended(store.load("local"), tmp_path)
    try:
        watched.write("".join(log_lines).encode())
        await watched.until(lambda: watched.record.crash_class is not None, "the illegal address")
        await watched.until(lambda: len(watched.lines) == len(log_lines), "every line")
        assert watched.record.crash_class == "cuda-illegal-address"
        assert watched.lines == [line.rstrip("\n") for line in log_lines]
        assert watched.monitor.tail_failures == 1 and failed == [log_lines[0].rstrip("\n")]
    finally:
        await watched.close()


# ---- item 3: `server logs -f` and a line over 1 MiB ---------------------------------------------

def test_server_logs_follow_cuts_a_long_line_and_goes_on(tmp_path):
    log = tmp_path / "server.log"
    log.write_text("before\n")
    launches.save("local", launches.LaunchRecord(id="r1", config="cfg", script=None, log=str(log),
                                                exit_file=None, state="stopped"))
    follow = subprocess.Popen([sys.executable, "-m", "console", "server", "logs", "cfg", "-f", "-n", "1"],
                              cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [out.put(line) for line in follow.stdout], daemon=True).start()

    def next_line() -> bytes:
        try:
            return out.get(timeout=WAIT_S)
        except queue.Empty:
            follow.kill()
            pytest.fail(f"`server logs -f` printed nothing more; stderr: {follow.stderr.read()[-2000:]!r}",
                        pytrace=False)
    try:
        assert next_line() == b"before\n"
        with log.open("ab") as fh:
            fh.write(LONG + b"\nafter the long line\n")
        cut = next_line()
        assert cut.endswith(f" … [line cut: {len(LONG):,} bytes, the first {LINE_LIMIT:,} shown]\n".encode())
        assert cut.startswith(b"x" * 100)
        assert next_line() == b"after the long line\n"
        assert follow.poll() is None   # still following
    finally:
        follow.kill()
        follow.wait()
    assert b"Traceback" not in follow.stderr.read()


async def test_a_tail_over_ssh_cuts_a_long_line_and_resumes_after_it(ssh_profile, tmp_path):
    from console.hosts import SSHHost
    from console.servers.logtail import LogTail

    log = tmp_path / "server.log"
    log.write_bytes(b"before\n" + LONG + b"\nafter\n")
    host = SSHHost(ssh_profile)
    tail = LogTail(host, str(log), retry_s=0.2)
    seen: list[str] = []
    try:
        async def read() -> None:
            async for line in tail.lines(follow=False):
                seen.append(line)
        await asyncio.wait_for(read(), WAIT_S)
    finally:
        await host.close()
    assert [seen[0], seen[2]] == ["before", "after"] and len(seen) == 3, [s[:20] for s in seen]
    assert seen[1].endswith(f" … [line cut: {len(LONG):,} bytes, the first {LINE_LIMIT:,} shown]")
    assert tail.offset == log.stat().st_size and tail.drops == 0


def test_the_names_above_are_the_consoles():
    from console.hosts import base
    from console.servers.launch import table

    assert (base.LINE_LIMIT, table.UNREADABLE) == (LINE_LIMIT, UNREADABLE)
