"""`e`, the equivalent command (k9s's habit): the Server tab names what launching the selected
config runs (the CLI line, the host command with its ssh wrapping, the server command), the Bench
tab the `gpudeck bench ...` line of its form; each line parses or runs as shown."""
from __future__ import annotations

import shlex
import subprocess

from console.bench.process import cli_argv
from console.cli import build_parser
from console.servers.equivalent import host_command, launch_equivalent, over_ssh
from profiles.profile import profile_from_dict
from screens.app import GpudeckApp
from screens.equivalent import Equivalent
from tests.harness import wait_until


def test_the_host_command_does_what_a_launch_does(tmp_path, monkeypatch):
    """Run as shown, the script runs from its own folder, detached, its output in the launch's log,
    with the launch id in its environment; a `~/` log path is read against the home."""
    monkeypatch.setenv("HOME", str(tmp_path))
    folder = tmp_path / "my scripts"
    folder.mkdir()
    script = folder / "run tp8.sh"
    script.write_text('#!/bin/sh\necho "in $(pwd) as $GPUDECK_LAUNCH_ID"\n')
    script.chmod(0o755)
    (tmp_path / "logs").mkdir()
    profile = profile_from_dict("local", {})
    command = host_command(profile, "tp8", str(script), "~/logs/tp8-1.log", "tp8-1")
    assert over_ssh(profile, command) == command   # a local profile: no ssh
    subprocess.run(["sh", "-c", command], cwd="/", check=True, timeout=10)
    log = tmp_path / "logs" / "tp8-1.log"
    done = subprocess.run(["sh", "-c", f'for i in $(seq 100); do [ -s "{log}" ] && exit 0; sleep 0.1; done; exit 1'],
                          timeout=30)
    assert done.returncode == 0, "the script never wrote its log"
    assert log.read_text() == f"in {folder} as tp8-1\n"


def test_ssh_and_slurm_profiles_wrap_the_same_steps():
    ssh = profile_from_dict("gpu1", {"transport": "ssh", "ssh": {"host": "gpu1", "user": "op", "port": 2222}})
    lines = dict(launch_equivalent(ssh, "tp8 a", "/opt/run.sh", server_argv=["vllm", "serve", "m", "--tp", "8"]))
    cli = lines["the same from the command line"]
    assert vars(build_parser().parse_args(shlex.split(cli)[1:]))["config"] == "tp8 a"
    remote = shlex.split(next(v for k, v in lines.items() if k.startswith("on the host")))
    assert remote[:4] == ["ssh", "-p", "2222", "op@gpu1"]
    assert remote[4].startswith("cd /opt && GPUDECK_LAUNCH_ID=tp8_a-") and "setsid ./run.sh >> " in remote[4]
    assert lines["the server command in the script"] == "vllm serve m --tp 8"
    slurm = profile_from_dict("cl", {"transport": "ssh", "ssh": {"host": "login"},
                                     "slurm": {"enabled": True, "partition": "gpu"}})
    job = dict(launch_equivalent(slurm, "tp8", "/opt/run.sh"))
    remote = shlex.split(next(v for k, v in job.items() if k.startswith("on the host")))
    assert remote[0] == "ssh" and remote[1] == "login"
    sbatch = shlex.split(remote[2])
    assert sbatch[0] == "sbatch" and sbatch[-1] == "/opt/run.sh"
    assert "--partition=gpu" in sbatch and "--chdir=/opt" in sbatch and "--job-name=gpudeck-tp8" in sbatch


def test_the_bench_line_is_one_the_cli_takes():
    values = {"url": "http://127.0.0.1:8000", "levels": "1,4,16", "num_prompts": "4c", "input_len": "512",
              "output_len": "64", "api": "chat"}
    argv = cli_argv(values, "gpu1")
    assert argv[:2] == ["gpudeck", "bench"] and "--events" not in argv
    args = build_parser().parse_args(argv[1:])
    assert (args.url, args.concurrency, args.prompts_per_stream, args.input_len, args.output_len, args.api,
            args.bench_profile) == ("http://127.0.0.1:8000", "1,4,16", 4, 512, 64, "chat", "gpu1")


def _dialog_text(app) -> str:
    return "\n".join(str(w.render()) for w in app.screen.query("Static"))


async def test_e_on_the_server_and_bench_tabs_at_100x30(demo_world):
    app = GpudeckApp(profile_name="demo")
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, app.started.is_set, what="the console started")
        await pilot.press("2")
        server = app.panes["server"]
        await wait_until(pilot, lambda: server.selected is not None, what="a config selected")
        config = server._selected_config()
        await pilot.press("e")
        await wait_until(pilot, lambda: isinstance(app.screen, Equivalent), what="the commands")
        text = _dialog_text(app)
        assert f"gpudeck server launch {config.name} -p demo" in text
        assert f"setsid ./{config.script.rsplit('/', 1)[-1]}" in text and "a launch now would run" in text
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, Equivalent), what="the dialog closed")
        await pilot.press("3")
        bench = app.panes["bench"]
        await wait_until(pilot, lambda: bool(bench.query_one("BenchForm").values().get("url")), what="the form")
        await pilot.press("e")
        await wait_until(pilot, lambda: isinstance(app.screen, Equivalent), what="the bench line")
        line = app.screen.lines[0][1]
        values = bench.query_one("BenchForm").values()
        args = build_parser().parse_args(shlex.split(line)[1:])
        assert (args.url, args.concurrency, args.bench_profile) == (values["url"], values["levels"], "demo")
        assert line in _dialog_text(app)


def test_a_config_that_ran_names_its_launch_and_log():
    from console.store.launches import LaunchRecord

    profile = profile_from_dict("local", {})
    record = LaunchRecord(id="tp8-20261207-101500", config="tp8", script="/opt/run.sh",
                          log="/var/log/g/tp8-20261207-101500.log", exit_file="/var/log/g/tp8-20261207-101500.log.exit")
    lines = dict(launch_equivalent(profile, "tp8", "run.sh", record))
    command = lines["on the host (ran as launch tp8-20261207-101500)"]
    assert command == ("cd /opt && GPUDECK_LAUNCH_ID=tp8-20261207-101500 setsid ./run.sh "
                       ">> /var/log/g/tp8-20261207-101500.log 2>&1 < /dev/null &")
