"""A campaign's state has one owner (`console.campaign.owner`): it alone writes the ending and the
driver's identity, and every view reads its driver through it, so a driver that has exited is
never shown running (the walk saw `finished ● driver running` and `stopped ● driver running`)."""
from __future__ import annotations

import ast
import re
import subprocess
import sys
import time
from pathlib import Path

from console.campaign import driver
from console.store import campaigns as st
from tests.realparts import ROOT

ENDINGS = ("finished", "stopped", "failed")   # console.campaign.owner.ENDINGS
ENDING_FIELDS = {"finished_at", "driver_pid", "driver_start", "driver_token", "driver_host"}
OWNER = ROOT / "console" / "campaign" / "owner.py"
SHOWN_RUNNING = re.compile(r"(finished|stopped|failed)\s+● driver running")


def _assigned(target: ast.expr) -> list[ast.Attribute]:
    if isinstance(target, (ast.Tuple, ast.List)):
        return [a for t in target.elts for a in _assigned(t)]
    return [target] if isinstance(target, ast.Attribute) else []


def _constants(value: ast.expr | None) -> list[str]:
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        return [value.value]
    if isinstance(value, (ast.Tuple, ast.List)):
        return [c for v in value.elts for c in _constants(v)]
    return []


def writes_of_the_campaign_state(path: Path) -> list[str]:
    """Each place in a file that writes a campaign's ending or its driver: `x.status = "stopped"`
    (any ending: finished, stopped, failed; a simulator's own `self.status` aside), `x.finished_at = …`,
    `x.driver_pid = …` and the driver's other fields, or a `setattr` of one of them."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name
    found = []
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        value = None
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets, value = [node.target], node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr" \
                and len(node.args) >= 2 and _constants(node.args[1]):
            name = _constants(node.args[1])[0]
            if name in ENDING_FIELDS or name == "status":
                found.append(f"{where}:{node.lineno} setattr {name}")
            continue
        for target in targets:
            for attr in _assigned(target):
                mine = isinstance(attr.value, ast.Name) and attr.value.id == "self"
                ending = attr.attr == "status" and not mine and \
                    any(c in ENDINGS for c in _constants(value))
                if attr.attr in ENDING_FIELDS or ending:
                    found.append(f"{where}:{node.lineno} {attr.attr}")
    return found


def test_only_the_owner_writes_a_campaigns_ending_or_its_driver():
    from console.campaign import owner

    assert owner.ENDINGS == ENDINGS
    files = [p for folder in ("console", "screens", "widgets") for p in sorted((ROOT / folder).rglob("*.py"))]
    others = [w for p in files if p != OWNER for w in writes_of_the_campaign_state(p)]
    assert others == [], "written outside console/campaign/owner.py:\n" + "\n".join(others)
    assert len(writes_of_the_campaign_state(OWNER)) >= 4    # the walk sees the owner's own writes


def test_the_walk_finds_a_second_writer(tmp_path):
    """The check above can fail: the two writers the runners had are each found."""
    sample = tmp_path / "second_writer.py"
    sample.write_text('def end(state):\n    state.status, state.note = "stopped", "by hand"\n'
                      '    state.finished_at = 1.0\n    cell.status = "done"\n')
    assert [w.split()[-1] for w in writes_of_the_campaign_state(sample)] == ["status", "finished_at"]


# ---------------------------------------------------------------- the driver as the views show it

class FakeDriver:
    """A process proven as a campaign's driver (it carries the token), which exits when told."""

    def __init__(self) -> None:
        self.token = driver.new_token()
        self.proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                                     stdin=subprocess.PIPE, env={driver.TOKEN_ENV: self.token})

    def adopt(self, state: st.CampaignState) -> None:
        state.driver_pid, state.driver_token = self.proc.pid, self.token
        state.driver_start = driver.start_ticks(self.proc.pid)

    def exit(self, reap: bool = True) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        if reap:
            self.proc.wait(30)


