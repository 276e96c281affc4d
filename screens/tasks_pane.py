"""The Tasks tab: this host's prioritised plan, shared live with every other console on it."""
from __future__ import annotations

from pathlib import Path

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.reactive import reactive
from textual.widgets import DataTable, Input, Static

from console.runtime import events as ev
from console.session import HostSession
from console.safe_text import clean_line, safe_text
from console.store.task_board import TaskBoard
from profiles.task_model import Task
from profiles.tasks import BoardReadOnly, refusal
from widgets.task_rows import detail_line, suggestion_line, visible_tasks
from widgets.task_table import TaskTable

from .pane import Pane

UNDO_DEPTH = 20


PRIORITY = Binding.Group("priority", compact=True)


class TasksPane(Pane):
    TAB_TITLE = "Tasks"
    EDIT_ACTIONS = frozenset({"add", "edit", "cycle", "raise_priority", "lower_priority", "move_up",
                              "move_down", "delete", "undo", "accept", "dismiss"})
    DESTRUCTIVE_ACTIONS = EDIT_ACTIONS
    BINDINGS = [
        Binding("a", "add", "add"),
        Binding("e", "edit", "edit"),
        Binding("space", "cycle", "status"),
        Binding("plus", "raise_priority", "raise priority", group=PRIORITY),  # one footer entry: "+- priority"
        Binding("minus", "lower_priority", "lower priority", group=PRIORITY),
        Binding("J", "move_down", "move down", show=False),
        Binding("K", "move_up", "move up", show=False),
        Binding("d", "delete", "delete"),
        # these and J/K are offered where they apply (the undo on the status line after a delete)
        # and under `?`: off the footer, so the rest fits a 100-column split
        Binding("u", "undo", "undo", show=False),
        Binding("slash", "filter", "filter", show=False),
        Binding("h", "toggle_done", "hide done", show=False),
        Binding("r", "report", "report", show=False),
        # y / n are spelled out on the suggestion line itself
        Binding("y", "accept", "accept", show=False),
        Binding("n", "dismiss", "dismiss", show=False),
        Binding("s", "suggestions", "suggestions", show=False),
        Binding("j", "cursor('down')", "cursor down", show=False),
        Binding("k", "cursor('up')", "cursor up", show=False),
        Binding("escape", "close_inputs", "close"),
        # named in the footer while typing, in place of the board's keys (the field takes those as text)
        Binding("enter", "field_enter('editor')", "save", priority=True),
        Binding("enter", "field_enter('filter')", "keep filter", priority=True),
    ]
    TYPING_ACTIONS = frozenset({"close_inputs"})
    KEY_GROUPS = {"accept": "Suggestion", "dismiss": "Suggestion", "suggestions": "Suggestion", "filter": "View", "toggle_done": "View",
                  "report": "View", "cursor": "View"}
    DEFAULT_CSS = """
    TasksPane #banner { height: auto; padding: 0 1; display: none; }
    TasksPane #banner.shown { display: block; }
    TasksPane #banner.error { background: $error 30%; }
    TasksPane #banner.note { background: $warning 20%; }
    TasksPane #editor, TasksPane #filter { display: none; }
    TasksPane #editor.shown, TasksPane #filter.shown { display: block; }
    TasksPane #suggestion { height: auto; max-height: 1; padding: 0 1; text-wrap: nowrap; text-overflow: ellipsis; }
    TasksPane #status { height: 1; padding: 0 1; color: $text-muted; }
    """

    # what the operator chose to see; a change redraws the board
    hide_done: reactive[bool] = reactive(False, init=False)
    filter_text: reactive[str] = reactive("", init=False)

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.board: TaskBoard | None = None
        self.undo_stack: list[Task] = []
        self.editing: int | None = None      # task id being edited; None while adding
        self.last_report: Path | None = None
        self._notes: list[str] = []

    # ------------------------------------------------------------ layout
    def compose(self) -> ComposeResult:
        yield Static("", id="banner")
        yield TaskTable(id="board")
        yield Input(placeholder="", id="editor")
        yield Input(placeholder="filter: words to look for (Enter keeps it, Esc clears)", id="filter")
        yield Static("", id="suggestion")
        yield Static("", id="status")

    async def set_session(self, session) -> None:
        await super().set_session(session)
        session = self.session
        self.undo_stack.clear()
        self._notes = []
        board = await self.runtime.task_board()
        if session is not self.session:
            return  # the operator switched host again meanwhile
        self.board = board
        await self._scan()
        self.redraw()

    # ------------------------------------------------------------ state
    @property
    def editable(self) -> bool:
        return self.board is not None and not self.readonly and not self.board.readonly

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in self.EDIT_ACTIONS and not self.editable:
            return False
        if action == "close_inputs":
            return self._has_layer()
        return super().check_action(action, parameters)

    def selected(self) -> Task | None:
        tid = self.query_one(TaskTable).selected_id
        if tid is None or self.board is None:
            return None
        try:
            return self.board.get(tid)
        except KeyError:
            return None

    # ------------------------------------------------------------ drawing
    def redraw(self, keep: int | None = None) -> None:
        board = self.board
        table = self.query_one(TaskTable)
        if board is None:
            return
        if keep is None:
            keep = table.selected_id
        rows = visible_tasks(board.tasks, self.hide_done, self.filter_text)
        table.show(rows, keep)
        self._draw_banner()
        self.query_one("#suggestion", Static).update(
            suggestion_line(board.suggestions, readonly=not self.editable))
        self._draw_status(len(rows))
        self.set_summary(self.summary_text())
        self.refresh_bindings()

    def summary_text(self) -> str:
        board = self.board
        if board is None:
            return ""
        if board.error is not None:
            return "✖ file"
        text = board.summary()
        if board.suggestions:
            text += f" ✚{len(board.suggestions)}"
        return text

    def _draw_banner(self) -> None:
        banner = self.query_one("#banner", Static)
        board = self.board
        banner.remove_class("shown", "error", "note")
        if board is not None and board.error is not None:
            banner.update(safe_text(f"✖ {board.error}\nThe board is read-only until the file is fixed; "
                                    "the file is kept as it is.", style="bold", newlines=True))
            banner.add_class("shown", "error")
        elif self._notes:
            banner.update(safe_text("\n".join(f"⚠ {clean_line(n)}" for n in self._notes[-3:]), newlines=True))
            banner.add_class("shown", "note")

    def _draw_status(self, shown: int) -> None:
        board = self.board
        assert board is not None
        parts = [f"{shown} of {len(board.tasks)} shown"]
        if self.hide_done:
            parts.append("done hidden")
        if self.filter_text:
            parts.append(f"filter “{self.filter_text}”")
        if self.readonly:
            parts.append("READ-ONLY console")
        if self.undo_stack:
            parts.append(f"u undoes delete of #{self.undo_stack[-1].id}")
        status = safe_text(" · ".join(parts), style="grey62")
        status.append("   ")
        status.append_text(detail_line(self.selected()))
        self.query_one("#status", Static).update(status)

    @on(DataTable.RowHighlighted)
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        if self.board is not None:
            self._draw_status(self.query_one(TaskTable).row_count)

    # ------------------------------------------------------------ other consoles
    def runtime_event(self, event: ev.RuntimeEvent) -> None:
        """The runtime's store watcher saw tasks.toml change (another console, the CLI, a
        suggestion the runtime offered): re-read it off the UI thread."""
        if isinstance(event, ev.TasksChanged):
            self.run_worker(self._reread(), group="tasks-reread")

    async def _reread(self) -> None:
        board = self.board
        if board is not None and self.runtime is not None and await self.runtime.board_changed(board):
            self.redraw()

    async def _scan(self) -> bool:
        """Offer suggestions for crashes and failed sweep levels that are new (on opening the host)."""
        if not self.editable or self.session is None:
            return False
        return bool(await self.runtime.offer_suggestions(self.board))

    # ------------------------------------------------------------ edits
    async def _apply(self, fn, *args, **kwargs):
        """Run one board edit off the UI thread, then redraw; refusals become a notice."""
        if not self.editable:
            self.notify("the board is read-only", severity="warning")
            return None
        try:
            result = await self.runtime.edit_board(fn, *args, **kwargs)
        except BoardReadOnly as exc:
            self.notify(refusal(exc), severity="error", timeout=8)
            self.redraw()
            return None
        except (KeyError, ValueError) as exc:
            self.notify(refusal(exc), severity="warning")
            self.redraw()
            return None
        if self.board is not None and self.board.conflicts:
            self._notes.extend(self.board.conflicts)
            for note in self.board.conflicts:
                self.notify(note, severity="warning", timeout=10)
        return result

    def action_cursor(self, direction: str) -> None:
        table = self.query_one(TaskTable)
        table.action_cursor_down() if direction == "down" else table.action_cursor_up()

    def _open_editor(self, value: str, placeholder: str) -> None:
        editor = self.query_one("#editor", Input)
        # an Input draws its value raw: a task's control characters come in made visible (and are saved so)
        editor.value = clean_line(value)
        editor.placeholder = placeholder
        editor.add_class("shown")
        editor.focus()

    def action_add(self) -> None:
        self.editing = None
        self._open_editor("", "new task (Enter adds it, Esc cancels)")

    def action_edit(self) -> None:
        task = self.selected()
        if task is None:
            return
        self.editing = task.id
        self._open_editor(task.text, f"edit #{task.id} (Enter saves, Esc cancels)")

    @on(DataTable.RowSelected)
    def _row_selected(self, event: DataTable.RowSelected) -> None:
        if self.editable:
            self.action_edit()

    @on(Input.Submitted, "#editor")
    async def _editor_done(self, event: Input.Submitted) -> None:
        text = event.value.strip()
        self._close_input("#editor")
        if not text:
            return
        if self.editing is None:
            task = await self._apply(self.board.add, text)
        else:
            task = await self._apply(self.board.edit, self.editing, text=text)
        self.redraw(keep=task.id if task else None)

    @on(Input.Submitted, "#filter")
    def _filter_done(self, event: Input.Submitted) -> None:
        self._close_input("#filter")

    @on(Input.Changed, "#filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.filter_text = event.value.strip()

    def action_close_inputs(self) -> None:
        """Esc closes the top layer: an open editor or filter box, else a filter still applied."""
        for selector in ("#editor", "#filter"):
            box = self.query_one(selector, Input)
            if box.has_class("shown"):
                if selector == "#filter":
                    box.value = ""
                    self.filter_text = ""
                self._close_input(selector)
                self.redraw()
                return
        if self.filter_text:
            self.query_one("#filter", Input).value = ""
            self.filter_text = ""
        self.refresh_bindings()

    def _has_layer(self) -> bool:
        return bool(self.filter_text) or any(self.query_one(s, Input).has_class("shown") for s in ("#editor", "#filter"))

    def _close_input(self, selector: str) -> None:
        self.query_one(selector, Input).remove_class("shown")
        self.query_one(TaskTable).focus()

    async def action_cycle(self) -> None:
        task = self.selected()
        if task is not None:
            await self._apply(self.board.cycle_status, task.id)
            self.redraw(keep=task.id)

    async def action_raise_priority(self) -> None:
        await self._shift(+1)

    async def action_lower_priority(self) -> None:
        await self._shift(-1)

    async def _shift(self, step: int) -> None:
        task = self.selected()
        if task is not None:
            await self._apply(self.board.shift_priority, task.id, step)
            self.redraw(keep=task.id)

    async def action_move_up(self) -> None:
        await self._move(-1)

    async def action_move_down(self) -> None:
        await self._move(+1)

    async def _move(self, step: int) -> None:
        task = self.selected()
        if task is None:
            return
        moved = await self._apply(self.board.move, task.id, step)
        if moved is False:
            self.notify("it moves only among open tasks of the same priority; +/- changes priority",
                        timeout=3)
        self.redraw(keep=task.id)

    async def action_delete(self) -> None:
        task = self.selected()
        if task is None:
            return
        removed = await self._apply(self.board.remove, task.id)
        if removed is not None:
            self.undo_stack = (self.undo_stack + [removed])[-UNDO_DEPTH:]
            self.notify(f"deleted #{removed.id} “{removed.text}” — u undoes", timeout=5)
        self.redraw()

    async def action_undo(self) -> None:
        if not self.undo_stack:
            self.notify("nothing to undo", timeout=2)
            return
        task = self.undo_stack.pop()
        back = await self._apply(self.board.restore, task)
        self.redraw(keep=back.id if back else None)

    def action_filter(self) -> None:
        box = self.query_one("#filter", Input)
        box.value = self.filter_text
        box.add_class("shown")
        box.focus()

    def action_toggle_done(self) -> None:
        self.hide_done = not self.hide_done

    def watch_hide_done(self) -> None:
        self.redraw()

    def watch_filter_text(self) -> None:
        self.redraw()
        self.refresh_bindings()  # Esc clears a filter: the footer says so while one is on

    async def action_accept(self) -> None:
        if self.board is None or not self.board.suggestions:
            self.notify("no suggestion waiting", timeout=2)
            return
        task = await self._apply(self.board.accept, self.board.suggestions[0].key)
        self.redraw(keep=task.id if task else None)

    async def action_dismiss(self) -> None:
        if self.board is None or not self.board.suggestions:
            self.notify("no suggestion waiting", timeout=2)
            return
        await self._apply(self.board.dismiss, self.board.suggestions[0].key, waiting_only=True)
        self.redraw()

    def action_suggestions(self) -> None:
        """Every waiting suggestion in a list: arrows move, Enter accepts, n dismisses."""
        from .suggestions import SuggestionList

        if self.board is None or not self.board.suggestions:
            self.notify("no suggestion waiting", timeout=2)
            return

        async def accept(key: str):
            task = await self._apply(self.board.accept, key)
            self.redraw(keep=task.id if task else None)
            return list(self.board.suggestions)

        async def dismiss(key: str):
            await self._apply(self.board.dismiss, key, waiting_only=True)
            self.redraw()
            return list(self.board.suggestions)

        self.app.push_screen(SuggestionList(list(self.board.suggestions), accept, dismiss, not self.editable))

    def action_report(self) -> None:
        if self.session is None:
            return
        self.notify("writing the findings report …", timeout=3)
        self._write_report(self.session)

    @work(thread=True, group="report", exclusive=True)
    def _write_report(self, session: HostSession) -> Path | None:
        from console.report import ReportError, write_report

        try:
            path, _ = write_report(session.profile, live=True)
        except ReportError as exc:
            self.app.call_from_thread(self.notify, str(exc), severity="error", timeout=10)
            return None
        self.last_report = path
        self.app.call_from_thread(self.notify, f"wrote {path}", timeout=8)
        return path
