"""Grid flags are matched by every name the server accepts: `-c` is `--ctx-size` to llama.cpp."""
from __future__ import annotations

import pytest

from console.campaign.grid import GridError, derive
from console.campaign.spec import from_dict
from console.servers.launch import parse_script

BASE = "#!/bin/sh\nexec llama-server -m /m.gguf -c 1024 -t 1 --parallel 1 --port 8080\n"


def test_a_short_flag_is_accepted_by_the_campaign_file_and_replaced_in_place():
    spec = from_dict({"sweep": {"levels": [1]}, "grid": [{"base": "smol", "flags": {"-c": [512, 2048]}}]})
    assert spec.grids[0].flags == {"-c": [512, 2048]}
    out = derive(BASE, {"-c": 2048})
    assert out == BASE.replace("-c 1024", "-c 2048")


def test_a_long_alias_changes_the_short_spelling_instead_of_adding_a_second_one():
    out = derive(BASE, {"--ctx-size": 4096, "-np": 4})
    assert "--ctx-size" not in out and "-c 4096" in out and "--parallel 4" in out
    assert parse_script(out).raw_flags["c"] == "4096"


def test_a_contradiction_is_refused_in_the_script_and_in_the_grid():
    with pytest.raises(GridError, match="sets --ctx-size 2048 and -c 1024"):
        derive("#!/bin/sh\nexec llama-server -m /m.gguf -c 1024 --ctx-size 2048\n", {"-c": 512})
    with pytest.raises(GridError, match="-c and --ctx-size are one setting to llama.cpp"):
        derive(BASE, {"-c": 512, "--ctx-size": 1024})
    both = derive("#!/bin/sh\nexec llama-server -m /m.gguf -c 1024 --ctx-size 1024\n", {"--ctx-size": 8})
    assert "-c 8 --ctx-size 8" in both       # said twice alike: both places change together
