"""The package installs from nothing but Python: its wheel, its sdist, pip offline, Python 3.10 syntax."""

from __future__ import annotations

import ast
import base64
import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import unittest
import zipfile

from .harness import SDK

import cardprogram


def backend():
    spec = importlib.util.spec_from_file_location("cardprogram_backend", SDK / "_build" / "backend.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


class Packaging(unittest.TestCase):
    def setUp(self) -> None:
        self.out = tempfile.mkdtemp(prefix="cardprogram-py-wheel-")
        self.addCleanup(shutil.rmtree, self.out, True)

    def test_the_wheel_holds_every_module_and_imports_from_itself(self):
        name = backend().build_wheel(self.out)
        self.assertEqual(name, f"cardprogram-{cardprogram.__version__}-py3-none-any.whl")
        path = os.path.join(self.out, name)
        with zipfile.ZipFile(path) as wheel:
            names = wheel.namelist()
            sources = sorted(
                os.path.relpath(os.path.join(d, f), SDK).replace(os.sep, "/")
                for d, _, files in os.walk(SDK / "cardprogram")
                for f in files
                if f.endswith((".py", ".typed"))
            )
            self.assertEqual(sorted(n for n in names if n.startswith("cardprogram/")), sources)
            info = f"cardprogram-{cardprogram.__version__}.dist-info"
            metadata = wheel.read(f"{info}/METADATA").decode()
            self.assertIn(f"Version: {cardprogram.__version__}\n", metadata)
            self.assertIn("Requires-Python: >=3.10\n", metadata)
            for line in wheel.read(f"{info}/RECORD").decode().splitlines():
                file, digest, size = line.split(",")
                if digest:
                    data = wheel.read(file)
                    self.assertEqual(digest, "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode())
                    self.assertEqual(int(size), len(data))
        # Imported from the wheel alone (a wheel of pure Python is importable as a zip), elsewhere.
        res = subprocess.run(
            [sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {path!r}); import cardprogram; print(cardprogram.__file__); cardprogram.Client('a', 's', 'http://x')"],
            cwd=self.out, capture_output=True, text=True,
        )
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertIn(name, res.stdout)

    def test_the_sdist_builds_again(self):
        name = backend().build_sdist(self.out)
        with tarfile.open(os.path.join(self.out, name)) as sdist:
            sdist.extractall(self.out, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
        root = os.path.join(self.out, name[: -len(".tar.gz")])
        self.assertTrue(os.path.exists(os.path.join(root, "PKG-INFO")))
        rebuilt = subprocess.run(
            [sys.executable, "-I", "-c", "import sys; sys.path.insert(0, '_build'); import backend; print(backend.build_wheel(sys.argv[1]))", self.out],
            cwd=root, capture_output=True, text=True,
        )
        self.assertEqual(rebuilt.returncode, 0, rebuilt.stderr)

    def test_pip_installs_it_without_an_index(self):
        if subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True).returncode != 0:
            self.skipTest("pip is not installed")
        target = os.path.join(self.out, "site")
        res = subprocess.run(
            [sys.executable, "-m", "pip", "install", "--no-index", "--no-deps", "--disable-pip-version-check", "--target", target, str(SDK)],
            capture_output=True, text=True, timeout=120,
        )
        self.assertEqual(res.returncode, 0, res.stdout + res.stderr)
        self.assertTrue(os.path.exists(os.path.join(target, "cardprogram", "_wire.py")))

    def test_the_project_table_reads_the_same_without_tomllib(self):
        module = backend()
        text = (SDK / "pyproject.toml").read_text(encoding="utf-8")
        try:
            import tomllib
        except ImportError:
            self.skipTest("tomllib is Python 3.11+")
        self.assertEqual(module._read_project(text), tomllib.loads(text)["project"])

    def test_every_module_is_python_3_10(self):
        for directory, _, files in os.walk(SDK / "cardprogram"):
            for f in files:
                if f.endswith(".py"):
                    path = os.path.join(directory, f)
                    with open(path, encoding="utf-8") as source:
                        ast.parse(source.read(), path, feature_version=(3, 10))


if __name__ == "__main__":
    unittest.main()
