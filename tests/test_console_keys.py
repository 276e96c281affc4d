"""Keys and focus as an operator meets them, driven with Pilot on the demo's world (no simulator started)."""
from __future__ import annotations


from textual.widgets import Input, Select

from console import demo
from profiles import store
from screens.app import GpudeckApp
from screens.confirm import Confirm
from widgets.bench_table import BenchLevelTable
from widgets.roofline_table import RooflineTable
from tests.harness import wait_until


def _shown_keys(app) -> dict[str, str]:
    """Key -> description of what the footer offers now."""
    return {key: b.binding.description for key, b in app.active_bindings.items() if b.binding.show and b.enabled}


async def test_question_mark_and_escape_close_the_keys_panel(demo_world):
    app = GpudeckApp(profile_name="demo")
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        await pilot.press("question_mark")
        await wait_until(pilot, lambda: app.screen.query("KeysPanel"), what="? opening the keys panel")
        await pilot.press("question_mark")  # the panel is removed after the key is handled
        await wait_until(pilot, lambda: not app.screen.query("KeysPanel"), what="? closing the keys panel")
        await pilot.press("question_mark")
        await wait_until(pilot, lambda: app.screen.query("KeysPanel"), what="? opening the keys panel again")
        await pilot.press("escape")
        await wait_until(pilot, lambda: not app.screen.query("KeysPanel"), what="Esc closing the keys panel")


async def test_bench_form_hidden_keeps_its_keys(demo_world):
    app = GpudeckApp(profile_name="demo")
    async with app.run_test(size=(160, 45)) as pilot:
        pane = app.panes["bench"]
        await pilot.press("3")
        await wait_until(pilot, lambda: app.tabs.active == "bench", what="the Bench tab")
        url = pane.query_one("#bf-url", Input)
        app.set_focus(url)
        await wait_until(pilot, lambda: app.focused is url, what="the URL field focused")
        await pilot.press("escape")  # leave the field: the pane's keys work again
        await pilot.press("f")
        await wait_until(pilot, lambda: pane.has_class("hide-form") and isinstance(app.focused, BenchLevelTable),
                     what="f hiding the form, the table focused")
        # the footer follows the focus once it has moved: waited on, not read at the same moment
        await wait_until(pilot, lambda: {"f", "r", "c"} <= set(_shown_keys(app)), what="the table's keys shown")
        await pilot.press("f")
        await wait_until(pilot, lambda: not pane.has_class("hide-form"), what="f showing the form again")
        await wait_until(pilot, lambda: {"f", "r", "c"} <= set(_shown_keys(app)), what="the keys kept")


async def test_ctrl_u_clears_the_whole_field(demo_world):
    app = GpudeckApp(profile_name="demo")
    async with app.run_test(size=(160, 45)) as pilot:
        pane = app.panes["bench"]
        await pilot.press("3")
        await wait_until(pilot, lambda: app.tabs.active == "bench", what="the Bench tab")
        box = pane.query_one("#bf-levels", Input)
        app.set_focus(box)
        await wait_until(pilot, lambda: app.focused is box, what="the levels field focused")
        await pilot.press("home", "ctrl+u", "1", "comma", "2", "comma", "4")
        await wait_until(pilot, lambda: box.value == "1,2,4", what="the field holding 1,2,4")
        assert app.panes["bench"] is pane and app.tabs.active == "bench"  # the digits typed, no tab switch


async def test_digits_type_in_fields_and_select_and_switch_tabs_elsewhere(demo_world):
    app = GpudeckApp(profile_name="demo")
    async with app.run_test(size=(160, 45)) as pilot:
        pane = app.panes["bench"]
        await pilot.press("3")
        await wait_until(pilot, lambda: app.tabs.active == "bench", what="the Bench tab")
        assert _shown_keys(app).get("1") == "tabs"  # the footer says digits switch tabs here
        api = pane.query_one("#bf-api", Select)
        app.set_focus(api)
        await wait_until(pilot, lambda: app.focused is api, what="the API drop-down focused")
        await pilot.press("1")
        await wait_until(pilot, lambda: api.expanded, what="the digit opening the list")
        assert app.tabs.active == "bench"  # the drop-down keeps the digit
        shown = _shown_keys(app)
        assert "1" not in shown
        await pilot.press("escape")  # the digit opened the list: Esc closes it (the top layer) first
        await wait_until(pilot, lambda: not api.expanded and app.focused is api, what="Esc closing the list")
        assert "leave field" in _shown_keys(app).get("escape", "")
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.focused, (Input, Select)), what="Esc leaving the field")
        await pilot.press("1")
        await wait_until(pilot, lambda: app.tabs.active == "gpus", what="1 opening the GPUs tab")


