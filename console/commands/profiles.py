"""`gpudeck profiles list|show|add|rm|trust|check`."""
from __future__ import annotations

import argparse

from .kit import CLIError, emit_json, load_profile, run_async
from . import prom_profiles, slurm_profiles


def register(sub) -> None:
    p = sub.add_parser("profiles", help="host profiles: list, show, add, set, rm, trust, check")
    ps = p.add_subparsers(dest="action", metavar="ACTION", required=True)

    ls = ps.add_parser("list", help="every profile, one line each")
    ls.add_argument("--json", action="store_true")
    ls.set_defaults(func=_list)

    show = ps.add_parser("show", help="one profile in full")
    show.add_argument("name")
    show.add_argument("--json", action="store_true")
    show.set_defaults(func=_show)

    add = ps.add_parser("add", help="add or replace a profile")
    add.add_argument("name")
    how = add.add_mutually_exclusive_group()
    how.add_argument("--ssh", metavar="[USER@]HOST[:PORT]", help="reach the host over SSH (HOST may be a ~/.ssh/config alias)")
    how.add_argument("--local", action="store_true", help="this machine")
    prom_profiles.add_arguments(add, how)
    slurm_profiles.add_arguments(add, how)
    add.add_argument("--identity-file", help="private key file (else agent / ssh config)")
    add.add_argument("--ssh-config", help="an ssh_config file to use instead of ~/.ssh/config")
    add.add_argument("--description")
    add.add_argument("--url", help="inference server endpoint, e.g. http://127.0.0.1:30000")
    add.add_argument("--scripts-dir", help="where the launch scripts are on the host")
    add.add_argument("--log-dir", help="where server logs go on the host")
    add.add_argument("--model-config", help="path to the model's config.json (for the roofline)")
    add.add_argument("--gpu", help="GPU name for the roofline, e.g. 'H100 SXM'")
    add.add_argument("--gpu-count", type=int)
    add.add_argument("--force", action="store_true", help="replace an existing profile")
    add.add_argument("--json", action="store_true")
    add.set_defaults(func=_add)

    put = ps.add_parser("set", help="change some keys of a profile, keep the rest of its file",
                        description="e.g. gpudeck profiles set lab model.config=/models/glm/config.json "
                                    "gpu.name='H200' gpu.count=8   (KEY= removes a key)")
    put.add_argument("name")
    put.add_argument("assignments", nargs="+", metavar="KEY=VALUE")
    put.add_argument("--json", action="store_true")
    put.set_defaults(func=_set)

    rm = ps.add_parser("rm", help="delete a profile file (its data dir is kept)")
    rm.add_argument("name")
    rm.set_defaults(func=_rm)

    trust = ps.add_parser("trust", help="fetch the host key, show its fingerprint and trust it")
    trust.add_argument("name")
    trust.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    trust.add_argument("--replace", action="store_true",
                       help="replace a known key that differs (a CHANGED host key) with the one offered now")
    trust.add_argument("--json", action="store_true")
    trust.set_defaults(func=_trust)

    check = ps.add_parser("check", help="connect, run uname, look for nvidia-smi")
    check.add_argument("name")
    check.add_argument("--json", action="store_true")
    check.set_defaults(func=_check)


def _list(args: argparse.Namespace) -> int:
    from profiles import store

    good, bad = store.load_all()
    last = store.last_used()
    if args.json:
        emit_json({"profiles": [p.to_json() | {"last_used": p.name == last} for p in good],
                   "errors": bad})
    else:
        width = max([len(p.name) for p in good] + [4])
        for p in good:
            mark = "*" if p.name == last else " "
            sim = "  SIMULATED" if p.ui.simulated else ""
            print(f"{mark} {p.name:<{width}}  {p.target}{sim}  {p.description or ''}".rstrip())
        for line in bad:
            print(f"! {line}")
    return 1 if bad and not good else 0


def _show(args: argparse.Namespace) -> int:
    profile = load_profile(args.name)
    if args.json:
        emit_json(profile.to_json())
        return 0
    import tomli_w

    from profiles import paths

    print(f"# {paths.profile_file(profile.name)}")
    print(tomli_w.dumps(profile.to_toml_dict()), end="")
    return 0


def parse_ssh_target(text: str) -> tuple[str | None, str, int | None]:
    user, _, rest = text.rpartition("@") if "@" in text else (None, "", text)
    host, port = rest, None
    if rest.startswith("["):
        host, _, tail = rest[1:].partition("]")
        if tail.startswith(":"):
            port = tail[1:]
    elif rest.count(":") == 1:
        host, port = rest.split(":")
    if not host:
        raise CLIError(f"bad --ssh target {text!r}: expected [user@]host[:port]", 2)
    try:
        port_num = int(port) if port else None
    except ValueError:
        raise CLIError(f"bad port in --ssh target {text!r}", 2) from None
    return user or None, host, port_num