def _ended_campaign(status: str, fake: FakeDriver) -> st.CampaignState:
    from console.campaign.spec import from_dict
    from profiles import store
    from profiles.profile import profile_from_dict

    store.save(profile_from_dict("box", {"transport": "local"}))
    spec = from_dict({"sweep": {"levels": [1], "repeats": 1}, "config": [{"name": "a"}, {"name": "b"}]})
    state = st.CampaignState(id=st.new_id("box"), profile="box", spec=spec.to_json(), cells=[
        st.Cell(name="a", base="a", status="done", started_at=10.0, ended_at=20.0,
                rounds=[{"levels": [], "started_at": 10.0, "ended_at": 20.0}]),
        st.Cell(name="b", base="b", status="interrupted" if status == "stopped" else "done")])
    fake.adopt(state)
    state.status, state.finished_at = status, time.time()   # as its driver wrote it, before it exits
    st.save(state)
    return state


async def _header_until_the_driver_is_gone(status: str, reap: bool) -> tuple[str, str]:
    from console.session import HostSession
    from profiles import store
    from screens.campaign_pane import CampaignPane
    from tests.harness import HostApp, wait_until

    fake = FakeDriver()
    try:
        state = _ended_campaign(status, fake)
        app = HostApp(CampaignPane(), HostSession.open(store.load("box")))
        async with app.run_test(size=(160, 30)) as pilot:
            title = lambda: str(app.pane.query_one("#camp-title").render())   # noqa: E731
            await wait_until(pilot, lambda: app.pane.state is not None and app.pane.state.id == state.id, 10,
                             "the ended campaign drawn")
            closing = title()
            assert not SHOWN_RUNNING.search(closing), closing    # the walk: `finished ● driver running`
            fake.exit(reap)      # the driver exits after writing its ending
            await wait_until(pilot, lambda: "driver" not in title(), 15, "the exited driver no longer shown")
            return closing, title()
    finally:
        if fake.proc.poll() is None:
            fake.proc.kill()
        fake.proc.wait(10)


async def test_a_finished_campaigns_header_never_reads_driver_running():
    """Walk defect 2: once the campaign has finished, its driver (still finishing up) is shown
    closing, never running; once it has exited and been reaped, no driver is shown."""
    closing, ended = await _header_until_the_driver_is_gone("finished", reap=True)
    assert not SHOWN_RUNNING.search(closing), closing
    assert "finished" in closing and "driver closing" in closing, closing
    assert "finished" in ended and "driver" not in ended


async def test_a_stopped_campaigns_zombie_driver_is_not_running():
    """Walk defect 2, after `x` then `y`: a stopped campaign whose driver exited and nobody has
    reaped yet (a zombie) reads stopped, no driver."""
    closing, ended = await _header_until_the_driver_is_gone("stopped", reap=False)
    assert not SHOWN_RUNNING.search(closing), closing
    assert "stopped" in ended and "driver" not in ended


def test_campaign_show_list_and_the_report_read_the_same_driver_as_the_tab():
    """`campaign show --json` and `campaign list --json` say what the owner says: closing while
    the finished campaign's driver lives on, and nothing running once it has exited; `campaign
    show` and the report head the table with the owner's one line."""
    import json

    from console.campaign import owner
    from console.report.campaigns import campaigns_section
    from profiles import store
    from tests.cli import gpudeck

    fake = FakeDriver()
    try:
        state = _ended_campaign("finished", fake)
        shown = json.loads(gpudeck("campaign", "show", state.id, "-p", "box", "--json", timeout=240).stdout)
        listed = json.loads(gpudeck("campaign", "list", "-p", "box", "--json", timeout=240).stdout)["campaigns"]
        assert (shown["driver"], shown["driver_running"]) == ("closing", False)
        assert [(c["driver"], c["running"]) for c in listed] == [("closing", False)]
        assert shown["progress"] == owner.read(state).progress.to_json()
        fake.exit()
        shown = json.loads(gpudeck("campaign", "show", state.id, "-p", "box", "--json", timeout=240).stdout)
        assert (shown["driver"], shown["driver_running"], shown["left_s"]) == ("ended", False, None)
        text = gpudeck("campaign", "show", state.id, "-p", "box", timeout=240).stdout
        line = owner.read(st.load("box", state.id)).line("box")
        assert text.splitlines()[0] == line and "driver" not in line
        assert line in campaigns_section(store.load("box"))      # the report heads its table alike
    finally:
        if fake.proc.poll() is None:
            fake.proc.kill()
        fake.proc.wait(10)