async def test_roofline_whatif_validates_as_typed_and_escape_returns_to_the_table(demo_world):
    app = GpudeckApp(profile_name="demo")
    async with app.run_test(size=(160, 45)) as pilot:
        pane = app.panes["roofline"]
        await pilot.press("4")
        await wait_until(pilot, lambda: app.tabs.active == "roofline", what="the Roofline tab")
        await pilot.press("w")
        await wait_until(pilot, lambda: pane.has_class("whatif") and getattr(app.focused, "id", None) == "wi-gpu",
                     what="the what-if open")
        tp = pane.query_one("#wi-tp", Input)
        app.set_focus(tp)
        await wait_until(pilot, lambda: app.focused is tp, what="the TP field focused")
        tp.value = ""
        await pilot.press("4", "z", "2")  # the 2 landing right after the 4 shows the z was refused
        await wait_until(pilot, lambda: tp.value.endswith("2"), what="the 2 typed")
        assert tp.value == "42"
        assert "escape" in _shown_keys(app)  # the footer is not empty inside the editor
        await pilot.press("escape")
        await wait_until(pilot, lambda: isinstance(app.focused, RooflineTable) and "w" in _shown_keys(app),
                     what="Esc back on the table with w offered")


async def test_server_diff_names_both_configs_and_escape_leaves_it(demo_world):
    app = GpudeckApp(profile_name="demo")
    async with app.run_test(size=(160, 45)) as pilot:
        pane = app.panes["server"]
        await pilot.press("2")
        await wait_until(pilot, lambda: len(pane.configs) == 3, what="configs")
        table = pane.query_one("#flags")
        await pilot.press("d")
        await wait_until(pilot, lambda: pane.diffing, what="d opening the diff")
        labels = [str(c.label) for c in table.columns.values()]
        assert labels == ["flag", pane.selected, labels[2]] and labels[2] != pane.selected
        assert labels[2] in [c.name for c in pane.configs]
        await pilot.press("escape")
        await wait_until(pilot, lambda: not pane.diffing, what="Esc leaving the diff")
        assert [str(c.label) for c in table.columns.values()] == ["flag", "script", "effective (log)"]


async def test_r_on_the_server_tab_puts_the_log_head_back(demo_world):
    app = GpudeckApp(profile_name="demo")
    async with app.run_test(size=(160, 45)) as pilot:
        pane = app.panes["server"]
        await pilot.press("2")
        await wait_until(pilot, lambda: len(pane.configs) == 3, what="configs")
        head = pane.query_one("#loghead")
        await pilot.press("R")
        await wait_until(pilot, lambda: "loading configs" not in str(head.render()), what="the log head back")
        assert "never launched" in str(head.render())


async def test_confirmation_shows_y_and_n_and_keeps_cancel_focused(demo_world):
    answers = []
    command = "python3 -m sglang.launch_server --model-path zai-org/GLM-5-NVFP4 --host 127.0.0.1 --port 30000 " * 2
    app = GpudeckApp(profile_name="demo")
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        app.push_screen(Confirm("Kill demo?", [f"pid 42  {command}"], "Kill"), answers.append)
        await wait_until(pilot, lambda: isinstance(app.screen, Confirm) and app.screen.focused is not None
                     and app.screen.query(".line") and app.screen.query(".line").first().size.height > 0,
                     what="the dialog laid out with a focus")
        assert app.screen.focused.id == "cancel"
        text = " ".join(str(s.render()) for s in app.screen.query("Static"))
        assert "y kill" in text and "n or Esc cancel" in text
        line = app.screen.query(".line").first()
        assert line.size.height >= 2  # the whole command, wrapped, not cut at the dialog's edge
        assert command.strip() in str(line.render()).replace("\n", "")
        await pilot.press("n")
        await wait_until(pilot, lambda: answers == [False] and not isinstance(app.screen, Confirm), what="n answering no")
        app.push_screen(Confirm("Kill demo?", ["x"], "Kill"), answers.append)
        await wait_until(pilot, lambda: isinstance(app.screen, Confirm) and app.screen.focused is not None,
                     what="the second dialog focused")
        await pilot.press("y")
        await wait_until(pilot, lambda: len(answers) == 2, what="y answering")
    assert answers == [False, True]


