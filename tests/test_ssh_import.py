"""asyncssh is imported with a quicker search for liboqs, and finds exactly what ctypes' search finds.

The search (console/hosts/ssh_import.py) looks where the dynamic loader looks
before letting ctypes run the compiler and linker; wherever a library could
be loaded from, the answer must be ctypes' own, and asyncssh must offer the
same key exchanges either way.
"""
from __future__ import annotations

import ctypes.util
import os
import shutil
import subprocess
import sys

import pytest

from console.hosts.ssh_import import ASKED, quick_find_library
from tests.realparts import ROOT

NAMES = ["c", "m", "z", "ssl", "crypto", *ASKED, "gpudeck-no-such-library"]


@pytest.mark.parametrize("name", NAMES)
def test_the_quick_search_answers_as_ctypes_does(name):
    assert quick_find_library(name) == ctypes.util.find_library(name)


def test_a_library_on_ld_library_path_is_found_as_ctypes_finds_it(tmp_path):
    real = ctypes.util.find_library("z")
    assert real, "the test needs zlib installed"
    source = next(p for d in ("/lib", "/usr/lib", "/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu",
                              "/usr/lib/aarch64-linux-gnu", "/lib/aarch64-linux-gnu")
                  if os.path.exists(p := os.path.join(d, real)))
    shutil.copy(source, tmp_path / "libgpudeckprobe.so.1")
    os.symlink("libgpudeckprobe.so.1", tmp_path / "libgpudeckprobe.so")
    code = ("import ctypes.util, sys; from console.hosts.ssh_import import quick_find_library; "
            "print(quick_find_library('gpudeckprobe'), ctypes.util.find_library('gpudeckprobe'))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True,
                         env=dict(os.environ, LD_LIBRARY_PATH=str(tmp_path)))
    quick, plain = out.stdout.split()
    assert quick == plain and plain != "None"


def test_asyncssh_offers_the_same_key_exchanges_and_ctypes_is_left_as_it_was():
    probe = ("import asyncssh.crypto.pq as pq, ctypes.util; from asyncssh.kex import get_kex_algs; "
             "print(pq.mlkem_available, pq.sntrup_available, pq._oqs_lib, len(get_kex_algs()), "
             "ctypes.util.find_library.__module__)")
    plain = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    quick = subprocess.run([sys.executable, "-c", "from console.hosts.ssh_import import import_asyncssh; "
                            "import_asyncssh(); " + probe], cwd=ROOT, capture_output=True, text=True, check=True)
    assert quick.stdout == plain.stdout and quick.stdout.split()[-1] == "ctypes.util"
