"""Signal a server, and only the server.

`kill -TERM -PGID` is the clean way to end a server with all its workers, but
only when the group is provably the server's own. A server in a container
without an init sits in group 1 (`kill -TERM -1` ends every process the user
owns); an adopted server may share its group with the shell that started it.
So before signalling a group we read the host's process table and refuse:

- a group id of 1 or less;
- the group (or session) of the command doing the signalling, and of each of
  its ancestors: gpudeck itself locally, the login session and sshd remotely;
- a group with pid 1 or an sshd/init/login process in it;
- a group that holds processes outside the server's process tree (unless the
  group is a session gpudeck itself created with `setsid` for this launch:
  everything in such a session descends from our launch).

When the group is refused, the server's own process tree (the root pid and its
descendants, read from `ps -o pid,ppid`) is signalled pid by pid instead.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from ..hosts import Host

_PROTECTED_COMMANDS = {"sshd", "systemd", "init", "login", "su", "sudo", "tmux: server", "screen"}


@dataclass
class Row:
    pid: int
    ppid: int
    pgid: int
    sid: int
    comm: str


@dataclass
class ProcessTable:
    rows: dict[int, Row]
    self_pid: int | None  # the process that read the table (its ancestors are protected)

    def members(self, pgid: int) -> list[Row]:
        return [r for r in self.rows.values() if r.pgid == pgid]

    def ancestors(self, pid: int | None) -> list[Row]:
        out: list[Row] = []
        seen: set[int] = set()
        while pid is not None and pid in self.rows and pid not in seen:
            seen.add(pid)
            row = self.rows[pid]
            out.append(row)
            pid = row.ppid if row.ppid > 0 else None
        return out

    def tree(self, root: int, skip: Callable[[Row], bool] = lambda row: False) -> list[int]:
        """`root` and all its descendants that are alive now (not entering `skip`ped ones)."""
        children: dict[int, list[int]] = {}
        for row in self.rows.values():
            children.setdefault(row.ppid, []).append(row.pid)
        out, todo = [], [root] if root in self.rows else []
        while todo:
            pid = todo.pop()
            if pid in out or skip(self.rows[pid]):
                continue
            out.append(pid)
            todo.extend(children.get(pid, []))
        return out


async def process_table(host: Host) -> ProcessTable:
    """pid, ppid, pgid, sid and command name of every process the host shows us."""
    result = await host.run(["sh", "-c", 'echo "$$"; exec ps -eo pid=,ppid=,pgid=,sid=,comm='], timeout=20)
    lines = result.stdout.splitlines()
    self_pid = int(lines[0]) if lines and lines[0].strip().isdigit() else None
    rows: dict[int, Row] = {}
    for line in lines[1:]:
        parts = line.split(None, 4)
        if len(parts) >= 4 and all(p.lstrip("-").isdigit() for p in parts[:4]):
            pid, ppid, pgid, sid = (int(p) for p in parts[:4])
            rows[pid] = Row(pid, ppid, pgid, sid, parts[4].strip() if len(parts) > 4 else "")
    return ProcessTable(rows, self_pid)


def group_refusal(table: ProcessTable, pgid: int, root: int | None, own_session: bool = False) -> str | None:
    """Why the group must not be signalled as a whole; None when it is the server's own.

    `root` is the server's main pid; `own_session` says gpudeck created the group
    as a new session for this launch (so every member descends from the launch).
    """
    if pgid <= 1:
        return f"process group {pgid} is not the server's own (it would reach every process)"
    if not table.rows:  # no `ps -o sid` (busybox): only a group gpudeck made itself is provably ours
        return None if own_session else "the host's process table could not be read (ps -eo pid,ppid,pgid,sid)"
    for row in table.ancestors(table.self_pid):
        if pgid in (row.pgid, row.sid):
            return f"process group {pgid} holds the session that runs gpudeck's commands ({row.comm} pid {row.pid})"
    members = table.members(pgid)
    for row in members:
        if row.pid == 1 or row.comm in _PROTECTED_COMMANDS:
            return f"process group {pgid} holds {row.comm} (pid {row.pid})"
    if own_session and all(row.sid == pgid for row in members):
        return None
    tree = set(table.tree(root if root is not None else pgid))
    outside = sorted(row.pid for row in members if row.pid not in tree)
    if outside:
        shown = ", ".join(str(p) for p in outside[:5]) + (" …" if len(outside) > 5 else "")
        return f"process group {pgid} also holds pid {shown}, outside the server's process tree"
    return None


def tree_targets(table: ProcessTable, root: int) -> list[int]:
    """The server's tree, never pid 1, and never reaching into a protected process
    (sshd, init, ...) or anything gpudeck's own commands run under."""
    protected = {row.pid for row in table.ancestors(table.self_pid)} | {0, 1}
    if root in protected:
        return []
    return [pid for pid in table.tree(root, skip=lambda row: row.pid in protected
                                      or row.comm in _PROTECTED_COMMANDS)]