async def test_every_tab_key_is_in_the_command_palette(demo_world):
    from screens.palette import commands

    app = GpudeckApp(profile_name="demo")
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        texts = [t for t, _, _ in commands(app)]
        for wanted in ("launch", "kill", "run sweep", "open host", "write report", "what-if", "line numbers"):
            assert any(wanted in t for t in texts), wanted
        # run one through the palette UI: it opens its tab and acts like the key
        from textual.command import CommandPalette

        await pilot.press("ctrl+p")
        await wait_until(pilot, lambda: isinstance(app.screen, CommandPalette) and app.screen.query("CommandInput")
                     and app.focused is app.screen.query_one("CommandInput"), what="the palette's input focused")
        await pilot.press(*"fleet view")
        await wait_until(pilot, lambda: app.screen.query("CommandList") and
                     app.screen.query_one("CommandList").option_count > 0, what="palette hits")
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.panes["gpus"].has_class("-fleet"), what="fleet view")


async def test_readonly_palette_has_no_destructive_commands(demo_world):
    from screens.palette import commands

    app = GpudeckApp(profile_name="demo", readonly=True)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        texts = [t for t, _, _ in commands(app)]
        assert not any(t.startswith("Server: launch") or t.startswith("Server: kill") for t in texts)
        assert any(t.startswith("Server: diff") for t in texts)


async def test_toasts_go_within_five_seconds_and_sit_at_the_top(demo_world):
    app = GpudeckApp(profile_name="demo")
    async with app.run_test(size=(160, 45), notifications=True) as pilot:
        await pilot.pause()
        app.notify("something went wrong [b]here[/b]", severity="error", timeout=20)
        app.query_one("#pane-server").notify("pid 7 [not ours]", timeout=15)  # a pane's toast, with brackets
        await wait_until(pilot, lambda: len(app._notifications) >= 2, what="both notices posted")
        notes = list(app._notifications)
        assert len(notes) == 2 and all(n.timeout <= 5 for n in notes)
        assert not any(n.markup for n in notes)
        from textual.widgets._toast import ToastRack

        rack = app.screen.get_child_by_type(ToastRack)
        assert rack.styles.dock == "top"


def test_demo_local_is_labelled_simulated(demo_world):
    assert store.load("local").ui.simulated
    assert store.load("demo").ui.simulated


def test_a_simulated_host_lists_only_its_simulators():
    own = "/usr/bin/python3 -m console.demo.sglang serve --model-path zai-org/GLM-5-NVFP4 --port 35279"
    other_demo = "/usr/bin/python3 -m console.demo.sglang serve --model-path x --port 41000"
    real = "llama-server -m model.gguf --host 127.0.0.1 --port 35279"
    assert demo.simulated_process(own, 35279)
    assert not demo.simulated_process(other_demo, 35279)
    assert not demo.simulated_process(real, 35279)


async def test_server_flags_are_whole_at_100_columns(demo_world):
    app = GpudeckApp(profile_name="demo")
    async with app.run_test(size=(100, 30)) as pilot:
        pane = app.panes["server"]
        await pilot.press("2")
        await wait_until(pilot, lambda: len(pane.configs) == 3, what="configs")
        flags = pane.query_one("#flags")

        def flags_fit() -> bool:
            return 0 < sum(c.get_render_width(flags) for c in flags.columns.values()) <= flags.size.width

        # the narrow class and the columns follow the resize, drawn after the layout
        await wait_until(pilot, lambda: pane.has_class("narrow") and flags_fit(), what="the flags fitting the width")
        configs = pane.query_one("#configs")
        state = [c for c in configs.columns.values() if str(c.label) == "state"][0]
        name = [c for c in configs.columns.values() if str(c.label) == "config"][0]
        assert name.get_render_width(configs) + state.get_render_width(configs) <= configs.size.width
