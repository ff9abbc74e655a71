"""A PEP 517 build backend in the standard library only, for the ``cardprogram`` package.

Why not setuptools: ``pip install ./sdk/python`` would then fetch setuptools (and, for older ones,
``wheel``) from a package index into its isolated build environment, and the machines this SDK is
for often reach none. This backend needs nothing (``requires = []``): it zips the package's files
into a wheel, with its metadata from ``pyproject.toml``'s ``[project]`` table and the version from
``cardprogram/_version.py``.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import re
import tarfile
import time
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "cardprogram"
TAG = "py3-none-any"


def _project():
    """The [project] table: strings, lists of strings, and `license = { text = "…" }` (all it uses).

    ``tomllib`` is Python 3.11+; on 3.10 the same values are read by the patterns below
    (sdk/python/tests/test_packaging.py checks that both agree).
    """
    with open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8") as f:
        text = f.read()
    try:
        import tomllib
    except ImportError:
        tomllib = None
    if tomllib is not None:
        return tomllib.loads(text)["project"]
    return _read_project(text)


def _read_project(text):
    section = re.search(r"^\[project\]\s*$(.*?)(?=^\[|\Z)", text, re.M | re.S)
    if section is None:
        raise ValueError("pyproject.toml has no [project] table")
    out = {}
    for m in re.finditer(r'^([A-Za-z][\w-]*)\s*=\s*("(?:[^"\\]|\\.)*"|\[.*?\]|\{.*?\})', section.group(1), re.M | re.S):
        key, raw = m.group(1), m.group(2)
        if raw.startswith('"'):
            out[key] = _string(raw)
        elif raw.startswith("["):
            out[key] = [_string(s) for s in re.findall(r'"(?:[^"\\]|\\.)*"', raw)]
        else:
            out[key] = {k: _string(v) for k, v in re.findall(r'(\w+)\s*=\s*("(?:[^"\\]|\\.)*")', raw)}
    return out


def _string(raw):
    return raw[1:-1].encode("utf-8").decode("unicode_escape").encode("latin-1").decode("utf-8")


def _version():
    with open(os.path.join(ROOT, PACKAGE, "_version.py"), encoding="utf-8") as f:
        m = re.search(r'__version__\s*=\s*"([^"]+)"', f.read())
    if m is None:
        raise ValueError("cardprogram/_version.py has no __version__")
    return m.group(1)


def _metadata():
    project = _project()
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {project['name']}",
        f"Version: {_version()}",
        f"Summary: {project['description']}",
        f"Requires-Python: {project['requires-python']}",
    ]
    if "license" in project:
        lines.append(f"License: {project['license']['text']}")
    for classifier in project.get("classifiers", []):
        lines.append(f"Classifier: {classifier}")
    readme = project.get("readme")
    if readme:
        lines.append("Description-Content-Type: text/markdown")
        with open(os.path.join(ROOT, readme), encoding="utf-8") as f:
            return "\n".join(lines) + "\n\n" + f.read()
    return "\n".join(lines) + "\n"


def _files():
    """The package's files, sorted (a wheel built twice is the same bytes)."""
    out = []
    for directory, dirs, names in os.walk(os.path.join(ROOT, PACKAGE)):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(names):
            if name.endswith((".py", ".typed")):
                path = os.path.join(directory, name)
                out.append(os.path.relpath(path, ROOT).replace(os.sep, "/"))
    return out


def _timestamp():
    return int(os.environ.get("SOURCE_DATE_EPOCH", "315532800"))  # 1980-01-01, zip's first day


def _dist_info():
    return f"{PACKAGE}-{_version()}.dist-info"


def _wheel(wheel_directory, extra):
    """Writes the wheel: the package's files (or, editable, a .pth), its .dist-info, its RECORD."""
    name = f"{PACKAGE}-{_version()}-{TAG}.whl"
    info = _dist_info()
    entries = list(extra)
    entries.append((f"{info}/METADATA", _metadata().encode("utf-8")))
    entries.append((f"{info}/WHEEL", f"Wheel-Version: 1.0\nGenerator: cardprogram-backend\nRoot-Is-Purelib: true\nTag: {TAG}\n".encode()))
    record = []
    for path, data in entries:
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
    record.append(f"{info}/RECORD,,")
    entries.append((f"{info}/RECORD", ("\n".join(record) + "\n").encode()))
    stamp = time.gmtime(_timestamp())[:6]
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as zf:
        for path, data in entries:
            item = zipfile.ZipInfo(path, date_time=stamp)
            item.external_attr = 0o644 << 16
            item.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(item, data)
    return name


def _read(path):
    with open(os.path.join(ROOT, path), "rb") as f:
        return f.read()


# The PEP 517 and PEP 660 hooks.


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    info = os.path.join(metadata_directory, _dist_info())
    os.makedirs(info, exist_ok=True)
    with open(os.path.join(info, "METADATA"), "w", encoding="utf-8") as f:
        f.write(_metadata())
    with open(os.path.join(info, "WHEEL"), "w", encoding="utf-8") as f:
        f.write(f"Wheel-Version: 1.0\nGenerator: cardprogram-backend\nRoot-Is-Purelib: true\nTag: {TAG}\n")
    return _dist_info()


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _wheel(wheel_directory, [(path, _read(path)) for path in _files()])


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    # A .pth file puts this directory on sys.path: the installed package is the source itself.
    return _wheel(wheel_directory, [(f"__editable__.{PACKAGE}.pth", (ROOT + "\n").encode())])


def build_sdist(sdist_directory, config_settings=None):
    base = f"{PACKAGE}-{_version()}"
    name = f"{base}.tar.gz"
    paths = ["pyproject.toml", "README.md", "_build/backend.py", *_files()]
    stamp = _timestamp()
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz", format=tarfile.PAX_FORMAT) as tar:

        def add(path, data):
            item = tarfile.TarInfo(f"{base}/{path}")
            item.size, item.mtime, item.mode = len(data), stamp, 0o644
            tar.addfile(item, io.BytesIO(data))

        add("PKG-INFO", _metadata().encode("utf-8"))
        for path in paths:
            add(path, _read(path))
    return name