@dataclass
class Signalled:
    how: str  # "group", "tree" or "none"
    pids: list[int] = field(default_factory=list)  # for "tree": the pids signalled
    reason: str | None = None  # why the group was refused
    ok: bool = True


async def send(host: Host, name: str, pgid: int | None = None, pids: list[int] | None = None) -> bool:
    """The shell's own `kill` (dash's has no `--`; procps' reads `-PGID` as an option).
    Every value is an int rendered here, so none can become an option."""
    if pgid is not None:
        argv = ["sh", "-c", f'kill -{_sig(name)} "-$1"', "sh", str(int(pgid))]
    else:
        argv = ["sh", "-c", f'kill -{_sig(name)} "$@"', "sh", *[str(int(p)) for p in pids or []]]
    result = await host.run(argv, timeout=15)
    return result.ok


def _sig(name: str) -> str:
    if not name.isalnum():
        raise ValueError(f"bad signal name {name!r}")
    return name


async def signal_server(host: Host, name: str, pgid: int | None, root: int | None,
                        own_session: bool = False) -> Signalled:
    """Signal the server's group if it is provably the server's own, else its process tree."""
    table = await process_table(host)
    reason = group_refusal(table, pgid, root, own_session) if pgid is not None else "no process group recorded"
    if reason is None:
        return Signalled("group", ok=await send(host, name, pgid=pgid))
    if root is None or root <= 1:
        return Signalled("none", reason=reason + "; and no server pid to signal instead", ok=False)
    targets = tree_targets(table, root)
    if not targets:
        return Signalled("none", reason=reason, ok=False)
    return Signalled("tree", pids=targets, reason=reason, ok=await send(host, name, pids=targets))


async def signal_group(host: Host, pgid: int, name: str, root: int | None = None,
                       own_session: bool = False) -> bool:
    """Signal a whole group, or nothing: False when the group is refused (see the module doc)."""
    table = await process_table(host)
    if group_refusal(table, int(pgid), root, own_session) is not None:
        return False
    return await send(host, name, pgid=int(pgid))


# Shell functions: is a group / a pid running? A zombie (exited, not reaped) is
# not: where pid 1 does not reap (many containers), a server's orphaned children
# stay zombies in its group for ever, and `kill -0 -PGID` would call it alive.
ALIVE_FUNCS = r"""
proc_state() { read -r line 2>/dev/null < "/proc/$1/stat" || return 1; set -- ${line##*) }; echo "$1 $3"; }
pid_alive() {
  if [ -d /proc/self ]; then s=$(proc_state "$1") || return 1; [ "${s%% *}" != Z ]
  else kill -0 "$1" 2>/dev/null; fi
}
group_alive() {
  [ "$1" -gt 1 ] || return 1
  [ -d /proc/self ] || { kill -0 "-$1" 2>/dev/null; return; }
  kill -0 "-$1" 2>/dev/null || return 1
  g=$1
  for f in /proc/[0-9]*; do
    read -r line 2>/dev/null < "$f/stat" || continue
    set -- ${line##*) }
    [ "$3" = "$g" ] && [ "$1" != Z ] && return 0
  done
  return 1
}
"""


async def any_alive(host: Host, pids: list[int]) -> bool:
    """Is any of `pids` still running? A zombie is not."""
    if not pids:
        return False
    script = ALIVE_FUNCS + 'for p in "$@"; do pid_alive "$p" && exit 0; done; exit 1'
    result = await host.run(["sh", "-c", script, "sh", *[str(int(p)) for p in pids]], timeout=15)
    return result.ok