def _add(args: argparse.Namespace) -> int:
    from profiles import paths, store
    from profiles.profile import Profile, ProfileError, profile_from_dict

    try:
        paths.check_name(args.name)
    except ValueError as exc:
        raise CLIError(str(exc), 2) from None
    if store.exists(args.name) and not args.force:
        raise CLIError(f"profile {args.name!r} exists; use --force to replace it")
    if not (args.ssh or args.local or args.prometheus or args.slurm):
        raise CLIError("one of --ssh, --local, --prometheus or --slurm is required", 2)
    doc: dict = {"transport": "ssh" if args.ssh else "local"}
    slurm = slurm_profiles.section(args)
    if slurm is not None:
        doc["slurm"] = slurm
        if args.dcgm:
            doc["prometheus"] = {"url": args.dcgm}
    prometheus = prom_profiles.section(args)
    if prometheus is not None:
        doc = {"transport": "prometheus", "prometheus": prometheus}
    if args.description:
        doc["description"] = args.description
    elif store.exists(args.name):  # --force replaces the target and settings, not the words the operator wrote
        try:
            kept = store.load(args.name).description
        except Exception:  # noqa: BLE001 - an unreadable profile being replaced keeps nothing
            kept = None
        if kept:
            doc["description"] = kept
    if args.ssh:
        user, host, port = parse_ssh_target(args.ssh)
        doc["ssh"] = {k: v for k, v in {"host": host, "user": user, "port": port,
                                        "identity_file": args.identity_file,
                                        "config_file": args.ssh_config}.items() if v is not None}
    server = {k: v for k, v in {"url": args.url, "scripts_dir": args.scripts_dir,
                                "log_dir": args.log_dir}.items() if v}
    if server:
        doc["server"] = server
    if args.model_config:
        _check_local_paths([("model.config", args.model_config)], doc["transport"] == "local")
        doc["model"] = {"config": args.model_config}
    gpu = {k: v for k, v in {"name": args.gpu, "count": args.gpu_count}.items() if v is not None}
    if gpu:
        doc["gpu"] = gpu
    try:
        profile: Profile = profile_from_dict(args.name, doc, "<command line>")
    except ProfileError as exc:
        raise CLIError(str(exc), 2) from None
    try:
        path = store.save(profile)
    except OSError as exc:
        raise CLIError(_cannot_write(paths.profile_file(profile.name), exc)) from None
    if args.json:
        emit_json(profile.to_json() | {"path": str(path)})
    else:
        print(f"saved {profile.name}: {profile.target} ({path})")
    return 0


def _set(args: argparse.Namespace) -> int:
    from profiles import paths, set_keys
    from profiles.profile import ProfileError

    try:
        paths.check_name(args.name)
        changes = [set_keys.parse(text) for text in args.assignments]
    except (ProfileError, ValueError) as exc:
        raise CLIError(str(exc), 2) from None
    current = load_profile(args.name)
    _check_local_paths(changes, current.is_local)
    try:
        path, profile = set_keys.apply(args.name, changes)
    except ProfileError as exc:
        raise CLIError(str(exc), 2) from None
    except OSError as exc:
        raise CLIError(_cannot_write(paths.profile_file(args.name), exc)) from None
    if args.json:
        emit_json(profile.to_json() | {"path": str(path)})
    else:
        shown = ", ".join(key if value is None else f"{key}={value}" for key, value in changes)
        print(f"saved {profile.name}: {shown} ({path})")
    return 0


# Paths read on this machine, whatever the transport (the roofline reads the model's files here,
# ssh its key and config); the scripts folder only when the host is this machine.
_HERE = ("model.config", "model.quant_config", "ssh.identity_file", "ssh.config_file")


def _check_local_paths(changes, local: bool) -> None:
    """A path that does not exist is refused with one line, before anything is written."""
    from pathlib import Path

    for key, value in changes:
        if not isinstance(value, str):
            continue
        if key == "model.config":
            from ..roofline.errors import RooflineError
            from ..roofline.model_lookup import resolve_model

            try:
                resolve_model(value)   # a config.json, its folder, or a model name found locally
            except RooflineError as exc:
                raise CLIError(f"{key}: {exc}", 2) from None
        elif key in _HERE and not Path(value).expanduser().is_file():
            raise CLIError(f"{key}: no such file: {value}", 2)
        elif key == "server.scripts_dir" and local and not Path(value).expanduser().is_dir():
            raise CLIError(f"{key}: no such folder on this machine: {value}", 2)


