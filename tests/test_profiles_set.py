"""`gpudeck profiles set`: the keys named change, the rest of the profile's file stays."""
from __future__ import annotations

import json
import shlex

import pytest

from console.cli import main
from console.roofline.from_profile import how_to_set, inputs_from_profile
from profiles import paths, store


@pytest.fixture
def lab(tmp_path):
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    assert main(["profiles", "add", "lab", "--local", "--url", "http://127.0.0.1:30000",
                 "--scripts-dir", str(scripts), "--log-dir", str(tmp_path / "logs")]) == 0
    return paths.profile_file("lab")


def _from_hint(hint: str, config: str) -> list[str]:
    """The Roofline tab's command with its placeholders filled in, as an operator would type it."""
    argv = shlex.split(hint.replace("PATH/config.json", config).replace("GPU NAME", "H200").replace("=N", "=8"))
    assert argv[:2] == ["gpudeck", "profiles"]
    return argv[1:]


def test_the_roofline_hint_sets_model_and_gpus_and_keeps_the_server_section(lab, shared_dir, capsys):
    hint = how_to_set(inputs_from_profile(store.load("lab")))
    config = str(shared_dir / "model-configs" / "GLM-5.json")
    assert main(_from_hint(hint, config)) == 0
    profile = store.load("lab")
    assert (profile.model.config, profile.gpu.name, profile.gpu.count) == (config, "H200", 8)
    assert profile.server.url == "http://127.0.0.1:30000" and profile.server.scripts_dir and profile.server.log_dir
    capsys.readouterr()
    assert main(["roofline", "--profile", "lab", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["model"]["name"]


@pytest.mark.parametrize("assignment, says", [
    ("model.cfg=/x", "'model.cfg' is not a profile key"),
    ("gpu.count=eight", "gpu.count: expected an integer"),
    ("gpu.count=-1", "gpu.count': expected a count of 0 or more"),
    ("ui.simulated=maybe", "ui.simulated: expected true or false"),
    ("model.config=/nowhere/config.json", "model.config: model '/nowhere/config.json' not found"),
    ("model.quant_config=/nowhere/q.json", "model.quant_config: no such file"),
    ("server.scripts_dir=/nowhere/scripts", "server.scripts_dir: no such folder"),
    ("server.url", "expected KEY=VALUE"),
])
def test_a_wrong_key_value_or_path_is_refused_and_the_file_is_untouched(lab, capsys, assignment, says):
    before = lab.read_bytes()
    assert main(["profiles", "set", "lab", "gpu.name=H200", assignment]) == 2
    err = capsys.readouterr().err
    assert says in err and len(err.strip().splitlines()) == 1
    assert lab.read_bytes() == before


def test_an_empty_value_removes_the_key(lab):
    assert main(["profiles", "set", "lab", "server.url=", "gpu.count=4", "bench.concurrency=1,2,8"]) == 0
    profile = store.load("lab")
    assert profile.server.url is None and profile.server.scripts_dir and profile.gpu.count == 4
    assert profile.bench.concurrency == "1,2,8"


def test_profiles_add_refuses_a_model_config_that_does_not_exist(lab, capsys):
    before = lab.read_bytes()
    assert main(["profiles", "add", "lab", "--force", "--local", "--model-config", "/nowhere/config.json"]) == 2
    assert "not found" in capsys.readouterr().err
    assert lab.read_bytes() == before
