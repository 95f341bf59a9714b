"""``site.profile``: a site profile's values placed under a scenario's own keys before validation.

A profile (``twin.profile``, written by ``twin calibrate``) overrides the catalog's values; what the
scenario writes itself overrides the profile. A relative path is read beside the scenario file.
"""

from pathlib import Path
from typing import Any


def resolve_profile_path(data: Any, base: Path, profile: str | None = None) -> Any:
    """``data`` with ``site.profile`` made absolute against ``base`` (or set to ``profile``, a command's
    ``--profile``, relative to the working directory)."""
    if not isinstance(data, dict):
        return data
    site = data.get("site")
    if profile is not None:
        site = dict(site) if isinstance(site, dict) else {}
        site["profile"] = str(Path(profile).resolve())
        return data | {"site": site}
    if isinstance(site, dict) and isinstance(site.get("profile"), str) and not Path(site["profile"]).is_absolute():
        return data | {"site": site | {"profile": str(base / site["profile"])}}
    return data


def with_profile(data: Any) -> Any:
    """``data`` with the values of the profile it names under its own keys (unchanged without one)."""
    site = data.get("site") if isinstance(data, dict) else None
    if not isinstance(site, dict) or not isinstance(site.get("profile"), str):
        return data
    from twin.profile import load_profile      # hashlib and the profile's records: only for a scenario with one

    overlay = load_profile(site["profile"]).overlay()
    out = dict(data)
    for section, values in overlay.items():
        own = out.get(section)
        out[section] = values | own if isinstance(own, dict) else (values if own is None else own)
    return out