def _cannot_write(path, exc: OSError) -> str:
    return f"cannot write {path}: {exc.strerror or exc}"


def _rm(args: argparse.Namespace) -> int:
    from profiles import store
    from profiles.profile import ProfileError

    try:
        store.remove(args.name)
    except (ProfileError, ValueError) as exc:
        raise CLIError(str(exc)) from None
    except OSError as exc:
        raise CLIError(f"cannot remove profile {args.name}: {exc.strerror or exc}") from None
    print(f"removed {args.name}")
    return 0


def _trust(args: argparse.Namespace) -> int:
    """Trust the host's key under the name OpenSSH looks it up by (HostKeyAlias, else
    the resolved host, `[host]:port` off port 22). A key that differs from a known
    one is a CHANGED key: replaced only with --replace, never added beside it."""
    import sys

    from profiles import paths
    from profiles.atomic import write_atomic

    from ..hosts import HostError, fetch_host_key, known_hosts_line, known_keys, without_entries_for

    profile = load_profile(args.name)
    if profile.is_local or profile.is_prometheus:
        raise CLIError(f"profile {profile.name} is not reached over SSH: it has no host key")
    try:
        target, key = run_async(fetch_host_key(profile))
    except HostError as exc:
        raise CLIError(str(exc)) from None
    fingerprint = key.get_fingerprint()
    known = known_keys(target)
    known_prints = list(known.sources)
    path = paths.known_hosts_file()
    doc = {"profile": profile.name, "host": target.host, "port": target.port, "name": target.key_name,
           "algorithm": key.get_algorithm(), "fingerprint": fingerprint, "known_hosts": str(path),
           "replaced": [], "already_trusted": fingerprint in known_prints}
    if doc["already_trusted"]:
        if args.json:
            emit_json(doc)
        else:
            print(f"{target.key_name} ({target.where}): {fingerprint} is already trusted ({known.sources[fingerprint]})")
        return 0
    if known_prints and not args.replace:
        was = ", ".join(f"{fp} ({src})" for fp, src in known.sources.items())
        raise CLIError(f"host key CHANGED for {target.key_name} ({target.where}): known_hosts has {was}, "
                       f"the host now offers {fingerprint}; if you expected the change, rerun with --replace")
    what = "CHANGED key" if known_prints else "key"
    if not args.yes:
        if not sys.stdin.isatty():
            raise CLIError(f"host {what} of {target.key_name} ({target.where}) is {fingerprint}; "
                           "rerun with --yes to trust it")
        answer = input(f"{target.key_name} ({target.where}) offers {key.get_algorithm()} {what} {fingerprint}. "
                       "Trust it? [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            raise CLIError("not trusted")
    try:
        existing = path.read_text() if path.exists() else ""
        if known_prints:
            existing, _ = without_entries_for(existing, target.key_name)
            doc["replaced"] = known_prints
        write_atomic(path, existing + known_hosts_line(target.key_name, key))
    except OSError as exc:
        raise CLIError(_cannot_write(path, exc)) from None
    elsewhere = sorted({src for src in known.sources.values() if src != str(path)})
    if args.json:
        emit_json(doc | {"still_listed_in": elsewhere})
    else:
        verb = "replaced " + ", ".join(known_prints) + " with" if known_prints else "trusted"
        print(f"{verb} {key.get_algorithm()} {fingerprint} for {target.key_name} ({target.where}) in {path}")
    for src in elsewhere:
        print(f"⚠ {src} still lists the old key for {target.key_name}: OpenSSH itself will keep refusing "
              "until you edit it (ssh-keygen -R)", file=sys.stderr)
    return 0


def _check(args: argparse.Namespace) -> int:
    from ..hosts.probe import check

    profile = load_profile(args.name)
    if profile.is_prometheus:
        return prom_profiles.check(profile, args.json)
    if profile.is_slurm:
        return slurm_profiles.check(profile, args.json)
    result = run_async(check(profile))
    if args.json:
        emit_json(result.to_json())
    elif result.reachable:
        gpus = f"{result.gpu_count} GPU(s)" if result.gpu_count is not None else (result.gpu_note or "GPUs unknown")
        print(f"{profile.name}: reachable in {result.latency_ms:.0f} ms · {result.kernel} · {gpus}")
    else:
        print(f"{profile.name}: unreachable ({result.error_kind}): {result.error}")
    return 0 if result.reachable else 1
