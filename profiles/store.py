"""Reading, writing and listing host profiles on disk."""
from __future__ import annotations

from pathlib import Path

from . import paths
from .atomic import StateFileError, read_toml, write_atomic, write_toml
from .profile import Profile, ProfileError, profile_from_dict

LOCAL = "local"


def _default_local() -> Profile:
    return Profile(name=LOCAL, transport="local", description="this machine")


def ensure_local() -> None:
    """The `local` profile exists from the first start (on a read-only home it is
    built in instead: reading never needs a write)."""
    path = paths.profile_file(LOCAL)
    if not path.exists():
        try:
            save(_default_local())
        except OSError:
            pass


def names() -> list[str]:
    ensure_local()
    return sorted({LOCAL, *(p.stem for p in paths.profiles_dir().glob("*.toml"))})


def exists(name: str) -> bool:
    try:
        return paths.profile_file(name).exists()
    except ValueError:
        return False


def load(name: str) -> Profile:
    """Load and validate one profile; `ProfileError` carries a one-line reason."""
    if name == LOCAL:
        ensure_local()
    try:
        path = paths.profile_file(name)
    except ValueError as exc:
        raise ProfileError(str(exc)) from None
    if not path.exists():
        if name == LOCAL:
            return _default_local()
        raise ProfileError(f"no profile named {name!r} (see `gpudeck profiles list`)")
    try:
        doc = read_toml(path)
    except StateFileError as exc:
        raise ProfileError(str(exc)) from None
    return profile_from_dict(name, doc, path)


def load_all() -> tuple[list[Profile], list[str]]:
    """Every valid profile, plus one error line per profile that failed to load."""
    good: list[Profile] = []
    bad: list[str] = []
    for name in names():
        try:
            good.append(load(name))
        except ProfileError as exc:
            bad.append(str(exc))
    return good, bad


def save(profile: Profile) -> Path:
    path = paths.profile_file(profile.name)
    write_toml(path, profile.to_toml_dict())
    return path


def remove(name: str) -> None:
    if name == LOCAL:
        raise ProfileError("the 'local' profile cannot be removed")
    path = paths.profile_file(name)
    if not path.exists():
        raise ProfileError(f"no profile named {name!r}")
    path.unlink()


def last_used() -> str:
    from .capped_read import FileRefused, read_capped

    marker = paths.config_dir() / "last_profile"
    try:
        name = read_capped(marker, 4096).decode("utf-8", "replace").strip()
    except (OSError, FileRefused):   # a FIFO there must not hold the console's start
        return LOCAL
    return name if name and exists(name) else LOCAL


def set_last_used(name: str) -> None:
    write_atomic(paths.config_dir() / "last_profile", name + "\n")
